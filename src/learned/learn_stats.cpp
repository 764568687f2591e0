// A site limit for one figure learned from many nodes' runs (learn_stats.hpp). Medians and
// median absolute deviations throughout: a few faulty nodes, or one node's bad run, must not
// move the limit, and a mean or a standard deviation would let them.
#include "learned/learn_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/stats.hpp"

namespace preflight {

namespace {

// 1 / Phi^-1(3/4): the median absolute deviation of a normal sample times this is its standard
// deviation, so the spreads read as "one sigma" whatever the data.
constexpr double kLearnMadToSigma = 1.4826;

// The relative spread the outlier cut never goes below. A fleet whose node medians all agree
// to the last digit (a synthetic one, or a figure that is quantized) has a spread of 0, and
// without a floor every node a hair away from the median would be removed. 0.1% is far below
// any real figure's spread between nodes (about 1% for GEMM).
constexpr double kLearnMinOutlierSpread = 0.001;

struct LearnNode {
  std::size_t input_index = 0;  // where the node is in the caller's list
  double median = 0;            // of its usable runs
  std::vector<double> values;   // its usable runs
};

bool learn_usable(double value) {
  return std::isfinite(value) && value > 0;
}

double learn_median(std::vector<double> values) {
  return summarize(std::move(values)).median;
}

// 1.4826 x MAD / median of the node medians: the relative spread between nodes.
double learn_relative_spread(const std::vector<double>& medians, double center) {
  std::vector<double> deviations;
  deviations.reserve(medians.size());
  for (const double m : medians) deviations.push_back(std::fabs(m - center));
  return kLearnMadToSigma * learn_median(std::move(deviations)) / center;
}

void learn_check_options(const LearnOptions& options) {
  if (options.min_nodes < 3) {
    throw std::invalid_argument("learn options: min_nodes must be at least 3, not " +
                                std::to_string(options.min_nodes));
  }
  // Written so that NaN fails every test.
  if (!(options.drop >= 0 && options.drop <= 0.9)) {
    throw std::invalid_argument("learn options: drop must be within 0..0.9");
  }
  if (!(options.noise_multiple > 0)) {
    throw std::invalid_argument("learn options: noise_multiple must be above 0");
  }
  if (!(options.outlier_multiple > 0)) {
    throw std::invalid_argument("learn options: outlier_multiple must be above 0");
  }
  if (options.max_iterations < 1) {
    throw std::invalid_argument("learn options: max_iterations must be at least 1");
  }
}

// The spread of one run about its node's level, pooled over the kept nodes with at least two
// runs (one run says nothing of a node's noise); 0 when there are none. It is taken from the
// differences of successive runs, |v[i+1] - v[i]| / node median: such a difference spreads
// sqrt(2) times one run, so 1.4826 / sqrt(2) x their median is one run's sigma whatever the
// number of runs. The deviations about the node's own median would read low: the median is
// fitted to the very runs it is compared with (with 5 runs a node, 0.72% for a true 1%, as
// one of the five deviations is always 0). Successive differences also leave out a slow
// drift of the node, which is not run-to-run noise.
double learn_run_spread(const std::vector<LearnNode>& kept) {
  std::vector<double> differences;
  for (const LearnNode& n : kept) {
    for (std::size_t i = 1; i < n.values.size(); ++i) {
      differences.push_back(std::fabs(n.values[i] - n.values[i - 1]) / n.median);
    }
  }
  if (differences.empty()) return 0;
  return kLearnMadToSigma / std::sqrt(2.0) * learn_median(std::move(differences));
}

}  // namespace

LearnedFigure learn_figure(const std::vector<NodeRuns>& nodes, const LearnOptions& options) {
  learn_check_options(options);
  LearnedFigure result;

  std::vector<LearnNode> kept;
  kept.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    LearnNode n;
    n.input_index = i;
    for (const double v : nodes[i].values) {
      if (learn_usable(v)) n.values.push_back(v);
    }
    if (n.values.empty()) continue;  // a node that never measured the figure says nothing
    n.median = learn_median(n.values);
    kept.push_back(std::move(n));
  }

  // Remove the nodes far from the median, then look again: once the worst are gone the spread
  // shrinks and milder outliers show. Stops when a pass removes nothing.
  std::vector<bool> removed(nodes.size(), false);
  double center = 0;
  double node_spread = 0;
  for (int iteration = 0; iteration < options.max_iterations; ++iteration) {
    if (static_cast<int>(kept.size()) < options.min_nodes) break;
    std::vector<double> medians;
    medians.reserve(kept.size());
    for (const LearnNode& n : kept) medians.push_back(n.median);
    center = learn_median(medians);
    node_spread = learn_relative_spread(medians, center);
    const double cut = options.outlier_multiple * std::max(node_spread, kLearnMinOutlierSpread);
    const auto far = [&](const LearnNode& n) { return std::fabs(n.median / center - 1.0) > cut; };
    const std::size_t before = kept.size();
    for (const LearnNode& n : kept) {
      if (far(n)) removed[n.input_index] = true;
    }
    kept.erase(std::remove_if(kept.begin(), kept.end(), far), kept.end());
    if (kept.size() == before) break;
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (removed[i]) result.removed.push_back(nodes[i].node);
  }

  result.nodes = static_cast<int>(kept.size());
  for (const LearnNode& n : kept) result.runs += static_cast<int>(n.values.size());
  if (result.nodes < options.min_nodes) {
    result.refusal =
        std::to_string(result.nodes) + " nodes, " + std::to_string(options.min_nodes) + " needed";
    return result;
  }

  // The loop ends on a pass that removed nothing (center and spread are those of `kept`) or
  // on max_iterations after a removal: then they are computed once more for the nodes kept.
  std::vector<double> medians;
  medians.reserve(kept.size());
  for (const LearnNode& n : kept) medians.push_back(n.median);
  center = learn_median(medians);
  node_spread = learn_relative_spread(medians, center);

  result.learned = true;
  result.median = center;
  result.node_spread = node_spread;
  result.run_spread = learn_run_spread(kept);
  // A healthy node's run sits about the fleet median with the node's offset and the run's noise
  // together; the limit is noise_multiple of those below, and never closer than `drop`.
  const double one_run_spread =
      std::sqrt(result.node_spread * result.node_spread + result.run_spread * result.run_spread);
  const double below = std::max(options.drop, options.noise_multiple * one_run_spread);
  result.limit = std::max(0.0, center * (1.0 - below));
  return result;
}

}  // namespace preflight
