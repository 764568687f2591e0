#pragma once
// The limits learned from the fleet (a thresholds file's baseline) and from the node's own
// history applied to a verdict, after its checks were judged: by `run` on the verdict it is about
// to deliver and by `judge` on the verdict it made again, through this one function, so that
// both say the same (docs/baseline.md).
#include "learned/history.hpp"
#include "preflight/baseline.hpp"
#include "preflight/figures.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

struct LearnedInputs {
  const BaselineLimits* baseline = nullptr;  // Thresholds::baseline(); nullptr: none given
  const History* history = nullptr;          // --history; nullptr: not given
  HistoryOptions options;
};

// The figures of the verdict below its baseline group's limits, judged, one per figure and
// entity: FIGURE_BELOW_BASELINE. With the node's history, only a figure below the limit in a
// majority of the last `window` runs (judge_below_baseline) is; one below it in this run alone
// is FIGURE_BELOW_BASELINE_ONCE (info): one bad run is not a slow node. Without a history
// nothing tells the two apart, and every run below the limit fails.
std::vector<Finding> baseline_findings(const Verdict& verdict, const BaselineGroup& group,
                                       const FigureCatalogue& catalogue, const History* history,
                                       int window);

// Drops the learned findings the verdict carries (a verdict judged again makes them anew),
// adds the baseline's and the history's, records what was applied (Verdict::learned) and
// aggregates the verdict again. Without a baseline and a history the verdict is only cleared of
// recorded learned findings and re-aggregated when it had any.
void apply_learned(Verdict& verdict, const FigureCatalogue& catalogue, const LearnedInputs& inputs,
                   bool strict);

}  // namespace preflight
