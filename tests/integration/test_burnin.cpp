// Burn-in runs of the real binary on a node without GPUs (--expect-gpus 0): passes repeated by
// count and by time, a fault that appears in a later pass, Ctrl-C keeping what was measured,
// the progress lines, bad burn-in flags, and the Prometheus file of a run.
#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

json verdict_of(const TempDir& dir) {
  const json v = parse_json(read_file(dir.file("v.json")), "verdict");
  const auto problems = verdict_shape_problems(v);
  INFO(problems.size() << " shape problems, first: " << (problems.empty() ? "" : problems[0]));
  CHECK(problems.empty());
  return v;
}

}  // namespace

TEST_CASE("burnin: --repeat runs that many passes and keeps each", "[burnin]") {
  TempDir dir;
  const RunResult r =
      run_preflight({"run", "--profile", "burnin", "--checks", "inventory", "--expect-gpus", "0",
                     "--repeat", "3", "--json", dir.file("v.json")},
                    no_gpu_options());
  INFO(describe(r));
  REQUIRE(r.exited());
  CHECK(r.exit_code == 0);
  const json v = verdict_of(dir);
  CHECK(v["verdict"] == "pass");
  CHECK(v["profile"] == "burnin");
  CHECK(v["burnin"]["passes_requested"] == 3);
  CHECK(v["burnin"]["passes_run"] == 3);
  CHECK(v["burnin"]["stopped_by"] == "repeat");
  CHECK(v["burnin"]["reported_pass"] == 3);
  CHECK(v["first_failed_pass"].is_null());
  REQUIRE(v["passes"].size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(v["passes"][i]["index"] == i + 1);
    CHECK(v["passes"][i]["verdict"] == "pass");
    CHECK(v["passes"][i]["checks"][0]["name"] == "inventory");
  }
  // Not a terminal: plain progress lines on stderr, one per check and per pass.
  CHECK_THAT(r.err, Catch::Contains("pass 1/3 started"));
  CHECK_THAT(r.err, Catch::Contains("pass 3/3  inventory  PASS"));
  CHECK_THAT(r.err, Catch::Contains("pass 3/3 PASS"));
  CHECK_THAT(r.err, !Catch::Contains("\r"));  // no bar redrawn into a log file
  CHECK_THAT(r.out, Catch::Contains("Burn-in: 3 passes of 3"));
  CHECK_THAT(r.out, Catch::Contains("every pass healthy"));
}

TEST_CASE("burnin: --duration starts passes until the time is up", "[burnin]") {
  TempDir dir;
  const RunResult r = run_preflight({"run", "--checks", "inventory", "--expect-gpus", "0",
                                     "--duration", "2", "--json", dir.file("v.json")},
                                    no_gpu_options());
  INFO(describe(r));
  REQUIRE(r.exited());
  CHECK(r.exit_code == 0);
  CHECK(r.elapsed_s < 30);
  const json v = verdict_of(dir);
  CHECK(v["burnin"]["stopped_by"] == "duration");
  CHECK(v["burnin"]["duration_requested_s"] == 2.0);
  CHECK(v["burnin"]["passes_requested"].is_null());
  CHECK(v["burnin"]["passes_run"].get<int>() >= 2);
  CHECK(v["duration_s"].get<double>() >= 2.0);
  CHECK(v["passes"].size() == v["burnin"]["passes_run"].get<std::size_t>());
}

TEST_CASE("burnin: a fault from pass 3 fails pass 3, and the verdict says so", "[burnin]") {
  TempDir dir;
  const RunResult r = run_preflight(
      {"run", "--checks", "inventory", "--expect-gpus", "0", "--repeat", "4", "--inject-fault",
       "hang@check=inventory,from-pass=3", "--timeout", "4", "--json", dir.file("v.json")},
      no_gpu_options());
  INFO(describe(r));
  REQUIRE(r.exited());
  CHECK(r.exit_code == 1);
  const json v = verdict_of(dir);
  CHECK(v["verdict"] == "fail");
  CHECK(v["first_failed_pass"] == 3);
  CHECK(v["passes"][0]["verdict"] == "pass");
  CHECK(v["passes"][1]["verdict"] == "pass");
  CHECK(v["passes"][2]["verdict"] == "fail");
  // The hung check cannot be joined, so the burn-in stops there rather than pile up threads.
  CHECK(v["burnin"]["stopped_by"] == "stuck");
  CHECK(v["burnin"]["passes_run"] == 3);
  CHECK(v["burnin"]["reported_pass"] == 3);
  CHECK(v["injected_faults"] == json::array({"hang@check=inventory,from-pass=3"}));
  CHECK(v["reason"].get<std::string>().rfind("injected fault: pass 3/3: ", 0) == 0);
}

TEST_CASE("burnin: a drill skipped in every pass is one warning, not one per pass", "[burnin]") {
  TempDir dir;
  const RunResult r = run_preflight({"run", "--expect-gpus", "0", "--repeat", "3", "--inject-fault",
                                     "hang@check=gemm", "--json", dir.file("v.json")},
                                    no_gpu_options());
  INFO(describe(r));
  REQUIRE(r.exited());
  CHECK(r.exit_code == 0);
  const json v = verdict_of(dir);
  CHECK(v["verdict"] == "warn");
  REQUIRE(v["findings"].size() == 1);
  CHECK(v["findings"][0]["code"] == "INJECTED_FAULT_NOT_EXERCISED");
  CHECK_THAT(v["findings"][0]["message"].get<std::string>(),
             Catch::Contains("gemm was skipped in all 3 passes (no GPU"));
  CHECK(v["first_failed_pass"].is_null());
  REQUIRE(v["passes"].size() == 3);
  for (const json& p : v["passes"]) {
    CHECK(p["verdict"] == "pass");
    CHECK(p["findings"].empty());
  }
  CHECK_THAT(r.out, Catch::Contains("INJECTED_FAULT_NOT_EXERCISED [injected]"));
}

TEST_CASE("burnin: --stop-on-fail ends at the first unhealthy pass", "[burnin]") {
  TempDir dir;
  // No GPU while one is expected: every pass fails, and the first one stops the run.
  const RunResult r =
      run_preflight({"run", "--checks", "inventory", "--expect-gpus", "1", "--repeat", "5",
                     "--stop-on-fail", "--json", dir.file("v.json")},
                    no_gpu_options());
  INFO(describe(r));
  REQUIRE(r.exited());
  CHECK(r.exit_code == 1);
  const json v = verdict_of(dir);
  CHECK(v["burnin"]["stopped_by"] == "failure");
  CHECK(v["burnin"]["passes_run"] == 1);
  CHECK(v["first_failed_pass"] == 1);
}

TEST_CASE("burnin: Ctrl-C keeps the passes measured and the run is not healthy", "[burnin]") {
  TempDir dir;
  Child child = Child::start({preflight_binary(), "run", "--checks", "inventory", "--expect-gpus",
                              "0", "--repeat", "100000", "--json", dir.file("v.json")},
                             no_gpu_options());
  // Two passes finished (each takes a fraction of a second here; a loaded machine gets time).
  REQUIRE(child.wait_for_stderr("pass 2/100000 PASS", 60));
  REQUIRE(child.send_signal(SIGINT));
  const RunResult r = child.wait(30);
  INFO(describe(r));
  REQUIRE(r.exited());
  CHECK(r.exit_code == 1);
  // About 0.1 s idle; a burn-in that ignored the signal would run its 100000 passes.
  CHECK(r.since_signal_s < 10.0);
  const json v = verdict_of(dir);
  CHECK(v["verdict"] == "fail");
  CHECK(v["burnin"]["stopped_by"] == "signal");
  const auto passes = v["passes"].size();
  CHECK(passes >= 2);
  CHECK(v["burnin"]["passes_run"] == passes);
  // Every pass before the last ran to the end and was healthy: what was measured is kept.
  for (std::size_t i = 0; i + 1 < passes; ++i) CHECK(v["passes"][i]["verdict"] == "pass");
  CHECK_THAT(v["reason"].get<std::string>(), Catch::Contains("SIGINT"));
  CHECK(find_finding(v["findings"], "RUN_INTERRUPTED") != nullptr);
}

TEST_CASE("burnin: bad burn-in flags are invalid invocations that write nothing", "[burnin]") {
  TempDir dir;
  const std::vector<std::vector<std::string>> cases = {
      {"--repeat", "0"},
      {"--repeat", "x"},
      {"--duration", "10x"},
      {"--duration", "0"},
      {"--duration", ""},
      {"--stop-on-fail"},
      {"--inject-fault", "hang@check=inventory,from-pass=2"},
      {"--repeat", "2", "--inject-fault", "hang@check=inventory,from-pass=3"},
      {"--prom", ""},
      {"--prom", dir.file("missing/dir/m.prom")},
  };
  for (const auto& extra : cases) {
    std::vector<std::string> args = {"run", "--checks", "inventory",       "--expect-gpus",
                                     "0",   "--json",   dir.file("v.json")};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = run_preflight(args, no_gpu_options());
    INFO(extra[0] << " " << (extra.size() > 1 ? extra[1] : "") << ": " << describe(r));
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("preflight: ", 0) == 0);
    CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
    if (extra[0] == "--prom") CHECK_THAT(r.err, Catch::StartsWith("preflight: --prom"));
    CHECK_FALSE(path_exists(dir.file("v.json")));
  }
}

}  // namespace preflight::test
