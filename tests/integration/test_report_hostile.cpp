// `preflight report` (and `preflight judge`, which reads the same files) on input that is not a
// verdict file at all or is built to hurt: a FIFO nobody writes, /dev/zero, a directory, a
// document nested 60000 levels deep, a number beyond a double. Each exits 2 within a second
// with one line naming the file (docs/report.md#limits). Before the bounds, the FIFO blocked
// forever, /dev/zero grew until bad_alloc, the deep document crashed --format tsv (SIGSEGV) and
// 1e400 was an internal error (exit 3). And a verdict with many findings renders its page
// capped, with a line saying how many rows were left out.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

// The bounded read refuses at once; a second is far above that even with every core busy, and
// the 10 s wait only bounds a test that would otherwise hang.
constexpr double kRefusedWithin = 1.0;
// Stdin is refused only after 64 MiB have been read and counted: work that a busy machine slows
// (1.6 s measured with stress-ng on both cores, against 0.13 s idle). The endless /dev/zero
// already proves the read stops at the limit; this bound only says it stops soon after.
constexpr double kStdinRefusedWithin = 5.0;
constexpr double kWaitAtMost = 10.0;

struct HostileInput {
  std::string name;
  std::string path;     // "{dir}/..." inside the case's directory, or a system path
  std::string problem;  // part of the one line on stderr
};

const std::vector<HostileInput>& inputs() {
  static const std::vector<HostileInput> table = {
      {"a FIFO nobody writes", "{dir}/input.fifo", "not a regular file"},
      {"/dev/zero", "/dev/zero", "not a regular file"},
      {"a directory", "{dir}", "is a directory"},
      {"nesting 60000 levels deep", "{dir}/deep.json", "nesting deeper than 64 levels"},
      {"a number beyond a double", "{dir}/overflow.json", "number overflow"},
  };
  return table;
}

std::string in_dir(const std::string& path, const TempDir& dir) {
  const std::string key = "{dir}";
  return path.compare(0, key.size(), key) == 0 ? dir.path() + path.substr(key.size()) : path;
}

void write_hostile_inputs(const TempDir& dir) {
  REQUIRE(::mkfifo(dir.file("input.fifo").c_str(), 0600) == 0);
  write_file(dir.file("deep.json"), R"({"schema":"preflight.verdict/1","duration_s":)" +
                                        std::string(60000, '[') + std::string(60000, ']') + "}");
  write_file(dir.file("overflow.json"), R"({"schema":"preflight.verdict/1","duration_s":1e400})");
}

// One line on stderr starting "preflight: ", nothing on stdout.
void check_one_line(const RunResult& r) {
  CHECK(r.out.empty());
  CHECK(r.err.rfind("preflight: ", 0) == 0);
  CHECK(!r.err.empty());
  CHECK(r.err.find('\n') == r.err.size() - 1);
}

}  // namespace

TEST_CASE("report hostile: report, report --format tsv and judge refuse at once, naming the file",
          "[report][bad]") {
  const auto input = GENERATE(range(std::size_t{0}, inputs().size()));
  const auto command = GENERATE(as<std::string>{}, "report", "report tsv", "judge");
  const HostileInput& in = inputs()[input];
  INFO("input: " << in.name << "; command: " << command);

  TempDir dir;
  write_hostile_inputs(dir);
  const std::string path = in_dir(in.path, dir);
  const std::string output = dir.file("out.html");
  std::vector<std::string> args;
  if (command == "report") args = {"report", path, "--output", output};
  if (command == "report tsv") args = {"report", "--format", "tsv", path};
  if (command == "judge") args = {"judge", path};

  const RunResult r = run_preflight(args, no_gpu_options(kWaitAtMost));
  INFO(r.describe() << "\nstdout:\n" << r.out.substr(0, 2000) << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 2);
  CHECK(r.elapsed_s < kRefusedWithin);
  check_one_line(r);
  CHECK(r.err.find(path.substr(0, 80)) != std::string::npos);  // messages cut names at 80
  CHECK(r.err.find(in.problem) != std::string::npos);
  CHECK_FALSE(path_exists(output));
}

TEST_CASE("report hostile: stdin is read up to the size limit, never to its end", "[report][bad]") {
  // `report -` with a stdin that never ends stops one buffer past 64 MiB.
  const RunResult r =
      run_process({"/bin/sh", "-c", "exec \"$0\" report - </dev/zero", preflight_binary()},
                  no_gpu_options(kWaitAtMost));
  INFO(r.describe() << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 2);
  CHECK(r.elapsed_s < kStdinRefusedWithin);
  check_one_line(r);
  CHECK(r.err.find("stdin: larger than 64 MiB") != std::string::npos);
}

TEST_CASE("report hostile: a verdict with 200000 findings renders capped, saying so", "[report]") {
  TempDir dir;
  std::string text = R"({"schema": "preflight.verdict/1", "host": "gpu-a017", "verdict": "fail",
                         "exit_code": 1, "findings": [)";
  for (int i = 0; i < 200000; ++i) {
    text += R"({"severity": "info", "code": "C)" + std::to_string(i) + R"(", "entity": "gpu0"},)";
  }
  text += R"({"severity": "fail", "code": "THE_FAILURE", "entity": "gpu1"}]})";
  const std::string verdict = dir.file("large.json");
  write_file(verdict, text);
  const std::string page = dir.file("large.html");

  const RunResult r = run_preflight({"report", verdict, "--output", page}, no_gpu_options(150));
  INFO(r.describe() << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 0);
  CHECK(r.elapsed_s < 120.0);  // margin for sanitizer builds on a loaded machine
  const std::string html = read_file(page);
  CHECK(html.size() < std::size_t{2} << 20);
  CHECK(html.find("199001 more not shown") != std::string::npos);
  CHECK(html.find("THE_FAILURE") != std::string::npos);  // worst first, so within the cap
  CHECK(html.find("</html>") != std::string::npos);

  const RunResult tsv = run_preflight({"report", "--format", "tsv", verdict}, no_gpu_options(60));
  REQUIRE(tsv.exited());
  CHECK(tsv.exit_code == 0);
  CHECK(tsv.out.find("verdict\tfail\n") != std::string::npos);
}

}  // namespace preflight::test
