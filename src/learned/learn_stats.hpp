#pragma once
// Site limits learned from many nodes (docs/baseline.md, "The statistics"): robust statistics
// over each node's runs of one figure, faulty nodes removed until the median is stable, and a
// fail limit far enough below the median that a healthy node's run rarely crosses it. Pure
// functions of numbers: `preflight baseline` feeds them verdicts, the simulation
// (tests/learned/test_baseline_simulation.cpp) feeds them generated nodes.
#include <string>
#include <vector>

namespace preflight {

// One node's values of one figure (one entity's), a value per run, oldest first.
struct NodeRuns {
  std::string node;
  std::vector<double> values;
};

struct LearnOptions {
  int min_nodes = 10;             // fewer nodes (after removal) in a group: refused
  double drop = 0.05;             // the limit is at least this fraction below the median
  double noise_multiple = 4.0;    // ... and at least this many spreads of one run below it
  double outlier_multiple = 3.5;  // a node this many node spreads from the median is removed
  int max_iterations = 20;
};

struct LearnedFigure {
  bool learned = false;
  std::string refusal;     // why not learned ("8 nodes, 10 needed"), when not learned
  double median = 0;       // of the kept nodes' own medians
  double node_spread = 0;  // relative robust spread (1.4826 MAD / median) between nodes
  // Relative robust spread of one run about its node's level: 1.4826 / sqrt(2) x the median
  // of |successive runs' difference| / node median, pooled over the kept nodes with 2 runs or
  // more (learn_stats.cpp says why not the deviations about the node's median).
  double run_spread = 0;
  // Fail below: median x (1 - max(drop, noise_multiple x sqrt(node_spread^2 + run_spread^2))),
  // never below 0: one run of a healthy node sits off the median by both spreads together.
  double limit = 0;
  int nodes = 0;                     // nodes kept
  int runs = 0;                      // runs of the kept nodes
  std::vector<std::string> removed;  // nodes removed as outliers, in the order given
};

// Values that are not finite or not above 0 are left out; a node left with none is ignored.
// Each pass takes the median M of the node medians and their spread S = 1.4826 MAD / M, and
// removes the nodes more than outlier_multiple x max(S, 0.1%) from M (relative), until a pass
// removes none or max_iterations. Throws std::invalid_argument for options out of range
// (min_nodes < 3, drop outside 0..0.9, noise_multiple or outlier_multiple not above 0,
// max_iterations < 1).
LearnedFigure learn_figure(const std::vector<NodeRuns>& nodes, const LearnOptions& options);

}  // namespace preflight
