#pragma once
// Site limits learned from the fleet (`preflight baseline`, docs/baseline.md): the "baseline"
// block of a thresholds file. Each group (a node shape, else a SKU) holds one limit per figure
// and entity; `run` and `judge` fail a figure below its group's limit (FIGURE_BELOW_BASELINE),
// on top of every limit the checks apply themselves, so a baseline never loosens a datasheet
// limit.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/verdict.hpp"

namespace preflight {

struct FigureBaseline {
  std::string check;       // "gemm"
  std::string entity;      // "gpu3"; empty: the node
  std::string metric;      // "bf16.tflops_median"
  std::string unit;        // "TFLOP/s"
  double median = 0;       // of the nodes kept
  double node_spread = 0;  // relative, between nodes
  double run_spread = 0;   // relative, a node's runs about its own median
  double limit = 0;        // fail below
  int nodes = 0;           // nodes the figure was learned from
  int runs = 0;
};

struct BaselineGroup {
  std::string id;  // "hgx-h100", "aws-p5.48xlarge", "sku:h100-sxm5-80gb"
  std::vector<FigureBaseline> figures;
  const FigureBaseline* find(const std::string& check, const std::string& entity,
                             const std::string& metric) const;
};

struct BaselineLimits {
  std::string learned_at;  // UTC ISO-8601
  int verdicts = 0;        // verdict files read
  std::vector<BaselineGroup> groups;
  const BaselineGroup* find(const std::string& id) const;
};

// The group a verdict belongs to: its recorded node shape, else "sku:" and its SKU, else
// "generic".
std::string baseline_group_of(const Verdict& verdict);

// The "baseline" block of a thresholds file. Throws InvalidInput "baseline.groups[0].figures[3].
// limit: ..." naming the field (the caller prefixes the file).
BaselineLimits baseline_from_json(const nlohmann::ordered_json& block);
nlohmann::ordered_json baseline_to_json(const BaselineLimits& limits);

}  // namespace preflight
