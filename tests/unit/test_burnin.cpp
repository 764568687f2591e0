// Burn-in rules: durations, when to stop, how passes become one verdict, the ETA, the progress
// line, and fault specs that start in a later pass.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "checks/gemm/gemm_findings.hpp"
#include "checks/inventory/inventory_findings.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/errors.hpp"
#include "preflight/faults.hpp"
#include "report/report.hpp"
#include "run/burnin.hpp"
#include "run/progress.hpp"

using namespace preflight;

namespace {

Verdict pass_verdict(const std::string& started_at, Status status, double duration_s = 10) {
  Verdict v;
  v.host = "node01";
  v.profile = "burnin";
  v.started_at = started_at;
  v.duration_s = duration_s;
  CheckResult c;
  c.name = "gemm";
  if (status == Status::fail) {
    c.findings.push_back(
        make_finding(gemm_findings(), "GEMM_CHECKSUM_MISMATCH", "gpu3", "1 product wrong"));
  } else if (status == Status::warn) {
    c.findings.push_back(make_finding(inventory_findings(), "TEMPERATURE_HIGH", "gpu1", "79 C"));
  }
  c.status = status_from_findings(c.findings);
  v.checks.push_back(c);
  aggregate(v, false);
  return v;
}

}  // namespace

TEST_CASE("burnin: durations in seconds, minutes, hours and days") {
  CHECK(parse_duration("90", "--duration") == 90);
  CHECK(parse_duration("90s", "--duration") == 90);
  CHECK(parse_duration("45m", "--duration") == 2700);
  CHECK(parse_duration("1.5h", "--duration") == 5400);
  CHECK(parse_duration("2d", "--duration") == 172800);
  for (const char* bad : {"", "m", "10x", "-5", "0", "1e400", "31d", "5 m", "nan"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_duration(bad, "--duration"), InvalidInput);
  }
  CHECK_THROWS_WITH(parse_duration("10x", "--duration"), Catch::Contains("--duration: '10x'"));
}

TEST_CASE("burnin: a plain run is one pass; --repeat and --duration bound the passes") {
  BurninRequest plain;
  CHECK(burnin_stop(plain, {1, 5, false, false, false}) == std::optional<std::string>("repeat"));

  BurninRequest three;
  three.repeat = 3;
  CHECK_FALSE(burnin_stop(three, {2, 20, false, false, false}));
  CHECK(burnin_stop(three, {3, 30, false, false, false}) == std::optional<std::string>("repeat"));
  // A failing pass does not stop a burn-in unless asked: later passes show whether it repeats.
  CHECK_FALSE(burnin_stop(three, {1, 10, true, false, false}));
  three.stop_on_fail = true;
  CHECK(burnin_stop(three, {1, 10, true, false, false}) == std::optional<std::string>("failure"));

  BurninRequest timed;
  timed.duration_s = 60;
  CHECK_FALSE(burnin_stop(timed, {5, 59.9, false, false, false}));
  CHECK(burnin_stop(timed, {6, 60.0, false, false, false}) ==
        std::optional<std::string>("duration"));

  BurninRequest both;
  both.repeat = 100;
  both.duration_s = 60;
  CHECK(burnin_stop(both, {7, 61, false, false, false}) == std::optional<std::string>("duration"));
  // A signal or a stuck check ends the run whatever was asked.
  CHECK(burnin_stop(both, {1, 1, false, true, false}) == std::optional<std::string>("signal"));
  CHECK(burnin_stop(both, {1, 1, true, false, true}) == std::optional<std::string>("stuck"));
}

TEST_CASE("burnin: the verdict reports the first failing pass and keeps every pass") {
  const std::vector<Verdict> passes = {pass_verdict("2026-11-25T01:00:00Z", Status::pass),
                                       pass_verdict("2026-11-25T01:00:10Z", Status::warn),
                                       pass_verdict("2026-11-25T01:00:20Z", Status::fail),
                                       pass_verdict("2026-11-25T01:00:30Z", Status::fail),
                                       pass_verdict("2026-11-25T01:00:40Z", Status::pass)};
  BurninRequest request;
  request.repeat = 5;
  const Verdict v = combine_passes(passes, request, "repeat", 50.5, false);
  CHECK(v.verdict == Status::fail);
  CHECK(v.exit_code == kExitUnhealthy);
  REQUIRE(v.burnin);
  CHECK(v.burnin->reported_pass == 3);
  CHECK(v.burnin->passes_run == 5);
  CHECK(v.burnin->passes_requested == 5);
  CHECK(v.burnin->stopped_by == "repeat");
  CHECK(v.first_failed_pass == 3);
  CHECK(v.reason == "pass 3/5: gemm: gpu3 GEMM_CHECKSUM_MISMATCH 1 product wrong");
  CHECK(v.started_at == "2026-11-25T01:00:00Z");
  CHECK(v.duration_s == 50.5);
  REQUIRE(v.passes.size() == 5);
  CHECK(v.passes[1].verdict == Status::warn);
  CHECK(v.passes[3].index == 4);
  CHECK(v.passes[4].started_at == "2026-11-25T01:00:40Z");

  const auto j = nlohmann::json::parse(verdict_to_json_text(v));
  CHECK(j["first_failed_pass"] == 3);
  CHECK(j["burnin"]["reported_pass"] == 3);
  CHECK(j["burnin"]["duration_requested_s"].is_null());
  CHECK(j["passes"].size() == 5);
  CHECK(j["passes"][2]["checks"][0]["findings"][0]["code"] == "GEMM_CHECKSUM_MISMATCH");
  CHECK(j["passes"][2]["exit_code"] == 1);

  const std::string table = verdict_to_text(v, {});
  CHECK_THAT(table, Catch::Contains("Burn-in: 5 passes of 5"));
  CHECK_THAT(table, Catch::Contains("2 unhealthy (3, 4), first failed: pass 3"));
}

TEST_CASE("burnin: a warning pass is reported when none failed; strict makes it the failure") {
  const std::vector<Verdict> passes = {pass_verdict("t1", Status::pass),
                                       pass_verdict("t2", Status::warn),
                                       pass_verdict("t3", Status::pass)};
  BurninRequest request;
  request.duration_s = 30;
  const Verdict lenient = combine_passes(passes, request, "duration", 30, false);
  CHECK(lenient.verdict == Status::warn);
  CHECK(lenient.exit_code == kExitHealthy);
  CHECK(lenient.burnin->reported_pass == 2);
  CHECK_FALSE(lenient.first_failed_pass);
  CHECK(lenient.reason.rfind("pass 2/3: ", 0) == 0);

  std::vector<Verdict> strict_passes = passes;
  for (auto& p : strict_passes) aggregate(p, true);
  const Verdict strict = combine_passes(strict_passes, request, "duration", 30, true);
  CHECK(strict.exit_code == kExitUnhealthy);
  CHECK(strict.first_failed_pass == 2);
}

TEST_CASE("burnin: all passes healthy reports the last; a signal between passes still fails") {
  const std::vector<Verdict> passes = {pass_verdict("t1", Status::pass),
                                       pass_verdict("t2", Status::pass)};
  BurninRequest request;
  request.repeat = 10;
  const Verdict ok = combine_passes(passes, request, "repeat", 20, false);
  CHECK(ok.verdict == Status::pass);
  CHECK(ok.reason.empty());
  CHECK(ok.burnin->reported_pass == 2);

  const Verdict stopped = combine_passes(passes, request, "signal", 20, false, "SIGINT");
  CHECK(stopped.verdict == Status::fail);
  CHECK(stopped.exit_code == kExitUnhealthy);
  REQUIRE(stopped.findings.size() == 1);
  CHECK(stopped.findings[0].code == "RUN_INTERRUPTED");
  CHECK(stopped.reason ==
        "pass 2/2: RUN_INTERRUPTED burn-in stopped by SIGINT after 2 passes of 10");
  CHECK_FALSE(stopped.first_failed_pass);  // no pass failed; the run as a whole was cut short
}

TEST_CASE("burnin: the ETA from the plan's budgets, then from the mean pass") {
  EtaInput in;
  in.pass = 1;
  in.pass_budget_s = 100;
  in.repeat = 4;
  in.pass_elapsed_s = 30;
  CHECK(remaining_seconds(in) == Approx(70 + 300));
  in.mean_pass_s = 40;  // after the first pass: what passes really take
  in.pass = 2;
  in.pass_elapsed_s = 10;
  CHECK(remaining_seconds(in) == Approx(30 + 80));

  EtaInput timed;
  timed.pass = 3;
  timed.elapsed_s = 50;
  timed.pass_elapsed_s = 5;
  timed.mean_pass_s = 20;
  timed.duration_s = 100;
  // The pass under way ends at 65; passes start at 65 and 85, the last ends at 105.
  CHECK(remaining_seconds(timed) == Approx(15 + 40));
  timed.repeat = 3;  // whichever ends first
  CHECK(remaining_seconds(timed) == Approx(15));
  timed.repeat.reset();
  timed.elapsed_s = 120;  // past the duration: only the pass under way is left
  CHECK(remaining_seconds(timed) == Approx(15));
}

TEST_CASE("burnin: clock format and the progress bar line") {
  CHECK(format_clock(0) == "0:00:00");
  CHECK(format_clock(307) == "0:05:07");
  CHECK(format_clock(43200) == "12:00:00");
  CHECK(format_clock(3 * 86400 + 4 * 3600 + 5 * 60 + 6) == "3d 4:05:06");
  CHECK(format_clock(-5) == "0:00:00");

  const std::string line = progress_bar_line(0.5, "pass 3/10  gemm (2/7)", 754, 1030, 100);
  CHECK(line == "[##########----------]  50%  pass 3/10  gemm (2/7)  elapsed 0:12:34  ETA 0:17:10");
  CHECK(progress_bar_line(2.0, "x", 1, std::nullopt, 100).rfind("[####################] 100%", 0) ==
        0);
  // On a narrow terminal the description gives way; the times stay.
  const std::string narrow = progress_bar_line(0.1, std::string(200, 'c'), 5, 60, 60);
  CHECK(narrow.size() == 60);
  CHECK_THAT(narrow, Catch::EndsWith("ETA 0:01:00"));
}

TEST_CASE("burnin: a fault can start in a later pass") {
  FaultKindSpec hang;
  hang.kind = "hang";
  hang.targets = {TargetType::check};
  const std::vector<FaultKindSpec> kinds = {hang};
  const InjectedFault f = parse_fault("hang@check=gemm,from-pass=3", kinds);
  CHECK(f.from_pass == 3);
  CHECK(f.target.name == "gemm");
  CHECK(f.spec == "hang@check=gemm,from-pass=3");
  CHECK(parse_fault("hang@check=gemm", kinds).from_pass == 1);
  CHECK_THROWS_WITH(parse_fault("hang@check=gemm,from-pass=0", kinds),
                    Catch::Contains("from-pass must be a pass number"));
  CHECK_THROWS_WITH(parse_fault("hang@check=gemm,from-pass=x", kinds),
                    Catch::Contains("from-pass must be a pass number"));
  CHECK_THROWS_WITH(parse_fault("hang@check=gemm,pass=2", kinds),
                    Catch::Contains("unknown qualifier"));

  const FaultPlan plan(
      {parse_fault("hang@check=gemm,from-pass=3", kinds), parse_fault("hang@check=hbm", kinds)});
  CHECK(plan.in_pass(1).all().size() == 1);
  CHECK(plan.in_pass(2).all().size() == 1);
  CHECK(plan.in_pass(3).all().size() == 2);
  CHECK(plan.in_pass(9).all().size() == 2);
}
