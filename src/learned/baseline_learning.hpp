#pragma once
// `preflight baseline` without files (docs/baseline.md): verdicts in, the site limits and a
// summary for people out. The command reads the files, one at a time into a BaselineLearner,
// and writes the thresholds file; everything it decides is here, testable on verdicts built in
// code.
#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "learned/learn_stats.hpp"
#include "preflight/baseline.hpp"
#include "preflight/figures.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// One figure of one group: what was learned, and what its limit says of the nodes it was
// learned from (a limit that fails many of them is not a limit to deploy).
struct FigureOutcome {
  std::string check;   // "gemm"
  std::string entity;  // "gpu3"; empty: the node
  std::string metric;  // "bf16.tflops_median"
  std::string unit;
  LearnedFigure learned;
  int input_nodes = 0;  // nodes that recorded the figure, outliers included
  int input_runs = 0;
  int nodes_below = 0;      // input nodes whose own median is below the limit (learned only)
  int runs_below = 0;       // input runs below the limit
  std::string key() const;  // "gemm gpu3 bf16.tflops_median", as FigureSample::key
};

struct GroupOutcome {
  std::string id;                      // baseline_group_of
  int nodes = 0;                       // hosts with a verdict learned from in the group
  int runs = 0;                        // verdicts learned from in the group
  std::vector<FigureOutcome> figures;  // in the order the verdicts record them
  bool learned = false;                // at least one figure learned
  std::string refusal;                 // why the whole group was refused, when not learned
};

// Why a verdict is not learned from: a drill's or a judge's verdict is no measurement of a
// healthy node, and an unhealthy node's figures are what the limit must catch.
enum class LeftOutReason { injected_faults, rejudged, unhealthy, no_host };
inline constexpr std::size_t kLeftOutReasons = 4;

struct LeftOut {
  int count = 0;
  std::vector<std::string> files;  // the first few, for the summary
};

struct BaselineLearning {
  BaselineLimits limits;             // the learned groups; learned_at is the caller's
  std::vector<GroupOutcome> groups;  // every group, learned or refused, by id
  std::array<LeftOut, kLeftOutReasons> left_out;
  int verdicts = 0;  // given
  int used = 0;      // learned from
  bool learned_any() const { return !limits.groups.empty(); }
};

// Collects verdicts one at a time (a site's verdicts do not all fit in memory whole: only their
// limited figures are kept), then learns every group's limits.
class BaselineLearner {
 public:
  explicit BaselineLearner(FigureCatalogue catalogue);
  // `file`: where the verdict came from, named in the summary when it is left out.
  void add(const std::string& file, const Verdict& verdict);
  // Throws std::invalid_argument for options out of range (learn_figure).
  BaselineLearning learn(const LearnOptions& options) const;

 private:
  struct Value {
    std::size_t run;  // index into started_at_
    double value;
  };
  struct FigureValues {
    std::string check, entity, metric, unit;
    std::map<std::string, std::vector<Value>> by_node;
  };
  struct GroupValues {
    std::map<std::string, int> runs_by_node;
    std::vector<FigureValues> figures;
    std::map<std::string, std::size_t> figure_index;  // FigureSample::key -> figures
  };

  FigureCatalogue catalogue_;
  std::vector<std::string> started_at_;  // per run learned from, to order a node's values
  std::map<std::string, GroupValues> groups_;
  std::array<LeftOut, kLeftOutReasons> left_out_;
  int verdicts_ = 0;
};

// All at once, for callers that hold the verdicts anyway (tests).
BaselineLearning learn_baseline(const std::vector<std::pair<std::string, Verdict>>& verdicts,
                                const FigureCatalogue& catalogue, const LearnOptions& options);

// The summary for people: verdicts left out and why, then per group its nodes and runs and a
// table of its figures (nodes and runs used, median, spreads, the limit, how many of the nodes
// and runs it learned from fall below it, outliers removed), refusals with their reasons.
std::string baseline_summary(const BaselineLearning& learning);

// The thresholds file `preflight baseline` writes: the schema and the "baseline" block. Throws
// std::length_error when it would be larger than a thresholds file may be
// (kThresholdsFileMaxBytes), which run and judge would refuse.
std::string baseline_thresholds_text(const BaselineLimits& limits);

}  // namespace preflight
