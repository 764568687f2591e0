#include "support/subprocess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace preflight::test {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::runtime_error sys_error(const std::string& what, int err = errno) {
  return std::runtime_error(what + ": " + std::strerror(err));
}

std::string temp_base() {
  const char* dir = std::getenv("TMPDIR");
  return (dir != nullptr && *dir != '\0') ? dir : "/tmp";
}

// An unlinked temporary file: only the descriptor keeps it alive.
int anonymous_file() {
  std::string name = temp_base() + "/preflight-test-out-XXXXXX";
  std::vector<char> buf(name.begin(), name.end());
  buf.push_back('\0');
  const int fd = mkostemp(buf.data(), O_CLOEXEC);
  if (fd < 0) throw sys_error("mkostemp " + name);
  unlink(buf.data());
  return fd;
}

std::string read_all_from_start(int fd) {
  std::string text;
  if (fd < 0) return text;
  if (lseek(fd, 0, SEEK_SET) < 0) throw sys_error("lseek");
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw sys_error("read");
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

std::vector<std::string> child_environment(const RunOptions& options) {
  std::set<std::string> replaced(options.unset_env.begin(), options.unset_env.end());
  for (const auto& [key, value] : options.env) replaced.insert(key);
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    if (replaced.count(key) == 0) env.push_back(entry);
  }
  for (const auto& [key, value] : options.env) env.push_back(key + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::string RunResult::describe() const {
  std::ostringstream os;
  if (timed_out) {
    os << "timed out and killed";
  } else if (term_signal != 0) {
    os << "ended by signal " << term_signal << " (" << strsignal(term_signal) << ")";
  } else {
    os << "exit " << exit_code;
  }
  os << " after " << elapsed_s << " s";
  return os.str();
}

Child Child::start(const std::vector<std::string>& argv, const RunOptions& options) {
  if (argv.empty()) throw std::invalid_argument("Child::start: empty argv");
  Child child;
  child.out_fd_ = anonymous_file();
  child.err_fd_ = anonymous_file();

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, child.out_fd_, 1);
  posix_spawn_file_actions_adddup2(&actions, child.err_fd_, 2);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());

  // The child starts with no signal blocked and the usual dispositions, whatever the test
  // framework installed in this process.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD}) {
    sigaddset(&defaults, s);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args = argv;
  std::vector<std::string> env = child_environment(options);
  std::vector<char*> c_args = c_strings(args);
  std::vector<char*> c_env = c_strings(env);

  child.started_ = Clock::now();
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0].c_str(), &actions, &attr, c_args.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw sys_error("posix_spawn " + args[0], rc);
  child.pid_ = pid;
  return child;
}

Child::Child(Child&& other) noexcept {
  *this = std::move(other);
}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    reset();
    pid_ = std::exchange(other.pid_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    err_fd_ = std::exchange(other.err_fd_, -1);
    started_ = other.started_;
    signalled_ = other.signalled_;
  }
  return *this;
}

Child::~Child() {
  reset();
}

void Child::reset() noexcept {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
  out_fd_ = err_fd_ = -1;
}

bool Child::send_signal(int signo) {
  if (pid_ <= 0) return false;
  signalled_ = Clock::now();
  return kill(pid_, signo) == 0;
}

bool Child::wait_for_stderr(const std::string& text, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    // The file keeps everything written; reading it from the start does not disturb wait().
    std::string err;
    char buf[65536];
    for (off_t at = 0;;) {
      const ssize_t n = pread(err_fd_, buf, sizeof buf, at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      err.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
    if (err.find(text) != std::string::npos) return true;
    // WNOWAIT: only look whether it ended; wait() reaps it and collects its output.
    siginfo_t info{};
    const bool ended =
        waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid_;
    if (ended || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

RunResult Child::wait(double timeout_s) {
  if (pid_ <= 0) throw std::logic_error("Child::wait: no child to wait for");
  RunResult result;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, timeout_s)));
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (done < 0 && errno != EINTR) throw sys_error("waitpid");
    if (Clock::now() >= deadline) {
      result.timed_out = true;
      kill(pid_, SIGKILL);
      while (waitpid(pid_, &status, 0) < 0) {
        if (errno != EINTR) throw sys_error("waitpid");
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  result.elapsed_s = seconds_since(started_);
  if (signalled_) result.since_signal_s = seconds_since(*signalled_);
  pid_ = -1;
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  result.out = read_all_from_start(out_fd_);
  result.err = read_all_from_start(err_fd_);
  return result;
}

RunResult run_process(const std::vector<std::string>& argv, const RunOptions& options) {
  Child child = Child::start(argv, options);
  return child.wait(options.timeout_s);
}

std::string built_program(const char* env, const std::string& compiled) {
  const char* value = std::getenv(env);
  return (value != nullptr && *value != '\0') ? value : compiled;
}

std::string preflight_binary() {
#ifdef PREFLIGHT_BINARY
  return built_program("PREFLIGHT_TEST_BINARY", PREFLIGHT_BINARY);
#else
  throw std::logic_error("PREFLIGHT_BINARY is not defined for this test target");
#endif
}

RunResult run_preflight(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv{preflight_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, options);
}

RunOptions no_gpu_options(double timeout_s) {
  RunOptions options;
  options.env = {{"PREFLIGHT_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"},
                 {"CUDA_VISIBLE_DEVICES", ""}};
  options.timeout_s = timeout_s;
  return options;
}

TempDir::TempDir() {
  std::string pattern = temp_base() + "/preflight-test-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) throw sys_error("mkdtemp " + pattern);
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::file(const std::string& name) const {
  return path_ + "/" + name;
}

std::vector<std::string> TempDir::entries() const {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path_)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw sys_error("cannot open " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read " + path);
  return text.str();
}

void write_file(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw sys_error("cannot create " + path);
  out << contents;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path);
}

unsigned file_mode(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw sys_error("stat " + path);
  return static_cast<unsigned>(st.st_mode & 07777);
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

namespace {

using nlohmann::json;

// The verdict's shape: an object lists its keys, a one-element array describes every element,
// a string names the type: "string", "number", "integer", "boolean", "number|null",
// "numbers" (an object whose values are numbers or null) or "enum:a|b|c" (one of those strings).
const json& verdict_shape() {
  static const json finding = {{"code", "string"},           {"severity", "enum:info|warn|fail"},
                               {"entity", "string"},         {"message", "string"},
                               {"value", "number|null"},     {"unit", "string"},
                               {"threshold", "number|null"}, {"remediation", "string"},
                               {"injected", "boolean"},      {"judged", "boolean"}};
  static const json check = {{"name", "string"},
                             {"status", "enum:pass|warn|fail|skip|error"},
                             {"duration_s", "number"},
                             {"summary", "string"},
                             {"skip_reason", "string"},
                             {"findings", json::array({finding})},
                             {"metrics", "numbers"},
                             {"matrices", json::array({{{"name", "string"},
                                                        {"unit", "string"},
                                                        {"labels", json::array({"string"})},
                                                        {"values", "matrix"}}})},
                             {"readings", "object|null"}};
  static const json shape = {
      {"schema", "enum:preflight.verdict/1"},
      {"tool", {{"name", "string"}, {"version", "string"}, {"git", "string"}}},
      {"host", "string"},
      {"started_at", "string"},
      {"duration_s", "number"},
      {"profile", "string"},
      {"argv", json::array({"string"})},
      {"system",
       {{"driver_version", "string"},
        {"cuda_driver", "string"},
        {"cuda_runtime", "string"},
        {"nccl", "string"},
        {"gpus", json::array({{{"index", "integer"},
                               {"name", "string"},
                               {"uuid", "string"},
                               {"pci_bus_id", "string"},
                               {"serial", "string"}}})}}},
      {"verdict", "enum:pass|warn|fail"},
      {"exit_code", "integer"},
      {"reason", "string"},
      {"injected_faults", json::array({"string"})},
      {"findings", json::array({finding})},
      {"checks", json::array({check})},
      {"burnin", "object|null"},
      {"passes", json::array({{{"index", "integer"},
                               {"started_at", "string"},
                               {"duration_s", "number"},
                               {"verdict", "enum:pass|warn|fail"},
                               {"exit_code", "integer"},
                               {"reason", "string"},
                               {"findings", json::array({finding})},
                               {"checks", json::array({check})}}})},
      {"first_failed_pass", "integer|null"},
      {"thresholds", "object|null"},
      {"rejudged", "object|null"}};
  return shape;
}

bool has_type(const json& value, const std::string& type) {
  if (type == "string") return value.is_string();
  if (type == "number") return value.is_number();
  if (type == "integer") return value.is_number_integer();
  if (type == "boolean") return value.is_boolean();
  if (type == "number|null") return value.is_number() || value.is_null();
  if (type == "integer|null") return value.is_number_integer() || value.is_null();
  if (type == "object|null") return value.is_object() || value.is_null();
  if (type == "numbers") {
    if (!value.is_object()) return false;
    for (const auto& item : value) {
      if (!item.is_number() && !item.is_null()) return false;
    }
    return true;
  }
  if (type == "matrix") {  // an array of rows, each an array of numbers or nulls
    if (!value.is_array()) return false;
    for (const auto& row : value) {
      if (!row.is_array()) return false;
      for (const auto& cell : row) {
        if (!cell.is_number() && !cell.is_null()) return false;
      }
    }
    return true;
  }
  if (type.rfind("enum:", 0) == 0) {
    if (!value.is_string()) return false;
    const std::string allowed = "|" + type.substr(5) + "|";
    return allowed.find("|" + value.get<std::string>() + "|") != std::string::npos;
  }
  return false;
}

void check_shape(const json& value, const json& shape, const std::string& path,
                 std::vector<std::string>& problems) {
  const std::string where = path.empty() ? "top level" : path;
  if (shape.is_string()) {
    if (!has_type(value, shape.get<std::string>())) {
      problems.push_back(where + ": expected " + shape.get<std::string>() + ", got " +
                         value.dump());
    }
  } else if (shape.is_array()) {
    if (!value.is_array()) {
      problems.push_back(where + ": expected an array, got " + value.type_name());
      return;
    }
    for (std::size_t i = 0; i < value.size(); ++i) {
      check_shape(value[i], shape[0], path + "[" + std::to_string(i) + "]", problems);
    }
  } else if (!value.is_object()) {
    problems.push_back(where + ": expected an object, got " + value.type_name());
  } else {
    for (const auto& [key, member_shape] : shape.items()) {
      const std::string member = path.empty() ? key : path + "." + key;
      if (!value.contains(key)) {
        problems.push_back(member + ": missing");
      } else {
        check_shape(value.at(key), member_shape, member, problems);
      }
    }
  }
}

}  // namespace

std::vector<std::string> verdict_shape_problems(const json& verdict) {
  std::vector<std::string> problems;
  check_shape(verdict, verdict_shape(), "", problems);
  // A repeated run's block (null for a single pass): docs/burnin.md.
  if (verdict.is_object() && verdict.contains("burnin") && verdict["burnin"].is_object()) {
    static const json burnin = {{"passes_requested", "integer|null"},
                                {"duration_requested_s", "number|null"},
                                {"passes_run", "integer"},
                                {"stopped_by", "enum:repeat|duration|failure|signal|stuck"},
                                {"reported_pass", "integer"}};
    check_shape(verdict["burnin"], burnin, "burnin", problems);
  }
  return problems;
}

nlohmann::json parse_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    const std::string head = text.size() > 2000 ? text.substr(0, 2000) + "..." : text;
    throw std::runtime_error(what + " is not valid JSON (" + e.what() + "):\n" + head);
  }
}

const nlohmann::json* find_check(const nlohmann::json& verdict, const std::string& name) {
  if (!verdict.is_object() || !verdict.contains("checks") || !verdict["checks"].is_array()) {
    return nullptr;
  }
  for (const auto& c : verdict["checks"]) {
    if (c.is_object() && c.value("name", "") == name) return &c;
  }
  return nullptr;
}

const nlohmann::json* find_finding(const nlohmann::json& findings, const std::string& code,
                                   const std::string& entity) {
  if (!findings.is_array()) return nullptr;
  for (const auto& f : findings) {
    if (!f.is_object() || f.value("code", "") != code) continue;
    if (!entity.empty() && f.value("entity", "") != entity) continue;
    return &f;
  }
  return nullptr;
}

}  // namespace preflight::test
