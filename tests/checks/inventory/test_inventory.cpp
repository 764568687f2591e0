// The inventory check: its rules on made-up readings, and every inventory fault kind end to end
// through fault parsing, the runner, the check and aggregation.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <tuple>

#include "checks/inventory/inventory_faults.hpp"
#include "checks/inventory/inventory_plan.hpp"
#include "checks/inventory/inventory_rules.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"

using namespace preflight;
using preflight::test::h100;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> judgement_codes(const InventoryJudgement& j,
                                         const std::string& entity = "") {
  std::vector<std::string> out;
  for (const auto& f : j.findings) {
    if (entity.empty() || f.entity == entity) out.push_back(f.code);
  }
  return out;
}

InventoryJudgement judge_one(const std::function<void(GpuReading&)>& change, int gpus = 8) {
  NodeReading node = test::healthy_node(gpus);
  change(node.gpus[3 % gpus]);
  return judge_inventory(node, h100(), NodeExpectations{});
}

using Codes = std::vector<std::string>;

}  // namespace

TEST_CASE("inventory: a healthy 8-GPU H100 node has no findings") {
  const auto j = judge_inventory(test::healthy_node(8), h100(), NodeExpectations{8});
  CHECK(j.findings.empty());
  CHECK_THAT(j.summary, Catch::Contains("8 x NVIDIA H100 80GB HBM3"));
  CHECK_THAT(j.summary, Catch::Contains("driver 580.65.06"));
}

TEST_CASE("inventory: GPU count against expectations") {
  const auto none =
      judge_inventory(test::no_gpu_node(), preflight::test::builtin_thresholds(nullptr, "t"), {});
  CHECK(judgement_codes(none) == Codes{"NO_GPU_VISIBLE"});
  CHECK_THAT(none.findings[0].message, Catch::Contains("no GPU or driver visible"));
  CHECK_THAT(none.findings[0].message, Catch::Contains("libnvidia-ml.so.1"));

  const auto accepted =
      judge_inventory(test::no_gpu_node(), preflight::test::builtin_thresholds(nullptr, "t"), {0});
  CHECK(judgement_codes(accepted) == Codes{"NO_GPU_EXPECTED"});
  CHECK(status_from_findings(accepted.findings) == Status::pass);

  CHECK(judgement_codes(judge_inventory(test::healthy_node(7), h100(), {8})) ==
        Codes{"GPU_COUNT_MISMATCH"});
  CHECK(judgement_codes(judge_inventory(test::healthy_node(8), h100(), {0})).empty());

  NodeReading fell_off = test::healthy_node(7);
  fell_off.pci_gpu_count = 8;
  CHECK(judgement_codes(judge_inventory(fell_off, h100(), {})) == Codes{"GPU_MISSING_FROM_DRIVER"});
}

TEST_CASE("inventory: driver, CUDA and SKU problems are node findings") {
  NodeReading n = test::healthy_node(2);
  n.nvml_loaded = false;
  n.nvml_error = "libnvidia-ml.so.1: not found";
  CHECK(judgement_codes(judge_inventory(n, h100(), {})) == Codes{"NVML_UNAVAILABLE"});

  n = test::healthy_node(2);
  n.cuda_device_count = 0;
  n.cuda_error = "CUDA driver version is insufficient for CUDA runtime version";
  CHECK(judgement_codes(judge_inventory(n, h100(), {})) == Codes{"CUDA_UNAVAILABLE"});

  n = test::healthy_node(2);
  n.gpus[1].cuda_ordinal = -1;
  CHECK(judgement_codes(judge_inventory(n, h100(), {}), "gpu1") ==
        Codes{"GPU_NOT_VISIBLE_TO_CUDA"});

  n = test::healthy_node(2);
  n.gpus[1].name = "NVIDIA A100-SXM4-80GB";
  CHECK(judgement_codes(judge_inventory(n, h100(), {})) == Codes{"MIXED_GPU_MODELS"});

  n = test::healthy_node(2);  // gpu0 lost to the driver: no name, no device id
  n.gpus[0].name.clear();
  n.gpus[0].pci_device_id = 0;
  const auto lost = judge_inventory(n, h100(), {});
  CHECK(judgement_codes(lost).empty());
  CHECK_THAT(lost.summary, Catch::StartsWith("2 x NVIDIA H100 80GB HBM3"));
  CHECK(representative_gpu(n) == &n.gpus[1]);

  n = test::healthy_node(1);
  n.gpus[0].pci_device_id = 0x1234;
  n.gpus[0].name = "Future GPU";
  const auto generic = preflight::test::builtin_thresholds(nullptr, "unknown");
  CHECK(judgement_codes(judge_inventory(n, generic, {})) == Codes{"SKU_UNKNOWN"});
}

TEST_CASE("inventory: each per-GPU rule yields its finding on that GPU only") {
  const std::vector<std::pair<std::function<void(GpuReading&)>, Codes>> cases = {
      {[](GpuReading& g) { g.mig_enabled = true; }, {"MIG_ENABLED"}},
      {[](GpuReading& g) { g.ecc_enabled = false; }, {"ECC_DISABLED"}},
      {[](GpuReading& g) { g.persistence_enabled = false; }, {"PERSISTENCE_MODE_OFF"}},
      {[](GpuReading& g) { g.ecc_uncorrected_volatile = 2; }, {"ECC_UNCORRECTABLE_VOLATILE"}},
      {[](GpuReading& g) { g.ecc_uncorrected_aggregate = 4; }, {"ECC_UNCORRECTABLE_AGGREGATE"}},
      {[](GpuReading& g) { g.ecc_corrected_volatile = 5000; }, {"ECC_CORRECTABLE_HIGH"}},
      {[](GpuReading& g) { g.ecc_corrected_volatile = 1000; }, {}},  // at the threshold: ok
      {[](GpuReading& g) { g.retired_pages_pending = true; }, {"RETIRED_PAGES_PENDING"}},
      {[](GpuReading& g) { g.row_remap_pending = true; }, {"ROW_REMAP_PENDING"}},
      {[](GpuReading& g) { g.row_remap_failed = true; }, {"ROW_REMAP_FAILED"}},
      {[](GpuReading& g) { g.clock_event_reasons = clock_event::kHwThermalSlowdown; },
       {"CLOCKS_THROTTLED_HW"}},
      {[](GpuReading& g) { g.clock_event_reasons = clock_event::kSwPowerCap; },
       {"CLOCKS_THROTTLED_POWER_CAP"}},
      {[](GpuReading& g) {
         g.clock_event_reasons = clock_event::kGpuIdle | clock_event::kSyncBoost;
       },
       {}},
      {[](GpuReading& g) { g.temperature_c = 80; }, {"TEMPERATURE_HIGH"}},
      {[](GpuReading& g) { g.temperature_c = 85; }, {"TEMPERATURE_CRITICAL"}},
      {[](GpuReading& g) { g.pcie_gen_max_link = 4; }, {"PCIE_LINK_DEGRADED"}},
      {[](GpuReading& g) { g.pcie_width_current = 8; }, {"PCIE_LINK_DEGRADED"}},
      {[](GpuReading& g) {
         g.pcie_gen_max_link = 4;
         g.pcie_width_current = 8;
       },
       {"PCIE_LINK_DEGRADED"}},  // one finding per entity, both problems in its message
      {[](GpuReading& g) { g.pcie_gen_current = 1; }, {}},  // idle down-training is normal
      {[](GpuReading& g) { g.nvlink_active = 12; }, {"NVLINK_INACTIVE"}},
      {[](GpuReading& g) {
         g.foreign_processes = 1;
         g.foreign_memory_mib = 500;
       },
       {"FOREIGN_PROCESSES"}},
      {[](GpuReading& g) {
         g.foreign_processes = 2;
         g.foreign_memory_mib = 30000;
       },
       {"FOREIGN_MEMORY_HIGH"}},
      {[](GpuReading& g) {
         g.responsive = false;
         g.probe_error = "did not complete within 10 s";
       },
       {"GPU_UNRESPONSIVE"}},
      {[](GpuReading& g) { g.probe_error = "the check's time ran out before this GPU's turn"; },
       {"GPU_NOT_PROBED"}},
      {[](GpuReading& g) { g.read_errors = {"nvmlDeviceGetTemperature: Unknown Error"}; },
       {"NVML_READ_ERROR"}},
  };
  int n = 0;
  for (const auto& [change, expected] : cases) {
    INFO("case " << n++);
    const auto j = judge_one(change);
    CHECK(judgement_codes(j, "gpu3") == expected);
    CHECK(judgement_codes(j).size() == expected.size());  // nothing on other GPUs or the node
  }
}

TEST_CASE("inventory: NVML's GPU recovery action is the driver's verdict, in its words") {
  const std::vector<std::tuple<int, std::string, std::string, Action>> cases = {
      {1, "GPU_RECOVERY_RESET", "the driver asks for: GPU reset (1)", Action::reset_gpu},
      {2, "GPU_RECOVERY_REBOOT", "the driver asks for: node reboot (2)", Action::reboot},
      {3, "GPU_RECOVERY_RESET", "the driver asks for: drain peer-to-peer (3)", Action::reset_gpu},
      {4, "GPU_RECOVERY_RESET", "the driver asks for: drain and reset (4)", Action::reset_gpu},
      {7, "GPU_RECOVERY_REBOOT", "the driver asks for: recovery action 7 (system reboot)",
       Action::reboot},
      {42, "GPU_RECOVERY_REBOOT", "the driver asks for: recovery action 42", Action::reboot},
  };
  for (const auto& [value, code, message, action] : cases) {
    INFO("recovery action " << value);
    const auto j = judge_one([v = value](GpuReading& g) { g.recovery_action = v; });
    REQUIRE(j.findings.size() == 1);
    CHECK(j.findings[0].code == code);
    CHECK(j.findings[0].entity == "gpu3");
    CHECK(j.findings[0].severity == Severity::fail);
    CHECK(j.findings[0].action == action);
    CHECK(j.findings[0].message == message);
  }
  // 0 (none) and not read (a driver older than the field) are silent.
  CHECK(judge_one([](GpuReading& g) { g.recovery_action = 0; }).findings.empty());
  CHECK(judge_one([](GpuReading& g) { g.recovery_action.reset(); }).findings.empty());
}

TEST_CASE("inventory: findings carry value, unit and threshold") {
  const auto j = judge_one([](GpuReading& g) { g.temperature_c = 90; });
  REQUIRE(j.findings.size() == 1);
  CHECK(*j.findings[0].value == Approx(90));
  CHECK(j.findings[0].unit == "C");
  CHECK(*j.findings[0].threshold == Approx(85));
  const auto pcie = judge_one([](GpuReading& g) {
    g.pcie_gen_max_link = 4;
    g.pcie_width_current = 8;
  });
  CHECK_THAT(pcie.findings[0].message, Catch::Contains("Gen4") && Catch::Contains("x8 of x16"));
}

TEST_CASE("inventory: NVLink is not judged on a single-GPU node") {
  NodeReading n = test::healthy_node(1);
  n.gpus[0].nvlink_active = 0;
  CHECK(judge_inventory(n, h100(), {}).findings.empty());
}

TEST_CASE("inventory: every inventory fault kind is detected end to end on the right entity") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const std::map<std::string, std::string> values = {
      {"ecc-correctable", "100000"}, {"temperature", "95"},    {"pcie-gen", "3"},
      {"pcie-width", "4"},           {"nvlink-down", "6"},     {"foreign-memory", "4096"},
      {"throttle", "hw-slowdown"},   {"recovery-action", "2"},
  };
  int kinds_tested = 0;
  for (const auto& kind : inventory_fault_kinds()) {
    if (kind.targets != std::vector<TargetType>{TargetType::gpu}) continue;
    const auto v = values.find(kind.kind);
    const std::string spec = kind.kind + (v == values.end() ? "" : ":" + v->second) + "@gpu=2";
    INFO(spec);
    const auto plan = plan_checks(registry, Profile::quick, {});
    FaultPlan faults({parse_fault(spec, registry.fault_kinds())});
    test::FakeBackend backend(test::healthy_node(8));
    Verdict skeleton;
    skeleton.injected_faults = {spec};
    RunState state(skeleton, plan, false);
    RunSettings settings;
    settings.threshold_specs = preflight::test::builtin_threshold_specs();
    settings.deadline = SteadyClock::now() + 30s;
    Runner runner(backend.engines(), faults);
    const auto out = runner.run(state, plan, settings);
    REQUIRE(out.invalid.empty());
    const CheckResult& inv = out.verdict.checks.at(0);
    bool found = false;
    for (const auto& f : inv.findings) {
      const bool expected_code =
          std::find(kind.codes.begin(), kind.codes.end(), f.code) != kind.codes.end();
      if (expected_code && (f.entity == "gpu2" || f.entity == "node")) {
        found = true;
        CHECK(f.injected);
      } else {
        INFO("unexpected finding " << f.code << " on " << f.entity);
        CHECK_FALSE(f.injected);
      }
    }
    CHECK(found);
    CHECK(out.verdict.verdict != Status::pass);
    CHECK_THAT(out.verdict.reason, Catch::StartsWith("injected fault: "));
    ++kinds_tested;
  }
  CHECK(kinds_tested >= 18);
}

TEST_CASE("inventory: the probe runs on every GPU CUDA sees, and not on injected ones") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {});
  NodeReading node = test::healthy_node(4);
  node.gpus[1].cuda_ordinal = -1;
  test::FakeBackend backend(node);
  FaultPlan faults({parse_fault("unresponsive@gpu=2", registry.fault_kinds())});
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 30s;
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  CHECK(backend.probes == 2);
  const auto& metrics = out.verdict.checks.at(0).metrics;
  const auto has = [&](const std::string& key) {
    return std::any_of(metrics.begin(), metrics.end(),
                       [&](const Metric& m) { return m.key() == key; });
  };
  CHECK(has("gpu0.probe_ms"));
  CHECK(has("gpu_count"));
  CHECK(has("gpu0.temperature_c"));
}

TEST_CASE("inventory: a GPU whose probe never returns is unresponsive; the others are probed") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {"inventory"});
  test::FakeBackend backend(test::healthy_node(4));
  backend.hang_probe_gpu = 2;
  FaultPlan faults;
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 30s;
  // The probe deadline comes from the thresholds: 1 s instead of 10.
  std::string path = "/tmp/preflight-probe-XXXXXX";
  const int fd = mkstemp(path.data());
  REQUIRE(fd >= 0);
  const std::string doc = "{\"inventory\": {\"probe_timeout_s\": 1}}";
  REQUIRE(write(fd, doc.data(), doc.size()) == static_cast<ssize_t>(doc.size()));
  close(fd);
  settings.thresholds_path = path;
  Runner runner(backend.engines(), faults);
  const auto start = SteadyClock::now();
  const auto out = runner.run(state, plan, settings);
  const double seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  // The probe's 1 s and the grace; a busy machine gets more. Held by the hung probe, the run
  // would last until its deadline (30 s).
  CHECK(seconds < 10.0);
  CHECK(backend.probes == 4);
  const CheckResult& inv = out.verdict.checks.at(0);
  std::vector<std::string> got;
  for (const auto& f : inv.findings) got.push_back(f.code + "@" + f.entity);
  CHECK(got == std::vector<std::string>{"GPU_UNRESPONSIVE@gpu2"});
  CHECK_THAT(inv.findings.at(0).message, Catch::Contains("did not return"));
  CHECK(state.abandoned_threads() == 1);
  backend.release_probes();
  unlink(path.c_str());
}

// Issue 16: the check's share of a short run may end before the probe's own timeout (10 s by
// default). A probe still busy then is unverified (a warning), never "unresponsive" (a failure):
// a driver slow to make contexts must not fail a node because the run was given little time.
TEST_CASE("inventory: a probe cut short by the check's time is GPU_NOT_PROBED, not unresponsive") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {"inventory"});
  test::FakeBackend backend(test::healthy_node(2));
  backend.hang_probe_gpu = 1;
  FaultPlan faults;
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 4s;
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  const CheckResult& inv = out.verdict.checks.at(0);
  std::vector<std::string> got;
  for (const auto& f : inv.findings) got.push_back(f.code + "@" + f.entity);
  CHECK(got == std::vector<std::string>{"GPU_NOT_PROBED@gpu1"});
  REQUIRE_FALSE(inv.findings.empty());
  CHECK_THAT(inv.findings.at(0).message, Catch::Contains("before the probe's 10 s timeout"));
  CHECK(inv.status == Status::warn);
  backend.release_probes();
}

TEST_CASE("inventory: a driver older than the build names both versions and the remedy") {
  NodeReading node = test::healthy_node(2);
  for (auto& g : node.gpus) g.cuda_ordinal = -1;
  node.cuda_device_count = 0;
  node.driver_version = "550.90.07";
  node.cuda_driver_version = 12040;
  node.cuda_driver_required = 13000;
  node.cuda_driver_branch_required = "R580";
  node.cuda_error = "the driver supports CUDA 12.4, this build needs CUDA 13.0";
  const auto j = judge_inventory(node, h100(), NodeExpectations{2});
  // Not CUDA_UNAVAILABLE: the reason is known, and it is the package, not the node.
  CHECK(judgement_codes(j) == Codes{"CUDA_DRIVER_TOO_OLD"});
  REQUIRE(j.findings.size() == 1);
  CHECK(j.findings[0].message ==
        "driver 550.90.07 supports CUDA 12.4, this build needs CUDA 13.0 (driver R580 or newer): "
        "install preflight-cuda12 or NVIDIA cuda-compat-13-0");
  CHECK(status_from_findings(j.findings) == Status::error);

  SECTION("a driver older than any package: update it") {
    node.cuda_driver_version = 11040;
    node.driver_version.clear();
    const auto old = judge_inventory(node, h100(), NodeExpectations{2});
    REQUIRE(old.findings.size() == 1);
    CHECK(old.findings[0].message ==
          "the driver supports CUDA 11.4, this build needs CUDA 13.0 (driver R580 or newer): "
          "update the driver or install NVIDIA cuda-compat-13-0");
  }
  SECTION("new enough, or unknown: no such finding") {
    node.cuda_driver_version = 13000;
    CHECK(judgement_codes(judge_inventory(node, h100(), NodeExpectations{2})) ==
          Codes{"CUDA_UNAVAILABLE"});
    node.cuda_driver_version = 0;
    CHECK(judgement_codes(judge_inventory(node, h100(), NodeExpectations{2})) ==
          Codes{"CUDA_UNAVAILABLE"});
  }
}

TEST_CASE("unit: inventory plan: NVML and a probe per GPU, never reduced") {
  const CheckOptions none;
  WorkRequest r;
  r.profile = Profile::quick;
  r.options = &none;
  const auto planned = [&](int gpus, std::optional<double> seconds = std::nullopt) {
    r.shape.gpus = gpus;
    r.seconds = seconds;
    return plan_inventory_work(r).plan;
  };
  // Nothing to run: the PCI bus and the judgement.
  CHECK(planned(0).expected_s == Approx(0.05));
  CHECK(planned(0).coverage == "no GPU: the PCI bus and the expectations");
  CHECK(planned(1).expected_s == Approx(1.3));
  CHECK(planned(1).coverage == "1 GPU: NVML health and a responsiveness probe each");
  CHECK(planned(8).expected_s == Approx(3.05));
  CHECK(planned(8).coverage == "8 GPUs: NVML health and a responsiveness probe each");
  for (int gpus : {0, 1, 8}) {
    const WorkPlan p = planned(gpus, 0.01);
    CHECK(p.floor_s == p.expected_s);
    CHECK_FALSE(p.reduced);
    CHECK(p.expected_s == Approx(planned(gpus).expected_s));
  }
  // The same for every profile: every GPU is always read and probed.
  r.profile = Profile::burnin;
  CHECK(planned(8).expected_s == Approx(3.05));
}

TEST_CASE("unit: inventory plan: run() records what it covered") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {"inventory"});
  test::FakeBackend backend(test::healthy_node(4));
  FaultPlan faults;
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 30s;
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  const CheckResult& inv = out.verdict.checks.at(0);
  REQUIRE(inv.plan);
  CHECK_FALSE(inv.plan->reduced);
  CHECK(inv.plan->coverage == "4 GPUs: NVML health and a responsiveness probe each");
  // The runner's expected seconds are the model's for the 4 GPUs discovery found.
  const CheckOptions none;
  WorkRequest four;
  four.options = &none;
  four.shape.gpus = 4;
  CHECK(inv.plan->expected_s == Approx(plan_inventory_work(four).plan.expected_s));
}
