#pragma once
// What a check's figures mean outside the check: which of its metrics are key figures in the
// Prometheus exposition, which feed the fleet's straggler statistic, and which the HTML page
// draws as per-GPU bars. Each check declares these in its CheckInfo; the reporters and the fleet
// verdict loop over the declarations (FigureCatalogue) and know no check by name.
#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
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
  std::string unit;  // the unit the metric is recorded in ("GB/s"), which `scale` converts
  // A figure with a limit, higher is better: `preflight baseline` learns a site limit for it
  // from many nodes' verdicts, and `--history` follows it across a node's runs
  // (docs/baseline.md). Each entity's value is its own figure ("gemm", "gpu3",
  // "bf16.tflops_median"), as GPUs and ports sit in different places of a node.
  bool limited = false;
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

// The names of a pattern's "{label}" segments, in order: "{op}.{bytes}.busbw_gbps" -> op, bytes.
std::vector<std::string> pattern_labels(const std::string& pattern);

// How a unit becomes a Prometheus family's base unit: the family's name ends in `suffix` and a
// value is multiplied by `scale` ("GB/s": "_bytes_per_second", 1e9). nullopt for a unit exported
// as it is (counts, TFLOP/s, generations).
struct BaseUnit {
  std::string suffix;
  double scale;
};
std::optional<BaseUnit> base_unit_of(const std::string& unit);

// A figure a check records, declared once in its folder (<check>_figures.cpp): the metric's name
// with its "{label}" segments, the unit it is recorded in and one line of help, and, for a key
// figure, what it is exported as. It is made in named steps rather than positional fields, and
// the check records every value of it through it, so name, labels, unit and export cannot drift
// apart. `LabelCount` is the number of "{label}" segments: a value is recorded with exactly that
// many label values (nvbench's tagged summaries are the model).
template <std::size_t LabelCount>
class Figure {
 public:
  // Throws std::logic_error when `metric` has not exactly LabelCount "{label}" segments.
  Figure(std::string metric, std::string unit, std::string help) {
    spec_.metric = std::move(metric);
    spec_.unit = std::move(unit);
    spec_.help = std::move(help);
    if (pattern_labels(spec_.metric).size() != LabelCount) {
      throw std::logic_error("figure " + spec_.metric + ": expected " + std::to_string(LabelCount) +
                             " {label} segments");
    }
  }
  // Labels from the metric's entity (figures.hpp, FigureExport::entity_labels): "gpu", or two
  // for a pair. None: a figure of the node.
  Figure& per(std::vector<std::string> entity_labels) {
    spec_.entity_labels = std::move(entity_labels);
    return *this;
  }
  Figure& with_fixed(Labels fixed) {
    spec_.fixed_labels = std::move(fixed);
    return *this;
  }
  // A key figure: the Prometheus family, in the base unit of the figure's unit (base_unit_of:
  // the scale follows from the unit, and a family whose name does not end in the base unit is
  // a bug, thrown as std::logic_error).
  Figure& exported_as(std::string family) {
    spec_.family = std::move(family);
    spec_.scale = 1;
    if (const auto base = base_unit_of(spec_.unit)) {
      const std::string& f = spec_.family;
      if (f.size() < base->suffix.size() ||
          f.compare(f.size() - base->suffix.size(), base->suffix.size(), base->suffix) != 0) {
        throw std::logic_error("figure " + spec_.metric + ": family " + f + " of a value in " +
                               spec_.unit + " must end in " + base->suffix);
      }
      spec_.scale = base->scale;
    }
    return *this;
  }
  Figure& limited() {
    spec_.limited = true;
    return *this;
  }
  Figure& feeds(std::string fleet_figure) {
    spec_.fleet_figure = std::move(fleet_figure);
    return *this;
  }

  const std::string& metric() const { return spec_.metric; }
  const std::string& unit() const { return spec_.unit; }
  bool exported() const { return !spec_.family.empty(); }
  const FigureExport& spec() const { return spec_; }

  // The metric for `value` on `entity` ("" for the node), its name's segments filled with
  // `labels` in order.
  Metric operator()(std::string entity, double value,
                    const std::array<std::string, LabelCount>& labels = {}) const {
    Labels named;
    const auto names = pattern_labels(spec_.metric);
    for (std::size_t i = 0; i < LabelCount; ++i) named.emplace_back(names[i], labels[i]);
    return {std::move(entity), with_labels(spec_.metric, named), value, spec_.unit};
  }

 private:
  FigureExport spec_;
};

}  // namespace preflight
