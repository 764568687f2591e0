#pragma once
// What a check's figures mean outside the check: which of its metrics are key figures in the
// Prometheus exposition, which feed the fleet's straggler statistic, and which the HTML page
// draws as per-GPU bars. Each check declares these in its CheckInfo; the reporters and the fleet
// verdict loop over the declarations (FigureCatalogue) and know no check by name.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "preflight/verdict.hpp"

namespace preflight {

using Labels = std::vector<std::pair<std::string, std::string>>;

// One metric family a check exports.
struct FigureExport {
  // The Metric::name it matches, segment by segment between dots; a segment "{label}" matches any
  // one segment and becomes that label: "{dtype}.tflops_median" matches "bf16.tflops_median".
  std::string metric;
  // Labels from the metric's entity: none (a node figure), one ("gpu": the GPU's index, from
  // "gpu3"; any other name: the entity as it is), or two for a pair entity "a-b" (src, dst).
  std::vector<std::string> entity_labels;
  Labels fixed_labels;  // labels every sample of this export carries ({"direction", "h2d"})
  std::string family;   // Prometheus name, in base units: "preflight_gemm_tflops"
  double scale = 1;     // the metric's unit to the family's base unit (GB/s -> bytes/s: 1e9)
  std::string help;     // one line for # HELP
  // The fleet figure it feeds (higher is better; a node counts its slowest entity), with
  // "{label}" replaced by the label's value: "gemm_{dtype}_tflops". Empty: none.
  std::string fleet_figure;
};

// Per-GPU bars on the HTML page: one group of bars per value of `group_label`, a bar per GPU from
// the median metric, a range from min to max, a dashed line at the node's figure.
struct BarChartSpec {
  std::string title;        // "GEMM speed per GPU"
  std::string legend;       // one paragraph under the title
  std::string group_label;  // "dtype"
  std::string median;       // metric names with the group's segment: "{dtype}.tflops_median"
  std::string min;
  std::string max;
  std::string node;  // a node-level metric: "{dtype}.node_median_tflops"
  std::string unit;  // "TFLOP/s"
};

// The declarations of one check, as the reporters receive them.
struct CheckFigures {
  std::string check;
  std::vector<FigureExport> exports;
  std::optional<BarChartSpec> bars;
};
using FigureCatalogue = std::vector<CheckFigures>;

// The declarations of the check named `check`; nullptr when it declares none.
const CheckFigures* figures_of(const FigureCatalogue& catalogue, const std::string& check);

// The labels of `metric` under `figure` (entity labels, fixed labels, then the name's
// "{label}" segments in order); nullopt when the export does not match the metric.
std::optional<Labels> figure_labels(const FigureExport& figure, const Metric& metric);

// Matches a metric name against a pattern with "{label}" segments; the captured labels in order.
std::optional<Labels> match_metric_name(const std::string& pattern, const std::string& name);

// `pattern` with every "{label}" replaced by the label's value.
std::string with_labels(std::string pattern, const Labels& labels);

}  // namespace preflight
