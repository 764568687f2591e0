// The gemm check end to end without a GPU: options through plan_checks, the runner, one worker
// per GPU against a fake engine, fault injection through the real fault parser, judgement and
// the injected marking. The engine's kernels are covered by tests/gpu/test_gemm_gpu.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "preflight/errors.hpp"
#include "report/report.hpp"
#include "report/verdict_reader.hpp"
#include "run/rejudge.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_gemm_engine.hpp"

using namespace preflight;
using preflight::test::findings;
using preflight::test::options_of;
using namespace std::chrono_literals;

namespace {

struct GemmRun {
  Verdict verdict;
  CheckResult gemm;
  int abandoned = 0;
  double seconds = 0.0;
};

GemmRun run_gemm(const NodeReading& node, test::FakeGemmEngine& engine,
                 const std::vector<std::string>& fault_specs = {},
                 const CheckOptions& options = options_of({{"--gemm-seconds", "1"}}),
                 std::chrono::seconds timeout = 60s) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {"gemm"}, options);
  std::vector<InjectedFault> faults;
  for (const auto& spec : fault_specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan plan_of_faults(faults);
  test::FakeBackend backend(node);
  backend.gemm = &engine;
  GpuTelemetry sample;
  sample.sm_clock_mhz = 1980;
  sample.temperature_c = 61;
  sample.power_w = 690.0;
  sample.clock_event_reasons = 0;
  backend.telemetry_sample = sample;
  Verdict skeleton;
  skeleton.injected_faults = fault_specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.profile = Profile::quick;
  settings.deadline = SteadyClock::now() + timeout;
  settings.options = options;
  Runner runner(backend.engines(), plan_of_faults);
  const auto start = SteadyClock::now();
  GemmRun out;
  const auto outcome = runner.run(state, plan, settings);
  REQUIRE(outcome.invalid.empty());
  out.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  out.verdict = outcome.verdict;
  for (const auto& c : out.verdict.checks) {
    if (c.name == "gemm") out.gemm = c;
  }
  out.abandoned = state.abandoned_threads();
  return out;
}

bool all_injected(const CheckResult& r) {
  return std::all_of(r.findings.begin(), r.findings.end(),
                     [](const Finding& f) { return f.injected; });
}

double metric(const CheckResult& r, const std::string& key) {
  for (const Metric& m : r.metrics) {
    if (m.key() == key) return m.value;
  }
  FAIL("no metric " << key);
  return 0;
}

}  // namespace

TEST_CASE("gemm check: a healthy node passes, every GPU runs the same exact bf16 job") {
  test::FakeGemmEngine engine;
  const auto r = run_gemm(test::healthy_node(4), engine);
  INFO(r.gemm.summary);
  CHECK(r.gemm.status == Status::pass);
  CHECK(r.gemm.findings.empty());
  const auto jobs = engine.jobs();
  REQUIRE(jobs.size() == 4);
  std::set<int> gpus;
  for (const auto& j : jobs) {
    gpus.insert(j.gpu_index);
    CHECK(j.dtype == GemmDtype::bf16);
    CHECK(j.m == 16384);
    CHECK(j.k == 16384);
    CHECK(j.input_range == 16);
    CHECK(j.output_roundoff == 0.0);
    CHECK(j.accumulation_gamma == 0.0);
    CHECK(j.seed == jobs[0].seed);
    CHECK(j.product_seconds == Approx(1.0));
    CHECK_FALSE(j.inject_bitflip);
    CHECK(j.slow_factor == 1.0);
  }
  CHECK(gpus == std::set<int>{0, 1, 2, 3});
  CHECK(metric(r.gemm, "gpu0.bf16.tflops_median") == Approx(800.0));
  CHECK(metric(r.gemm, "gpu3.bf16.sm_clock_mhz_median") == Approx(1980));
  CHECK(r.abandoned == 0);
}

TEST_CASE("gemm check: a bit flip is caught by checksum, repeatability and consensus on its GPU") {
  test::FakeGemmEngine engine;
  const auto r = run_gemm(test::healthy_node(4), engine, {"gemm-bitflip@gpu=2"});
  CHECK(findings(r.gemm) == std::set<std::string>{"GEMM_CHECKSUM_MISMATCH@gpu2",
                                                  "GEMM_NOT_REPEATABLE@gpu2",
                                                  "GEMM_CONSENSUS_MINORITY@gpu2"});
  CHECK(all_injected(r.gemm));
  CHECK(r.verdict.verdict == Status::fail);
  CHECK_THAT(r.verdict.reason, Catch::StartsWith("injected fault: "));
  for (const auto& j : engine.jobs()) CHECK(j.inject_bitflip == (j.gpu_index == 2));
}

TEST_CASE("gemm check: each detector fires on its own") {
  const auto only = [](const std::string& detector, int gpus, const std::string& fault) {
    test::FakeGemmEngine engine;
    return findings(run_gemm(test::healthy_node(gpus), engine, {fault},
                             options_of({{"--gemm-seconds", "1"}, {"--gemm-detectors", detector}}))
                        .gemm);
  };
  CHECK(only("checksum", 1, "gemm-bitflip@gpu=0") ==
        std::set<std::string>{"GEMM_CHECKSUM_MISMATCH@gpu0"});
  CHECK(only("repeat", 1, "gemm-bitflip@gpu=0") ==
        std::set<std::string>{"GEMM_NOT_REPEATABLE@gpu0"});
  CHECK(only("consensus", 3, "gemm-bitflip@gpu=1") ==
        std::set<std::string>{"GEMM_CONSENSUS_MINORITY@gpu1"});
  CHECK(only("nan", 2, "gemm-nan@gpu=1") == std::set<std::string>{"GEMM_NAN_INF@gpu1"});
}

TEST_CASE("gemm check: two GPUs that disagree are a tie on both, never resolved silently") {
  test::FakeGemmEngine engine;
  const auto r = run_gemm(test::healthy_node(2), engine, {"gemm-bitflip:3@gpu=1"});
  const auto got = findings(r.gemm);
  CHECK(got.count("GEMM_CONSENSUS_TIE@gpu0") == 1);
  CHECK(got.count("GEMM_CONSENSUS_TIE@gpu1") == 1);
  CHECK(got.count("GEMM_CHECKSUM_MISMATCH@gpu1") == 1);
  CHECK(got.count("GEMM_CHECKSUM_MISMATCH@gpu0") == 0);
  CHECK(all_injected(r.gemm));  // gpu0's tie finding is the injected fault's doing
  for (const auto& j : engine.jobs()) {
    if (j.gpu_index == 1) CHECK(j.bitflip_bit == 3);
  }
}

TEST_CASE("gemm check: a persistent corruption only consensus can see") {
  test::FakeGemmEngine engine;
  engine.behaviour[1].persistent_corruption = true;  // same wrong answer every time
  const auto r = run_gemm(test::healthy_node(3), engine);
  CHECK(findings(r.gemm) == std::set<std::string>{"GEMM_CONSENSUS_MINORITY@gpu1"});
  CHECK_FALSE(r.gemm.findings.at(0).injected);
}

TEST_CASE("gemm check: NaN injection is found by the NaN/Inf scan") {
  test::FakeGemmEngine engine;
  const auto r = run_gemm(test::healthy_node(1), engine, {"gemm-nan@gpu=0"});
  CHECK(findings(r.gemm).count("GEMM_NAN_INF@gpu0") == 1);
  CHECK(all_injected(r.gemm));
}

TEST_CASE("gemm check: slow GPUs are stragglers against the node, or below the SKU alone") {
  SECTION("10% slow among four: a straggler warning with its percentage") {
    test::FakeGemmEngine engine;
    const auto r = run_gemm(test::healthy_node(4), engine, {"gemm-slow:0.9@gpu=3"});
    CHECK(findings(r.gemm) == std::set<std::string>{"GEMM_STRAGGLER@gpu3"});
    CHECK(r.gemm.status == Status::warn);
    CHECK_THAT(r.gemm.findings.at(0).message, Catch::Contains("10.0%"));
    CHECK(all_injected(r.gemm));
  }
  SECTION("20% slow: a severe straggler") {
    test::FakeGemmEngine engine;
    const auto r = run_gemm(test::healthy_node(4), engine, {"gemm-slow:0.8@gpu=3"});
    CHECK(findings(r.gemm) == std::set<std::string>{"GEMM_STRAGGLER_SEVERE@gpu3"});
  }
  SECTION("a single H100 at 30% of its speed is below the SKU's floor") {
    test::FakeGemmEngine engine;
    const auto r = run_gemm(test::healthy_node(1), engine, {"gemm-slow:0.3@gpu=0"});
    CHECK(findings(r.gemm) == std::set<std::string>{"GEMM_TFLOPS_LOW@gpu0"});
    CHECK(all_injected(r.gemm));
  }
}

TEST_CASE("gemm check: the recorded readings judge again to the run's findings") {
  // A slow GPU (judged) and a bit flip (observed) on another, through the verdict's JSON as
  // `preflight judge` reads it, with the thresholds the run recorded.
  test::FakeGemmEngine engine;
  const auto r =
      run_gemm(test::healthy_node(4), engine, {"gemm-slow:0.8@gpu=3", "gemm-bitflip@gpu=1"});
  REQUIRE(r.gemm.readings.is_object());
  CHECK(r.gemm.readings.at("gpus").size() == 4);
  CHECK(r.gemm.readings.at("gpus").at(3).at("injected") == true);
  const Verdict back =
      verdict_from_json(nlohmann::ordered_json::parse(verdict_to_json_text(r.verdict)), "run.json");
  CheckRegistry registry;
  register_builtin_checks(registry);
  REQUIRE(back.thresholds);
  std::vector<std::string> unknown;
  const Thresholds thresholds = thresholds_from_record(preflight::test::builtin_threshold_specs(),
                                                       *back.thresholds, "run.json", unknown);
  CHECK(unknown.empty());
  RejudgeSettings settings;
  settings.thresholds = &thresholds;
  settings.fault_kinds = registry.fault_kinds();
  const Verdict again = rejudge(back, registry, settings);
  const auto gemm = std::find_if(again.checks.begin(), again.checks.end(),
                                 [](const CheckResult& c) { return c.name == "gemm"; });
  REQUIRE(gemm != again.checks.end());
  CHECK(gemm->status == r.gemm.status);
  REQUIRE(gemm->findings.size() == r.gemm.findings.size());
  for (std::size_t i = 0; i < gemm->findings.size(); ++i) {
    const Finding& a = gemm->findings[i];
    const Finding& b = r.gemm.findings[i];
    INFO(b.code << "@" << b.entity << ": " << b.message);
    CHECK(a.code == b.code);
    CHECK(a.entity == b.entity);
    CHECK(a.message == b.message);
    CHECK(a.value == b.value);
    CHECK(a.threshold == b.threshold);
    CHECK(a.injected == b.injected);
    CHECK(a.judged == b.judged);
  }
  CHECK(findings(*gemm) ==
        std::set<std::string>{"GEMM_CHECKSUM_MISMATCH@gpu1", "GEMM_NOT_REPEATABLE@gpu1",
                              "GEMM_CONSENSUS_MINORITY@gpu1", "GEMM_STRAGGLER_SEVERE@gpu3"});
  CHECK(all_injected(*gemm));

  // Looser straggler limits turn the judged finding into a warning; the corruption stays.
  Thresholds loose = thresholds;
  loose.apply_overrides(R"({"gemm": {"straggler_fail_pct": 30}})", "test");
  settings.thresholds = &loose;
  const Verdict relaxed = rejudge(back, registry, settings);
  for (const auto& c : relaxed.checks) {
    if (c.name == "gemm") {
      CHECK(findings(c) ==
            std::set<std::string>{"GEMM_CHECKSUM_MISMATCH@gpu1", "GEMM_NOT_REPEATABLE@gpu1",
                                  "GEMM_CONSENSUS_MINORITY@gpu1", "GEMM_STRAGGLER@gpu3"});
    }
  }
}

TEST_CASE("gemm check: a CUDA error or a hung GPU is a finding on it; the others still report") {
  SECTION("error") {
    test::FakeGemmEngine engine;
    engine.behaviour[0].error = "cudaErrorIllegalAddress: an illegal memory access was encountered";
    const auto r = run_gemm(test::healthy_node(3), engine);
    CHECK(findings(r.gemm) == std::set<std::string>{"GEMM_CUDA_ERROR@gpu0"});
    CHECK_THAT(r.gemm.findings.at(0).message, Catch::Contains("cudaErrorIllegalAddress"));
    CHECK(metric(r.gemm, "gpu1.bf16.tflops_median") > 0);
  }
  SECTION("hung in the driver: abandoned, GEMM_TIMEOUT, the run ends in time") {
    test::FakeGemmEngine engine;
    engine.behaviour[1].hang = true;
    const auto r =
        run_gemm(test::healthy_node(3), engine, {}, options_of({{"--gemm-seconds", "1"}}), 8s);
    CHECK(findings(r.gemm) == std::set<std::string>{"GEMM_TIMEOUT@gpu1"});
    CHECK(r.gemm.status == Status::fail);
    CHECK(metric(r.gemm, "gpu2.bf16.products") > 0);
    CHECK(r.abandoned >= 1);
    CHECK(r.seconds < 8.0);
    engine.gate->release();
  }
  SECTION("queued work never completed") {
    test::FakeGemmEngine engine;
    engine.behaviour[2].timed_out = true;
    const auto r = run_gemm(test::healthy_node(3), engine);
    CHECK(findings(r.gemm).count("GEMM_TIMEOUT@gpu2") == 1);
  }
}

TEST_CASE("gemm check: a GPU CUDA cannot see is reported untested, not skipped silently") {
  test::FakeGemmEngine engine;
  NodeReading node = test::healthy_node(2);
  node.gpus[1].cuda_ordinal = -1;
  const auto r = run_gemm(node, engine);
  CHECK(findings(r.gemm) == std::set<std::string>{"GEMM_GPU_NOT_TESTED@gpu1"});
  CHECK(engine.jobs().size() == 1);
}

TEST_CASE("gemm check: several dtypes run one after another on every GPU") {
  test::FakeGemmEngine engine;
  const auto r = run_gemm(test::healthy_node(2), engine, {},
                          options_of({{"--gemm-seconds", "1"}, {"--gemm-dtypes", "fp64,bf16"}}));
  CHECK(r.gemm.status == Status::pass);
  const auto jobs = engine.jobs();
  REQUIRE(jobs.size() == 4);
  CHECK(jobs[0].dtype == GemmDtype::fp64);
  CHECK(jobs[3].dtype == GemmDtype::bf16);
  CHECK(jobs[0].m == 12288);  // 16384^3 in fp64 needs more than the default 6 GiB limit
  CHECK(metric(r.gemm, "gpu1.fp64.products") > 0);
}

TEST_CASE("gemm check: options are validated before anything runs and set the budget") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto budget_of = [&](const CheckOptions& o, Profile p) {
    for (const auto& pc : plan_checks(registry, p, {"gemm"}, o)) {
      if (pc.check->info().name == "gemm") return pc.budget;
    }
    return std::chrono::seconds(-1);
  };
  CHECK(budget_of({}, Profile::quick) == 28s);
  CHECK(budget_of(options_of({{"--gemm-seconds", "100"}}), Profile::burnin) == 125s);
  CHECK_THROWS_WITH(
      plan_checks(registry, Profile::quick, {"gemm"}, options_of({{"--gemm-dtypes", "int8"}})),
      Catch::Contains("--gemm-dtypes"));
  CHECK_THROWS_WITH(
      plan_checks(registry, Profile::quick, {"inventory"}, options_of({{"--gemm-seconds", "5"}})),
      Catch::Contains("--gemm-seconds: check 'gemm' is not part of this run"));
  CHECK_THROWS_AS(plan_checks(registry, Profile::quick, {}, options_of({{"--nope", "1"}})),
                  InvalidInput);
}

TEST_CASE("gemm check: without an engine it is skipped with the reason") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {"gemm"});
  test::FakeBackend backend(test::healthy_node(1));
  FaultPlan faults;
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 30s;
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.verdict.checks.size() == 2);
  CHECK(out.verdict.checks[1].status == Status::skip);
  CHECK_THAT(out.verdict.checks[1].skip_reason, Catch::Contains("no GEMM engine"));
}

TEST_CASE("gemm check: without cuBLAS the tool's installation is blamed, exit 3, no GPU judged") {
  test::FakeGemmEngine engine;
  engine.missing_library =
      "cuBLAS (libcublas.so.13) not found; looked at: /usr/lib/preflight/libcublas.so.13: no such "
      "file";
  const GemmRun r = run_gemm(test::healthy_node(4), engine);
  CHECK(r.gemm.status == Status::error);
  CHECK(findings(r.gemm) == std::set<std::string>{"TOOL_LIBRARY_MISSING@node"});
  REQUIRE(r.gemm.findings.size() == 1);
  CHECK(r.gemm.findings[0].message == engine.missing_library);
  CHECK(engine.jobs().empty());
  CHECK(r.verdict.verdict == Status::fail);
  CHECK(r.verdict.exit_code == kExitInternalError);
  CHECK_THAT(r.verdict.reason, Catch::Contains("libcublas.so.13"));

  SECTION("where CUDA can use no GPU, the library is not the problem and is not asked about") {
    NodeReading node = test::healthy_node(2);
    for (auto& g : node.gpus) g.cuda_ordinal = -1;
    const GemmRun none = run_gemm(node, engine);
    CHECK(findings(none.gemm).count("TOOL_LIBRARY_MISSING@node") == 0);
  }
}
