#pragma once
// Test support for the integration and GPU tests: run the preflight binary as a user would
// (argv, environment, captured stdout/stderr, wall-clock timeout, signals), temporary
// directories that clean up after themselves, and small file helpers.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace preflight::test {

// Variables to set (or override) in the child's environment. An empty value is set as
// empty ("CUDA_VISIBLE_DEVICES="), not removed.
using EnvVars = std::vector<std::pair<std::string, std::string>>;

struct RunOptions {
  EnvVars env;                         // set or override
  std::vector<std::string> unset_env;  // remove from the inherited environment
  double timeout_s = 60.0;             // wall clock; then SIGKILL and timed_out = true
  std::string cwd;                     // empty: the test's working directory
};

struct RunResult {
  int exit_code = -1;      // exit status when the child exited; -1 when a signal ended it
  int term_signal = 0;     // the signal that ended the child; 0 when it exited
  bool timed_out = false;  // killed by the helper after RunOptions::timeout_s
  double elapsed_s = 0.0;  // from start to reaping
  // Seconds from Child::send_signal to reaping; negative when no signal was sent.
  double since_signal_s = -1.0;
  std::string out;  // everything the child wrote to stdout
  std::string err;  // everything the child wrote to stderr

  bool exited() const { return term_signal == 0 && !timed_out; }
  // One line for failure messages: "exit 2 after 0.05 s" / "signal 9 (timed out) ...".
  std::string describe() const;
};

// A started child process. Output goes to unlinked temporary files, so a child writing a lot
// never blocks on a full pipe. Destroying a Child that was not waited for kills and reaps it.
class Child {
 public:
  static Child start(const std::vector<std::string>& argv, const RunOptions& options = {});
  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  // Sends the signal now (records the time for RunResult::since_signal_s). False if the child
  // has already been reaped or kill() failed.
  bool send_signal(int signo);
  // Waits up to timeout_s (from now) for the child to end; SIGKILLs it after that. Collects
  // stdout and stderr. Call once.
  RunResult wait(double timeout_s);
  // Polls the child's stderr, as written so far, until it contains `text`: true when it does
  // within timeout_s, false when the time ran out or the child ended without writing it.
  bool wait_for_stderr(const std::string& text, double timeout_s);

 private:
  Child() = default;
  void reset() noexcept;

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::chrono::steady_clock::time_point started_;
  std::optional<std::chrono::steady_clock::time_point> signalled_;
};

// Starts the child and waits for it under options.timeout_s.
RunResult run_process(const std::vector<std::string>& argv, const RunOptions& options = {});

// A program of the build under test: the path in the environment variable `env` where it is
// set and not empty, else `compiled` (the build folder's path, compiled in). A build carried to
// another machine (the GPU acceptance kit's --build-dir) lands in another folder; the kit names
// its binaries this way.
std::string built_program(const char* env, const std::string& compiled);

// The preflight binary under test (PREFLIGHT_TEST_BINARY, else PREFLIGHT_BINARY) with these
// arguments.
std::string preflight_binary();
RunResult run_preflight(const std::vector<std::string>& args, const RunOptions& options = {});

// Options that make any machine look like one without a GPU or driver (also a GPU machine):
// NVML cannot be loaded and CUDA sees no device.
RunOptions no_gpu_options(double timeout_s = 60.0);

// What a failed expectation on a run shows: how it ended, then all it wrote.
inline std::string describe(const RunResult& r) {
  return r.describe() + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// preflight with these arguments on a machine made to look like one without a GPU.
inline RunResult preflight(const std::vector<std::string>& args) {
  return run_preflight(args, no_gpu_options());
}

// The items one to a line, each ended by a newline: a file of names as the binary reads one.
inline std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += s + "\n";
  return out;
}

// A fresh directory from mkdtemp, removed with everything in it when this object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name
  std::string file(const std::string& name) const;
  // Names of the entries in the directory (not recursive), sorted.
  std::vector<std::string> entries() const;

 private:
  std::string path_;
};

// Whole file as bytes; throws std::runtime_error when it cannot be read.
std::string read_file(const std::string& path);
// Creates or truncates; throws std::runtime_error on failure.
void write_file(const std::string& path, const std::string& contents);
// The permission bits (st_mode & 07777); throws when the file cannot be stat'ed.
unsigned file_mode(const std::string& path);
bool path_exists(const std::string& path);

// Parses JSON text; throws std::runtime_error naming `what` and quoting the start of the text.
nlohmann::json parse_json(const std::string& text, const std::string& what);

// Problems with the shape of a verdict document (schema "preflight.verdict/1": every key
// present with the right JSON type); empty when it is well-formed.
std::vector<std::string> verdict_shape_problems(const nlohmann::json& verdict);

// The check of this name in verdict["checks"], or nullptr.
const nlohmann::json* find_check(const nlohmann::json& verdict, const std::string& name);
// Whether findings (an array) holds one with this code (and entity, when given).
const nlohmann::json* find_finding(const nlohmann::json& findings, const std::string& code,
                                   const std::string& entity = {});

}  // namespace preflight::test
