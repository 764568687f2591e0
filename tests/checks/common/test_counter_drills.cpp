// The error counters end to end, through the runner and each load check with fake engines: every
// counter drill gives its code on its entity, marked injected; counters that climb by themselves
// give the same findings unmarked; healthy counters give none; `preflight judge` makes them
// again from the readings alone.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "checks/common/counters.hpp"
#include "run/rejudge.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"
#include "support/fake_collective_engine.hpp"
#include "support/fake_gemm_engine.hpp"
#include "support/fake_rdma_engine.hpp"

using namespace preflight;
using namespace std::chrono_literals;

namespace {

// Every engine a load check needs, and the backend with the counters it reads.
struct CounterFakes {
  test::FakeGemmEngine gemm;
  test::FakeBandwidthEngine bandwidth;
  test::FakeCollectiveEngine collective;
  test::FakeRdmaEngine rdma{4, true};
  std::map<int, GpuErrorCounters> samples;
  std::map<int, GpuErrorCounters> steps;
};

// Nominal counters: every one present, nonzero where a healthy GPU may read nonzero (the H200's
// PCIe counters at idle), none climbing.
GpuErrorCounters healthy_counters() {
  GpuErrorCounters c;
  c.ecc_corrected_volatile = 0;
  c.ecc_uncorrected_volatile = 0;
  c.pcie_replay = 4;
  c.nvlink_replay = 0;
  c.nvlink_recovery = 0;
  c.nvlink_crc_flit = 12;
  c.nvlink_crc_data = 0;
  return c;
}

Verdict run_with_counters(const std::string& check, CounterFakes& fakes,
                          const std::vector<std::string>& fault_specs = {}) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {check});
  std::vector<InjectedFault> faults;
  for (const auto& spec : fault_specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan fault_plan(faults);
  test::FakeBackend backend(test::healthy_node(4));
  backend.gemm = &fakes.gemm;
  backend.bandwidth = &fakes.bandwidth;
  backend.collective = &fakes.collective;
  backend.rdma = &fakes.rdma;
  backend.error_counter_samples = fakes.samples;
  backend.counter_steps = fakes.steps;
  Verdict skeleton;
  skeleton.injected_faults = fault_specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 60s;
  Runner runner(backend.engines(), fault_plan);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  return out.verdict;
}

const CheckResult& result_of_check(const Verdict& v, const std::string& name) {
  const auto it = std::find_if(v.checks.begin(), v.checks.end(),
                               [&](const CheckResult& c) { return c.name == name; });
  REQUIRE(it != v.checks.end());
  return *it;
}

// "CODE@entity" of the check's counter findings.
std::set<std::string> counter_codes(const CheckResult& c, bool injected_only = false) {
  std::set<std::string> out;
  for (const Finding& f : c.findings) {
    if (counter_findings().find(f.code) == nullptr) continue;
    if (injected_only && !f.injected) continue;
    out.insert(f.code + "@" + f.entity);
  }
  return out;
}

void give_healthy_counters(CounterFakes& fakes) {
  for (int i = 0; i < 4; ++i) fakes.samples[i] = healthy_counters();
}

}  // namespace

TEST_CASE("counter drills: each gives its code on its entity, marked injected") {
  struct Drill {
    const char* check;
    const char* spec;
    const char* expected;
  };
  const Drill drills[] = {
      {"gemm", "ecc-correctable-rise:100000@gpu=2", "ECC_CORRECTED_UNDER_LOAD@gpu2"},
      {"gemm", "ecc-uncorrectable-rise@gpu=1", "ECC_UNCORRECTED_UNDER_LOAD@gpu1"},
      {"pcie", "pcie-replay-rise:50@gpu=3", "PCIE_REPLAYS_UNDER_LOAD@gpu3"},
      {"pcie", "aer-corrected-rise:20@gpu=0", "PCIE_AER_CORRECTED_UNDER_LOAD@gpu0"},
      {"pcie", "aer-fatal-rise@gpu=2", "PCIE_AER_UNCORRECTED_UNDER_LOAD@gpu2"},
      {"nvlink", "nvlink-crc-rise:100000@gpu=1", "NVLINK_CRC_UNDER_LOAD@gpu1"},
      {"rdma", "rnic-symbol-errors:40@nic=mlx5_1", "RDMA_PORT_ERRORS_UNDER_LOAD@mlx5_1"},
      {"rdma", "rnic-link-downed@nic=mlx5_0", "RDMA_LINK_DOWNED_UNDER_LOAD@mlx5_0"},
  };
  for (const Drill& d : drills) {
    INFO(d.spec);
    // With counters the fakes expose, and without (drilled from zero): the drill runs anywhere.
    for (const bool exposed : {true, false}) {
      INFO((exposed ? "counters exposed" : "no counters"));
      CounterFakes fakes;
      if (exposed) give_healthy_counters(fakes);
      const Verdict v = run_with_counters(d.check, fakes, {d.spec});
      const CheckResult& c = result_of_check(v, d.check);
      CHECK(counter_codes(c) == std::set<std::string>{d.expected});
      CHECK(counter_codes(c, true) == std::set<std::string>{d.expected});
      CHECK(v.verdict != Status::pass);
    }
  }
}

TEST_CASE("counter drills: healthy counters give no finding, and the window is in the readings") {
  for (const char* check : {"gemm", "hbm", "pcie", "nvlink", "nccl", "rdma"}) {
    INFO(check);
    CounterFakes fakes;
    give_healthy_counters(fakes);
    const Verdict v = run_with_counters(check, fakes);
    const CheckResult& c = result_of_check(v, check);
    CHECK(counter_codes(c).empty());
    CHECK(c.status == Status::pass);
    const auto window = counters_of(c.readings);
    REQUIRE(window);
    CHECK(window->seconds >= 0);
    if (std::string(check) != "rdma") CHECK_FALSE(window->values.empty());
  }
}

TEST_CASE("counter drills: the same findings come from counters that climb by themselves") {
  SECTION("corrected ECC pouring out under the products, on one GPU") {
    CounterFakes fakes;
    give_healthy_counters(fakes);
    fakes.steps[3].ecc_corrected_volatile = 100000;
    const CheckResult c = result_of_check(run_with_counters("gemm", fakes), "gemm");
    CHECK(counter_codes(c) == std::set<std::string>{"ECC_CORRECTED_UNDER_LOAD@gpu3"});
    CHECK(counter_codes(c, true).empty());
    CHECK(c.status == Status::warn);
  }
  SECTION("PCIe replays climbing during the copies") {
    CounterFakes fakes;
    give_healthy_counters(fakes);
    fakes.steps[0].pcie_replay = 9;
    const CheckResult c = result_of_check(run_with_counters("pcie", fakes), "pcie");
    CHECK(counter_codes(c) == std::set<std::string>{"PCIE_REPLAYS_UNDER_LOAD@gpu0"});
  }
  SECTION("NVLink recoveries during the collectives") {
    CounterFakes fakes;
    give_healthy_counters(fakes);
    fakes.steps[2].nvlink_recovery = 1;
    const CheckResult c = result_of_check(run_with_counters("nccl", fakes), "nccl");
    CHECK(counter_codes(c) == std::set<std::string>{"NVLINK_REPLAYS_UNDER_LOAD@gpu2"});
  }
  SECTION("an uncorrectable ECC error under the memory test fails the node") {
    CounterFakes fakes;
    give_healthy_counters(fakes);
    fakes.steps[1].ecc_uncorrected_volatile = 1;
    const Verdict v = run_with_counters("hbm", fakes);
    CHECK(counter_codes(result_of_check(v, "hbm")) ==
          std::set<std::string>{"ECC_UNCORRECTED_UNDER_LOAD@gpu1"});
    CHECK(v.verdict == Status::fail);
  }
}

TEST_CASE("counter drills: judge makes the counter findings again from the readings alone") {
  CounterFakes fakes;
  give_healthy_counters(fakes);
  fakes.steps[1].ecc_uncorrected_volatile = 1;
  fakes.steps[2].ecc_corrected_volatile = 100000;
  Verdict recorded = run_with_counters("gemm", fakes);
  // Every finding removed by hand.
  for (CheckResult& c : recorded.checks) c.findings.clear();

  CheckRegistry registry;
  register_builtin_checks(registry);
  const Thresholds thresholds = test::h100();
  RejudgeSettings settings;
  settings.thresholds = &thresholds;
  settings.thresholds_by = "test";
  settings.source = "node.json";
  settings.judged_at = "2026-01-01T00:00:00Z";
  settings.fault_kinds = registry.fault_kinds();
  const Verdict judged = rejudge(recorded, registry, settings);
  const CheckResult& gemm = result_of_check(judged, "gemm");
  CHECK(counter_codes(gemm) ==
        std::set<std::string>{"ECC_UNCORRECTED_UNDER_LOAD@gpu1", "ECC_CORRECTED_UNDER_LOAD@gpu2"});
  CHECK(judged.verdict == Status::fail);
  REQUIRE(judged.rejudged);
  CHECK(judged.rejudged->observations_restored == 1);

  // A site limit above the rate: the warning goes, the uncorrectable error stays.
  Thresholds lenient = test::h100();
  lenient.apply_overrides(R"({"gemm": {"ecc_corrected_per_s": 1e9}})", "test");
  settings.thresholds = &lenient;
  const Verdict relaxed = rejudge(recorded, registry, settings);
  CHECK(counter_codes(result_of_check(relaxed, "gemm")) ==
        std::set<std::string>{"ECC_UNCORRECTED_UNDER_LOAD@gpu1"});
}

TEST_CASE("counter drills: every load check declares its counters, limits and plan time") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  for (const char* name : {"gemm", "hbm", "pcie", "nvlink", "nccl", "rdma"}) {
    INFO(name);
    const Check* check = registry.find(name);
    REQUIRE(check != nullptr);
    const CheckInfo& info = check->info();
    CHECK(std::find(info.findings.begin(), info.findings.end(), &counter_findings()) !=
          info.findings.end());
    CHECK(info.fixed_overhead_s == Approx(std::string(name) == "rdma" ? 0.0 : kCounterReadSeconds));
    CHECK(kCounterReadSeconds <= 0.2);  // the issue's bound per check
  }
  for (const char* name : {"inventory", "events"}) {
    CHECK(registry.find(name)->info().fixed_overhead_s == 0);
  }
}

TEST_CASE(
    "counter drills: an Xid the driver raises under a check's load lands on its GPU and check") {
  CounterFakes fakes;
  give_healthy_counters(fakes);
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {"gemm", "pcie"});
  const FaultPlan no_faults(std::vector<InjectedFault>{});
  test::FakeBackend backend(test::healthy_node(4));
  backend.gemm = &fakes.gemm;
  backend.bandwidth = &fakes.bandwidth;
  backend.error_counter_samples = fakes.samples;
  backend.events = std::make_shared<test::FakeEventSource>();
  GpuEvent reboot;
  reboot.gpu_index = 1;
  reboot.type = "xid";
  reboot.data = 79;
  GpuEvent application = reboot;
  application.gpu_index = 3;
  application.data = 13;
  // Drains: gemm's start (1) and end (2), pcie's start (3) and end (4).
  backend.events->on_drain[2] = {reboot, reboot};
  backend.events->on_drain[3] = {application};
  Verdict skeleton;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 60s;
  Runner runner(backend.engines(), no_faults);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  CHECK(backend.events->drains() == 4);

  const CheckResult& gemm = result_of_check(out.verdict, "gemm");
  std::vector<const Finding*> xids;
  for (const Finding& f : gemm.findings) {
    if (f.code.rfind("XID_", 0) == 0) xids.push_back(&f);
  }
  REQUIRE(xids.size() == 1);  // two events of one Xid on one GPU: one finding
  CHECK(xids[0]->code == "XID_REBOOT");
  CHECK(xids[0]->entity == "gpu1");
  CHECK(xids[0]->action == Action::reboot);
  CHECK_THAT(xids[0]->message, Catch::Contains("during this check's load, 2 times"));
  CHECK(gemm.status == Status::fail);

  const CheckResult& pcie = result_of_check(out.verdict, "pcie");
  const auto app = std::find_if(pcie.findings.begin(), pcie.findings.end(),
                                [](const Finding& f) { return f.code == "XID_APPLICATION"; });
  REQUIRE(app != pcie.findings.end());
  CHECK(app->entity == "gpu3");
  CHECK_THAT(app->message, Catch::Contains("before this check's load"));
  CHECK(app->severity == Severity::info);

  // In the readings, and made again from them alone.
  const auto window = counters_of(gemm.readings);
  REQUIRE(window);
  CHECK(window->xid_events_read);
  REQUIRE(window->xids.size() == 1);
  CHECK(window->xids[0].count == 2);
  CHECK(test::codes(observe_counters(gemm.readings)) == std::set<std::string>{"XID_REBOOT@gpu1"});
}

TEST_CASE("counter drills: without an event stream nothing is said about Xid events") {
  CounterFakes fakes;
  give_healthy_counters(fakes);
  const Verdict v = run_with_counters("gemm", fakes);
  const auto window = counters_of(result_of_check(v, "gemm").readings);
  REQUIRE(window);
  CHECK_FALSE(window->xid_events_read);
  CHECK_FALSE(result_of_check(v, "gemm").readings["counters"].contains("xid_events"));
}
