#pragma once
// What the tests of the bandwidth checks' readings (tests/checks/nvlink/, tests/checks/hbm/)
// share: findings written out in full for comparison, the checks run on a fake node and copy
// engine as `run` runs them, and their verdict judged again as `preflight judge` does.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checks/hbm/hbm_check.hpp"
#include "checks/nvlink/nvlink_check.hpp"
#include "run/rejudge.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"

namespace preflight::test::readings {

using namespace std::chrono_literals;
// The helpers of every check's tests, under the names these tests use.
using test::check_of;
using test::codes;
using test::sku;

// Everything a finding says, so two lists compare in full.
inline std::vector<std::string> described(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) {
    std::ostringstream s;
    s << f.code << "|" << f.entity << "|" << to_string(f.severity) << "|" << f.message << "|"
      << (f.value ? std::to_string(*f.value) : "-") << "|" << f.unit << "|"
      << (f.threshold ? std::to_string(*f.threshold) : "-") << "|" << f.injected << "|" << f.judged;
    out.push_back(s.str());
  }
  return out;
}

inline std::vector<Finding> judged_of(const std::vector<Finding>& findings, bool judged = true) {
  std::vector<Finding> out;
  for (const Finding& f : findings) {
    if (f.judged == judged) out.push_back(f);
  }
  return out;
}

struct Run {
  Verdict verdict;
  const CheckResult& check(const std::string& name) const { return check_of(verdict, name); }
};

// The checks run by the runner on a fake node and copy engine, faults parsed as `run` does.
inline Run run_checks(const NodeReading& node, test::FakeBandwidthEngine& engine,
                      const std::vector<std::string>& checks,
                      const std::vector<std::string>& fault_specs = {}) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, checks);
  std::vector<InjectedFault> faults;
  for (const auto& spec : fault_specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan fault_plan(faults);
  test::FakeBackend backend(node);
  backend.bandwidth = &engine;
  Verdict skeleton;
  skeleton.injected_faults = fault_specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 60s;
  Runner runner(backend.engines(), fault_plan);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  return {out.verdict};
}

inline CheckRegistry bandwidth_registry() {
  CheckRegistry registry;
  registry.add(std::make_unique<NvlinkCheck>());
  registry.add(std::make_unique<HbmCheck>());
  return registry;
}

inline Verdict rejudged(const Verdict& v, const Thresholds& thresholds) {
  const CheckRegistry registry = bandwidth_registry();
  RejudgeSettings settings;
  settings.thresholds = &thresholds;
  settings.thresholds_by = "test";
  settings.source = "verdict.json";
  settings.judged_at = "2026-01-01T00:00:00Z";
  settings.fault_kinds = registry.fault_kinds();
  return rejudge(v, registry, settings);
}

}  // namespace preflight::test::readings
