// `preflight baseline` without files (src/learned/baseline_learning.hpp): verdicts grouped by
// node shape, unhealthy, drill and re-judged runs left out, a group with too few nodes refused,
// and the summary people read.
#include <catch2/catch.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "learned/baseline_learning.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_figures.hpp"

using namespace preflight;

namespace {

using BlearnVerdicts = std::vector<std::pair<std::string, Verdict>>;

std::string blearn_time(int day, int minute) {
  char text[32];
  std::snprintf(text, sizeof text, "2026-11-%02dT10:%02d:00Z", day, minute);
  return text;
}

// A healthy run of one node: two GPUs' bf16 GEMM speed and the node's slowest NVLink pair.
Verdict blearn_verdict(const std::string& host, const std::string& started_at,
                       const std::string& shape, double tflops, double nvlink_gbps = 370) {
  Verdict v;
  v.host = host;
  v.started_at = started_at;
  v.thresholds = ThresholdsRecord{};
  v.thresholds->sku = "h100-sxm5-80gb";
  v.thresholds->node_shape = shape;
  CheckResult gemm;
  gemm.name = "gemm";
  gemm.add_metric("gpu0", "bf16.tflops_median", tflops, "TFLOP/s");
  gemm.add_metric("gpu1", "bf16.tflops_median", tflops * 1.002, "TFLOP/s");
  gemm.add_metric("gpu0", "bf16.tflops_min", tflops * 0.9, "TFLOP/s");  // no limit
  CheckResult nvlink;
  nvlink.name = "nvlink";
  nvlink.add_metric("", "unidirectional_min_gbps", nvlink_gbps, "GB/s");
  v.checks = {gemm, nvlink};
  return v;
}

// A little spread between nodes (distinct offsets within 1%) and between runs (within 0.2%),
// the same in every test run. Offsets that repeat would be a quantized figure, whose spread
// between nodes reads as nearly 0.
double blearn_value(int node, int run, double base) {
  const double node_offset = 0.01 * (((node * 37) % 13) / 6.0 - 1);
  const double run_noise = 0.002 * (((node * 5 + run * 7) % 11) / 5.0 - 1);
  return base * (1 + node_offset + run_noise);
}

// `nodes` healthy nodes of one shape, `runs` runs each.
void blearn_add_fleet(BlearnVerdicts& out, const std::string& shape, const std::string& prefix,
                      int nodes, int runs, double base = 700) {
  for (int n = 0; n < nodes; ++n) {
    for (int r = 0; r < runs; ++r) {
      const std::string host = prefix + std::to_string(n);
      out.emplace_back(
          host + "-" + std::to_string(r) + ".json",
          blearn_verdict(host, blearn_time(1 + r, n), shape, blearn_value(n, r, base)));
    }
  }
}

const FigureOutcome* blearn_figure(const GroupOutcome& group, const std::string& key) {
  for (const FigureOutcome& f : group.figures) {
    if (f.key() == key) return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("baseline learning: groups by node shape, leaves out what is no healthy measurement",
          "[baseline]") {
  BlearnVerdicts verdicts;
  blearn_add_fleet(verdicts, "hgx-h100", "node", 12, 3);
  // One slow node: an outlier, removed, and below the limit.
  for (int r = 0; r < 3; ++r) {
    verdicts.emplace_back("slow-" + std::to_string(r) + ".json",
                          blearn_verdict("slow", blearn_time(1 + r, 50), "hgx-h100", 560));
  }
  Verdict unhealthy = blearn_verdict("node0", blearn_time(9, 0), "hgx-h100", 100);
  unhealthy.verdict = Status::fail;
  unhealthy.exit_code = kExitUnhealthy;
  Verdict drill = blearn_verdict("node1", blearn_time(9, 1), "hgx-h100", 700);
  drill.injected_faults = {"gemm-slow:0.5@gpu=0"};
  drill.exit_code = kExitUnhealthy;  // left out as a drill, counted once
  Verdict rejudged = blearn_verdict("node2", blearn_time(9, 2), "hgx-h100", 700);
  rejudged.rejudged = RejudgeRecord{};
  verdicts.emplace_back("bad-a.json", unhealthy);
  verdicts.emplace_back("bad-b.json", unhealthy);
  verdicts.emplace_back("drill.json", drill);
  verdicts.emplace_back("judged.json", rejudged);
  // Another shape with too few nodes.
  blearn_add_fleet(verdicts, "aws-p5.48xlarge", "p5-", 4, 2);

  const BaselineLearning learning =
      learn_baseline(verdicts, test::builtin_figures(), LearnOptions{});
  INFO(baseline_summary(learning));
  CHECK(learning.verdicts == static_cast<int>(verdicts.size()));
  CHECK(learning.used == 12 * 3 + 3 + 4 * 2);
  CHECK(learning.limits.verdicts == learning.verdicts);
  const auto count = [&](LeftOutReason r) {
    return learning.left_out[static_cast<std::size_t>(r)].count;
  };
  CHECK(count(LeftOutReason::unhealthy) == 2);
  CHECK(count(LeftOutReason::injected_faults) == 1);
  CHECK(count(LeftOutReason::rejudged) == 1);
  CHECK(count(LeftOutReason::no_host) == 0);

  REQUIRE(learning.groups.size() == 2);
  const GroupOutcome& p5 = learning.groups[0];  // by id
  const GroupOutcome& hgx = learning.groups[1];
  CHECK(p5.id == "aws-p5.48xlarge");
  CHECK_FALSE(p5.learned);
  CHECK(p5.nodes == 4);
  CHECK(p5.runs == 8);
  CHECK_THAT(p5.refusal, Catch::Contains("4 nodes"));
  CHECK(hgx.id == "hgx-h100");
  CHECK(hgx.learned);
  CHECK(hgx.nodes == 13);
  CHECK(hgx.runs == 39);

  REQUIRE(learning.learned_any());
  REQUIRE(learning.limits.groups.size() == 1);
  const BaselineGroup& limits = learning.limits.groups[0];
  CHECK(limits.id == "hgx-h100");
  REQUIRE(limits.figures.size() == 3);  // two GPUs' GEMM and the NVLink figure; no tflops_min
  const FigureBaseline* gpu0 = limits.find("gemm", "gpu0", "bf16.tflops_median");
  REQUIRE(gpu0 != nullptr);
  CHECK(gpu0->unit == "TFLOP/s");
  CHECK(gpu0->nodes == 12);
  CHECK(gpu0->runs == 36);
  CHECK(gpu0->median == Approx(700).epsilon(0.01));
  CHECK(gpu0->limit < gpu0->median * 0.951);
  CHECK(gpu0->limit > 560);
  CHECK(limits.find("nvlink", "", "unidirectional_min_gbps") != nullptr);

  const FigureOutcome* outcome = blearn_figure(hgx, "gemm gpu0 bf16.tflops_median");
  REQUIRE(outcome != nullptr);
  CHECK(outcome->learned.removed == std::vector<std::string>{"slow"});
  CHECK(outcome->input_nodes == 13);
  CHECK(outcome->input_runs == 39);
  CHECK(outcome->nodes_below == 1);
  CHECK(outcome->runs_below == 3);
}

TEST_CASE("baseline learning: the summary lists groups, figures, refusals and what was left out",
          "[baseline]") {
  BlearnVerdicts verdicts;
  blearn_add_fleet(verdicts, "hgx-h100", "node", 12, 2);
  for (std::size_t i = 0; i < 5; ++i) {  // a figure only 5 nodes recorded: refused
    CheckResult nccl;
    nccl.name = "nccl";
    nccl.add_metric("", "allgather.1048576.busbw_gbps", 120, "GB/s");
    verdicts[i * 2].second.checks.push_back(nccl);
  }
  for (int n = 0; n < 7; ++n) {  // more outliers than the summary names
    const std::string host = "slow" + std::to_string(n);
    verdicts.emplace_back(host + ".json",
                          blearn_verdict(host, blearn_time(3, n), "hgx-h100", 400 + 10 * n, 370));
  }
  for (int i = 0; i < 5; ++i) {
    Verdict bad = blearn_verdict("node0", blearn_time(8, i), "hgx-h100", 100);
    bad.exit_code = kExitUnhealthy;
    verdicts.emplace_back("bad" + std::to_string(i) + ".json", bad);
  }
  blearn_add_fleet(verdicts, "", "plain", 3, 1);  // no shape: grouped by SKU

  const BaselineLearning learning =
      learn_baseline(verdicts, test::builtin_figures(), LearnOptions{});
  const std::string summary = baseline_summary(learning);
  INFO(summary);
  CHECK_THAT(summary, Catch::Contains("Learned from 34 of 39 verdicts"));
  CHECK_THAT(summary, Catch::Contains("5 unhealthy runs left out: bad0.json, bad1.json, "
                                      "bad2.json and 2 more"));
  CHECK_THAT(summary, Catch::Contains("Group hgx-h100: 19 nodes, 31 runs; 3 figures learned, 1 "
                                      "refused"));
  CHECK_THAT(summary, Catch::Contains("Group sku:h100-sxm5-80gb: 3 nodes, 3 runs: refused: "));
  for (const char* column : {"figure", "nodes", "runs", "median", "node spread", "run spread",
                             "limit", "below limit", "outliers removed"}) {
    CHECK_THAT(summary, Catch::Contains(column));
  }
  // The GEMM figures lost 7 slow nodes, named up to 5.
  CHECK_THAT(summary, Catch::Contains("slow0, slow1, slow2, slow3, slow4 and 2 more"));
  CHECK_THAT(summary, Catch::Contains(" TFLOP/s"));
  CHECK_THAT(summary, Catch::Contains("%"));
  CHECK_THAT(summary, Catch::Contains("7/19 nodes, 7/31 runs"));
  // Every node measured NVLink alike: nothing removed, and no node below its limit.
  CHECK_THAT(summary, Catch::Contains("0/19 nodes, 0/31 runs"));
  CHECK_THAT(summary, Catch::Contains("refused: nccl allgather.1048576.busbw_gbps: 5 nodes"));
}

TEST_CASE("baseline learning: a node's runs are taken in the order they started", "[baseline]") {
  // Each node's four runs are a, a, b, b in time. Given as a, b, a, b, successive differences
  // would be all |b - a|; in time order their median is 0, and so is the run spread.
  BlearnVerdicts verdicts;
  for (int n = 0; n < 10; ++n) {
    const std::string host = "n" + std::to_string(n);
    const double a = 700 + n;
    const double b = a * 1.02;
    const std::vector<std::pair<int, double>> given = {{1, a}, {3, b}, {2, a}, {4, b}};
    for (const auto& [day, value] : given) {
      verdicts.emplace_back(host + "-" + std::to_string(day) + ".json",
                            blearn_verdict(host, blearn_time(day, 0), "hgx-h100", value));
    }
  }
  const BaselineLearning learning =
      learn_baseline(verdicts, test::builtin_figures(), LearnOptions{});
  REQUIRE(learning.limits.groups.size() == 1);
  const FigureBaseline* f = learning.limits.groups[0].find("gemm", "gpu0", "bf16.tflops_median");
  REQUIRE(f != nullptr);
  CHECK(f->runs == 40);
  CHECK(f->run_spread == 0);
}

TEST_CASE("baseline learning: nothing learnable is refused with the reason", "[baseline]") {
  BlearnVerdicts verdicts;
  Verdict inventory_only;
  inventory_only.host = "cpu0";
  inventory_only.started_at = blearn_time(1, 0);
  CheckResult inventory;
  inventory.name = "inventory";
  inventory.add_metric("gpu0", "temperature_c", 40, "C");
  inventory_only.checks = {inventory};
  verdicts.emplace_back("cpu0.json", inventory_only);
  Verdict hostless = blearn_verdict("", blearn_time(1, 1), "hgx-h100", 700);
  verdicts.emplace_back("hostless.json", hostless);

  const BaselineLearning learning =
      learn_baseline(verdicts, test::builtin_figures(), LearnOptions{});
  CHECK_FALSE(learning.learned_any());
  CHECK(learning.left_out[static_cast<std::size_t>(LeftOutReason::no_host)].count == 1);
  REQUIRE(learning.groups.size() == 1);
  CHECK(learning.groups[0].id == "generic");
  CHECK_THAT(learning.groups[0].refusal, Catch::Contains("no figure with a limit"));
  const std::string summary = baseline_summary(learning);
  CHECK_THAT(summary, Catch::Contains("1 verdict without a host left out: hostless.json"));
  CHECK_THAT(summary, Catch::Contains("Group generic: 1 node, 1 run: refused: "));

  const BaselineLearning none = learn_baseline({}, test::builtin_figures(), LearnOptions{});
  CHECK_FALSE(none.learned_any());
  CHECK_THAT(baseline_summary(none), Catch::Contains("No verdict to learn from"));
}

TEST_CASE("baseline learning: a repeated run counts once, by its reported pass", "[baseline]") {
  BlearnVerdicts verdicts;
  blearn_add_fleet(verdicts, "hgx-h100", "node", 10, 1);
  for (auto& [file, verdict] : verdicts) {
    (void)file;
    PassRecord pass;
    pass.checks = verdict.checks;
    verdict.passes = {pass, pass, pass};
    verdict.burnin = BurninInfo{};
  }
  const BaselineLearning learning =
      learn_baseline(verdicts, test::builtin_figures(), LearnOptions{});
  REQUIRE(learning.groups.size() == 1);
  CHECK(learning.groups[0].runs == 10);
  REQUIRE(learning.limits.groups.size() == 1);
  CHECK(learning.limits.groups[0].figures.at(0).runs == 10);
}

TEST_CASE("baseline learning: the thresholds file is the schema and the block, within the bound",
          "[baseline]") {
  BlearnVerdicts verdicts;
  blearn_add_fleet(verdicts, "hgx-h100", "node", 10, 2);
  const BaselineLearning learning =
      learn_baseline(verdicts, test::builtin_figures(), LearnOptions{});
  REQUIRE(learning.learned_any());
  const auto document = nlohmann::ordered_json::parse(baseline_thresholds_text(learning.limits));
  CHECK(document.at("schema") == std::string(kThresholdsSchema));
  const BaselineLimits back = baseline_from_json(document.at("baseline"));
  REQUIRE(back.groups.size() == learning.limits.groups.size());
  CHECK(back.groups[0].figures.size() == learning.limits.groups[0].figures.size());

  // A site's every shape and figure at once can outgrow what run and judge read: refused, so
  // that nothing unusable is written. 6,000 figures of about 250 bytes are over 1 MiB.
  BaselineLimits huge = learning.limits;
  const FigureBaseline figure = huge.groups[0].figures.at(0);
  for (int group = 0; group < 60; ++group) {
    BaselineGroup more;
    more.id = "shape-" + std::to_string(group);
    for (int i = 0; i < 100; ++i) {
      more.figures.push_back(figure);
      more.figures.back().entity = "gpu" + std::to_string(i);
    }
    huge.groups.push_back(more);
  }
  CHECK_THROWS_AS(baseline_thresholds_text(huge), std::length_error);
}
