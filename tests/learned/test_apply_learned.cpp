// apply_learned (src/learned/apply_learned.hpp): the baseline's limits fail a figure below them
// on its entity, a verdict judged again sheds the learned findings it carried and makes them
// anew, and without a baseline or a history nothing is added; with a history, one run below the
// baseline is one bad run, noted, and a second fails.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "learned/apply_learned.hpp"
#include "preflight/check.hpp"

namespace preflight {
namespace {

FigureCatalogue applied_catalogue() {
  CheckRegistry registry;
  register_builtin_checks(registry);
  return registry.figure_catalogue();
}

// A healthy node of shape hgx-h100 whose gemm check measured `tflops` on each of four GPUs.
Verdict applied_node(const std::vector<double>& tflops) {
  Verdict v;
  v.host = "node007";
  v.started_at = "2026-11-28T01:00:00Z";
  ThresholdsRecord t;
  t.sku = "h100-sxm5-80gb";
  t.node_shape = "hgx-h100";
  v.thresholds = t;
  CheckResult gemm;
  gemm.name = "gemm";
  for (std::size_t i = 0; i < tflops.size(); ++i) {
    gemm.add_metric("gpu" + std::to_string(i), "bf16.tflops_median", tflops[i], "TFLOP/s");
    // Not a limited figure: never judged against a baseline.
    gemm.add_metric("gpu" + std::to_string(i), "bf16.tflops_min", 1, "TFLOP/s");
  }
  v.checks.push_back(gemm);
  aggregate(v, false);
  return v;
}

BaselineLimits applied_baseline() {
  BaselineGroup group;
  group.id = "hgx-h100";
  for (int i = 0; i < 4; ++i) {
    FigureBaseline f;
    f.check = "gemm";
    f.entity = "gpu" + std::to_string(i);
    f.metric = "bf16.tflops_median";
    f.unit = "TFLOP/s";
    f.median = 750;
    f.limit = 712.5;
    f.nodes = 40;
    group.figures.push_back(f);
  }
  BaselineLimits limits;
  limits.groups.push_back(group);
  return limits;
}

}  // namespace

TEST_CASE("learned limits: a figure below its group's baseline fails on its entity") {
  const FigureCatalogue catalogue = applied_catalogue();
  const BaselineLimits baseline = applied_baseline();
  LearnedInputs inputs;
  inputs.baseline = &baseline;

  // 5.5% slow on every GPU: no datasheet limit nor the node's own median sees it.
  Verdict slow = applied_node({708, 709, 706, 710});
  apply_learned(slow, catalogue, inputs, false);
  CHECK(slow.exit_code == kExitUnhealthy);
  REQUIRE(slow.findings.size() == 4);
  for (const Finding& f : slow.findings) {
    CHECK(f.code == "FIGURE_BELOW_BASELINE");
    CHECK(f.judged);
    CHECK_FALSE(f.injected);
    CHECK(f.severity == Severity::fail);
    REQUIRE(f.threshold.has_value());
    CHECK(*f.threshold == 712.5);
    CHECK_THAT(f.message, Catch::Contains("gemm gpu") && Catch::Contains("bf16.tflops_median") &&
                              Catch::Contains("hgx-h100"));
  }
  CHECK(slow.findings[2].entity == "gpu2");
  REQUIRE(slow.learned.has_value());
  CHECK(slow.learned->baseline_group == "hgx-h100");
  CHECK(slow.learned->baseline_found);
  CHECK(slow.learned->baseline_figures == 4);

  // A healthy node passes, and the record says it was judged.
  Verdict healthy = applied_node({748, 752, 745, 751});
  apply_learned(healthy, catalogue, inputs, false);
  CHECK(healthy.exit_code == kExitHealthy);
  CHECK(healthy.findings.empty());
  CHECK(healthy.learned->baseline_figures == 4);

  // Another shape: the baseline has no group for it, and says so.
  Verdict other = applied_node({600, 600, 600, 600});
  other.thresholds->node_shape = "hgx-h200";
  apply_learned(other, catalogue, inputs, false);
  CHECK(other.findings.empty());
  CHECK(other.learned->baseline_group == "hgx-h200");
  CHECK_FALSE(other.learned->baseline_found);
  CHECK(other.learned->baseline_figures == 0);
}

TEST_CASE("learned limits: judged again, recorded learned findings are made anew or dropped") {
  const FigureCatalogue catalogue = applied_catalogue();
  const BaselineLimits baseline = applied_baseline();
  LearnedInputs inputs;
  inputs.baseline = &baseline;
  Verdict v = applied_node({708, 752, 745, 751});
  apply_learned(v, catalogue, inputs, false);
  REQUIRE(v.findings.size() == 1);
  // Twice: still one finding, not two.
  apply_learned(v, catalogue, inputs, false);
  CHECK(v.findings.size() == 1);
  CHECK(v.exit_code == kExitUnhealthy);
  // Without a baseline (judge given none): the learned finding goes, the node is healthy again,
  // and no record is left.
  apply_learned(v, catalogue, LearnedInputs{}, false);
  CHECK(v.findings.empty());
  CHECK(v.exit_code == kExitHealthy);
  CHECK_FALSE(v.learned.has_value());
}

TEST_CASE("learned limits: a drill that slowed the check marks the baseline's finding injected") {
  const FigureCatalogue catalogue = applied_catalogue();
  const BaselineLimits baseline = applied_baseline();
  LearnedInputs inputs;
  inputs.baseline = &baseline;
  Verdict v = applied_node({600, 752, 745, 751});
  Finding drill = make_finding(runner_findings(), "CHECK_ERROR", "gpu0", "drilled");
  drill.injected = true;
  v.checks[0].findings.push_back(drill);
  v.injected_faults = {"gemm-slow:0.8@gpu=0"};
  apply_learned(v, catalogue, inputs, false);
  REQUIRE(v.findings.size() == 1);
  CHECK(v.findings[0].injected);
}

TEST_CASE("learned limits: with a history, one run below the baseline is noted, two fail") {
  const FigureCatalogue catalogue = applied_catalogue();
  const BaselineLimits baseline = applied_baseline();
  History history;
  history.dir = "/var/lib/preflight/history";
  const auto earlier = [](const char* started, const std::vector<double>& tflops) {
    Verdict v = applied_node(tflops);
    v.started_at = started;
    return HistoryRun{std::string(started) + ".json", v};
  };
  history.runs.push_back(earlier("2026-11-27T01:00:00Z", {748, 751, 749, 752}));
  history.runs.push_back(earlier("2026-11-27T13:00:00Z", {750, 747, 753, 749}));
  LearnedInputs inputs;
  inputs.baseline = &baseline;
  inputs.history = &history;

  // GPU 2 dips once, its runs before above the limit: one bad run, noted, the run passes.
  Verdict dip = applied_node({749, 750, 690, 751});
  apply_learned(dip, catalogue, inputs, false);
  CHECK(dip.exit_code == kExitHealthy);
  REQUIRE(dip.findings.size() == 1);
  CHECK(dip.findings[0].code == "FIGURE_BELOW_BASELINE_ONCE");
  CHECK(dip.findings[0].severity == Severity::info);
  CHECK(dip.findings[0].entity == "gpu2");
  CHECK_THAT(dip.findings[0].message, Catch::Contains("in 1 of the node's last 3 runs"));

  // That run in the history, and GPU 2 below the limit again: the node, and it fails.
  history.runs.push_back(earlier("2026-11-28T00:00:00Z", {749, 750, 690, 751}));
  Verdict again = applied_node({750, 748, 695, 752});
  apply_learned(again, catalogue, inputs, false);
  CHECK(again.exit_code == kExitUnhealthy);
  bool failed = false;
  for (const Finding& f : again.findings) {
    if (f.code != "FIGURE_BELOW_BASELINE") continue;
    failed = true;
    CHECK(f.entity == "gpu2");
    CHECK_THAT(f.message, Catch::Contains("in 2 of the node's last 3 runs"));
  }
  CHECK(failed);

  // A node with no run of its own yet: one run below the limit is one bad run too.
  History empty;
  empty.dir = history.dir;
  inputs.history = &empty;
  Verdict first = applied_node({749, 750, 690, 751});
  apply_learned(first, catalogue, inputs, false);
  CHECK(first.exit_code == kExitHealthy);
  REQUIRE(first.findings.size() == 1);
  CHECK(first.findings[0].code == "FIGURE_BELOW_BASELINE_ONCE");
}

}  // namespace preflight
