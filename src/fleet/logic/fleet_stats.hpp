#pragma once
// The fleet straggler statistic: which nodes are measurably slower than the rest of the fleet on
// a figure their own checks measured (docs/fleet-verdict.md#the-straggler-statistic).
#include <string>
#include <utility>
#include <vector>

namespace preflight {

// Scales the median absolute deviation to the standard deviation of normally distributed noise,
// so that a multiple of it reads as "k sigmas" of the ordinary spread (here and in
// fleet_speed.hpp).
inline constexpr double kMadToSigma = 1.4826;

// kMadToSigma x the median absolute deviation of the logarithms of `values` (all > 0; 0 for
// none): the robust spread of figures whose noise is a factor (0.1 is about 10%), where a gap is
// not capped at 100%. The fleet rounds' group noise (fleet_speed.cpp) and the host transport's
// error of a group's figure from its own iterations.
double log_spread(const std::vector<double>& values);

struct FigureStraggler {
  int node = 0;  // index into figures_per_node
  std::string figure;
  double value = 0;
  double median = 0;         // the fleet median of the figure
  double percent_below = 0;  // 100 x (median - value) / median
};

// The reference is the median and the spread the median absolute deviation, not the mean and
// standard deviation: a few bad nodes would pull a mean down and widen a standard deviation
// until they no longer stand out, while the median and the MAD do not move as long as fewer
// than half of the nodes are off.
//
// For every figure name (higher is better), over the nodes that report it with a finite value
// (at least 3, else no node is named for it): the median and the MAD scaled by 1.4826 (the
// standard deviation of normal noise). A node is a straggler on the figure when
//   value < median x (1 - min_percent / 100)   (slow enough to matter to a job)  AND
//   median - value > mad_k x scaled MAD         (further off than the fleet's own noise).
// A node reporting a name twice counts with its lower value. Figures whose median is not
// positive are skipped. Sorted by node, then figure name.
std::vector<FigureStraggler> figure_stragglers(
    const std::vector<std::vector<std::pair<std::string, double>>>& figures_per_node,
    double min_percent = 3.0, double mad_k = 3.0);

// "gemm_bf16_tflops 6.2% below the fleet median (723.4 vs 771.2)": a node reason for the
// planner and the report.
std::string describe_straggler(const FigureStraggler& s);

}  // namespace preflight
