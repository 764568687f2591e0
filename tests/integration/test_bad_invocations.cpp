// Invalid invocations: every one exits 2 with one line on stderr starting "preflight: ",
// prints nothing on stdout and leaves an existing verdict file untouched.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

struct BadCase {
  std::string name;
  // "{dir}" is replaced by the case's temporary directory, "{json}" by {dir}/verdict.json.
  std::vector<std::string> args;
  // False where --json itself is the bad part: the existing verdict.json is not named then.
  bool json_untouched = true;
};

const std::vector<BadCase>& cases() {
  static const std::vector<BadCase> table = {
      {"unknown flag", {"run", "--json", "{json}", "--bogus"}},
      {"unknown flag before the subcommand", {"--bogus", "run", "--json", "{json}"}},
      {"unknown subcommand", {"frobnicate", "--json", "{json}"}},
      {"no subcommand", {}},
      {"unexpected positional argument", {"run", "--json", "{json}", "extra"}},
      {"--checks nosuch", {"run", "--json", "{json}", "--checks", "nosuch"}},
      {"--checks without a value", {"run", "--json", "{json}", "--checks"}},
      {"--profile bogus", {"run", "--json", "{json}", "--profile", "bogus"}},
      {"--timeout 0", {"run", "--json", "{json}", "--timeout", "0"}},
      {"--timeout abc", {"run", "--json", "{json}", "--timeout", "abc"}},
      {"--expect-gpus -1", {"run", "--json", "{json}", "--expect-gpus", "-1"}},
      {"--thresholds missing file",
       {"run", "--json", "{json}", "--thresholds", "{dir}/nosuch.json"}},
      {"thresholds file malformed JSON",
       {"run", "--json", "{json}", "--thresholds", "{dir}/malformed.json"}},
      {"thresholds file unknown key",
       {"run", "--json", "{json}", "--thresholds", "{dir}/unknown.json"}},
      {"thresholds file unknown section",
       {"run", "--json", "{json}", "--thresholds", "{dir}/section.json"}},
      {"thresholds file wrong type (string)",
       {"run", "--json", "{json}", "--thresholds", "{dir}/string.json"}},
      {"thresholds file out of range",
       {"run", "--json", "{json}", "--thresholds", "{dir}/range.json"}},
      {"thresholds file negative",
       {"run", "--json", "{json}", "--thresholds", "{dir}/negative.json"}},
      {"thresholds file nested 1000 levels",
       {"run", "--json", "{json}", "--thresholds", "{dir}/deep.json"}},
      {"thresholds file is a directory", {"run", "--json", "{json}", "--thresholds", "{dir}"}},
      {"fault spec without '@'", {"run", "--json", "{json}", "--inject-fault", "mig-on"}},
      {"unknown fault kind", {"run", "--json", "{json}", "--inject-fault", "nosuch@gpu=0"}},
      {"unknown target type", {"run", "--json", "{json}", "--inject-fault", "mig-on@disk=1"}},
      {"target type the kind does not take",
       {"run", "--json", "{json}", "--inject-fault", "mig-on@check=inventory"}},
      {"hang on an unknown check",
       {"run", "--json", "{json}", "--inject-fault", "hang@check=nosuch"}},
      {"fault value out of range",
       {"run", "--json", "{json}", "--inject-fault", "temperature:900@gpu=0"}},
      {"fault word not allowed",
       {"run", "--json", "{json}", "--inject-fault", "throttle:bogus@gpu=0"}},
      {"fault of a check not in the run",
       {"run", "--json", "{json}", "--checks", "inventory", "--inject-fault", "gemm-nan@gpu=0"}},
      {"fault value not whole",
       {"run", "--json", "{json}", "--inject-fault", "gemm-bitflip:2.5@gpu=0"}},
      {"--gemm-dtypes unknown", {"run", "--json", "{json}", "--gemm-dtypes", "int4"}},
      {"--gemm-dtypes empty", {"run", "--json", "{json}", "--gemm-dtypes", ""}},
      {"--gemm-seconds 0", {"run", "--json", "{json}", "--gemm-seconds", "0"}},
      {"--gemm-size not a multiple of 256", {"run", "--json", "{json}", "--gemm-size", "10000"}},
      {"--gemm-memory-mib too small", {"run", "--json", "{json}", "--gemm-memory-mib", "1"}},
      {"--gemm-detectors unknown", {"run", "--json", "{json}", "--gemm-detectors", "magic"}},
      {"gemm option without the gemm check",
       {"run", "--json", "{json}", "--checks", "inventory", "--gemm-seconds", "5"}},
      {"gpu=99 on a node without GPU",
       {"run", "--json", "{json}", "--inject-fault", "mig-on@gpu=99"}},
      {"--json into a nonexistent directory",
       {"run", "--json", "{dir}/nosuch/verdict.json"},
       false},
      {"--json naming a directory", {"run", "--json", "{dir}"}, false},
      {"--json unwritable even for root", {"run", "--json", "/proc/preflight-verdict.json"}, false},
      {"thresholds --sku nosuch", {"thresholds", "--sku", "nosuch"}},
      {"thresholds --thresholds malformed",
       {"thresholds", "--sku", "h100-sxm5-80gb", "--thresholds", "{dir}/malformed.json"}},
      {"judge without a verdict", {"judge"}},
      {"judge a missing file", {"judge", "{dir}/nosuch.json", "--json", "{json}"}},
      {"judge a directory", {"judge", "{dir}", "--json", "{json}"}},
      {"judge a file that is not JSON", {"judge", "{dir}/malformed.json", "--json", "{json}"}},
      {"judge a document that is not a verdict",
       {"judge", "{dir}/unknown.json", "--json", "{json}"}},
      {"judge a verdict nested 1000 levels", {"judge", "{dir}/deep.json", "--json", "{json}"}},
      {"judge --sku nosuch", {"judge", "{json}", "--sku", "nosuch"}},
      {"judge --thresholds malformed", {"judge", "{json}", "--thresholds", "{dir}/malformed.json"}},
      {"judge --recorded-thresholds with --sku",
       {"judge", "{json}", "--recorded-thresholds", "--sku", "h100-sxm5-80gb"}},
      {"judge --recorded-thresholds of a verdict that records none",
       {"judge", "{json}", "--recorded-thresholds"}},
      {"judge two verdicts to stdout", {"judge", "{json}", "{json}", "--json", "-"}},
      {"judge two verdicts into a file", {"judge", "{json}", "{json}", "--json", "{json}"}},
  };
  return table;
}

std::string substitute(std::string arg, const TempDir& dir) {
  const auto replace = [&](const std::string& from, const std::string& to) {
    for (auto pos = arg.find(from); pos != std::string::npos;
         pos = arg.find(from, pos + to.size())) {
      arg.replace(pos, from.size(), to);
    }
  };
  replace("{json}", dir.file("verdict.json"));
  replace("{dir}", dir.path());
  return arg;
}

void write_bad_threshold_files(const TempDir& dir) {
  write_file(dir.file("malformed.json"), "{\"inventory\": {\"temperature_warn_c\": 80,\n");
  write_file(dir.file("unknown.json"), R"({"inventory": {"no_such_threshold": 1}})");
  write_file(dir.file("section.json"), R"({"no_such_section": {"x": 1}})");
  write_file(dir.file("string.json"), R"({"inventory": {"temperature_warn_c": "80"}})");
  write_file(dir.file("range.json"), R"({"inventory": {"temperature_fail_c": 900}})");
  write_file(dir.file("negative.json"), R"({"inventory": {"foreign_memory_fail_mib": -5}})");
  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += "{\"inventory\":";
  deep += "1";
  for (int i = 0; i < 1000; ++i) deep += "}";
  write_file(dir.file("deep.json"), deep);
}

const char* const kOldVerdict = "{\"schema\": \"preflight.verdict/1\", \"verdict\": \"pass\"}\n";

}  // namespace

TEST_CASE("bad invocation: exit 2, one line on stderr, nothing on stdout, verdict untouched",
          "[cli][bad]") {
  REQUIRE(cases().size() >= 20);
  const auto index = GENERATE(range(std::size_t{0}, cases().size()));
  const BadCase& c = cases()[index];
  INFO("case: " << c.name);

  TempDir dir;
  write_bad_threshold_files(dir);
  const std::string verdict = dir.file("verdict.json");
  write_file(verdict, kOldVerdict);
  const auto before = dir.entries();

  std::vector<std::string> args;
  for (const auto& a : c.args) args.push_back(substitute(a, dir));
  std::string shown;
  for (const auto& a : args) shown += " '" + a + "'";
  INFO("preflight" << shown);

  const RunResult r = run_preflight(args, no_gpu_options(60));
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("preflight: ", 0) == 0);
  CHECK(r.err.size() > std::string("preflight: \n").size());
  CHECK(r.err.find('\n') == r.err.size() - 1);  // exactly one line, newline-terminated

  if (c.json_untouched) {
    CHECK(read_file(verdict) == kOldVerdict);
  }
  // Nothing created or left behind (no verdict, no temporary file) in any case.
  CHECK(dir.entries() == before);
  CHECK_FALSE(path_exists(dir.file("nosuch")));
}

}  // namespace preflight::test
