// A persistent drop of a node's figure below its own history (regression.hpp).
//
// The rule, as implemented:
//
// 1. The window must hold exactly `window` runs, each with a value (finite, above 0); else the
//    figure is not judged.
// 2. The reference. With at least `min_reference_runs` earlier healthy runs (values that are
//    not finite or not above 0 are skipped), the newest `max_reference_runs` of them: reference
//    = their median, noise = max(min_noise, 1.4826 x MAD / median) ("own history"). With fewer,
//    and a fleet baseline: reference = fleet.median, noise = max(min_noise, fleet.spread)
//    ("fleet baseline", reference_runs 0). Neither: not judged.
// 3. Each run i of the window drops by d_i = 1 - v_i / reference. A run is "down" when
//    d_i >= T, the threshold:
//      own history of n runs: T = max(drop / 2, noise_multiple x noise) x sqrt(1 + pi / (2n))
//      fleet baseline:        T = max(drop / 2, fleet_noise_multiple x noise)
//    drop / 2 is the midpoint between no change and the change the rule is built to catch
//    (where Page's CUSUM puts its allowance); the noise term keeps a noisy node's ordinary
//    runs from counting. The median of n runs is itself off by about sqrt(pi / (2n)) noises,
//    so a run compared with it varies sqrt(1 + pi / (2n)) times its own noise: a young history
//    gets a proportionally wider threshold, and the chance that a reference which happens to
//    sit high makes a healthy window look low stays about that of a long history. Against the
//    fleet, the node's own offset from the fleet median is in every run of the window alike;
//    the fleet's spread counts it, and its larger multiple keeps a healthy node that merely
//    sits low in the fleet from being flagged.
// 4. Regressed when a majority of the window's runs are down (the lower median of the d_i is
//    at least T) and every run is at least `every_run` x T down. Otherwise steady. One bad run
//    is never a regression, by construction: a majority of a window of at least two runs is
//    at least two runs, and every run must be down besides. Requiring a majority rather than
//    every run at T lets a node that really dropped have one run that happens to come out a
//    little less low; every_run 1 is "every run down by T".
//
// In the result: `drop` is the median of the d_i, `threshold` is T, `current` the newest value.
#include "learned/regression.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace preflight {

namespace {

// 1 / Phi^-1(3/4): a normal sample's median absolute deviation times this is its sigma.
constexpr double kRegrMadToSigma = 1.4826;
constexpr double kRegrPi = 3.14159265358979323846;

bool regr_usable(double value) {
  return std::isfinite(value) && value > 0;
}

// The median of `values` (the mean of the two middle ones for an even count), reordering them.
double regr_median_in_place(std::vector<double>& values) {
  const std::size_t n = values.size();
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(values.begin(), middle, values.end());
  if (n % 2 == 1) return *middle;
  return (*std::max_element(values.begin(), middle) + *middle) / 2.0;
}

void regr_check_options(const RegressionOptions& options) {
  // "One bad run is never a regression" rests on a window of at least two runs.
  if (options.window < 2) {
    throw std::invalid_argument("regression options: window must be at least 2, not " +
                                std::to_string(options.window));
  }
  if (options.min_reference_runs < 1 || options.max_reference_runs < options.min_reference_runs) {
    throw std::invalid_argument(
        "regression options: need 1 <= min_reference_runs <= max_reference_runs");
  }
  // Written so that NaN fails every test.
  if (!(options.drop > 0 && options.drop <= 0.9)) {
    throw std::invalid_argument("regression options: drop must be within (0, 0.9]");
  }
  if (!(options.noise_multiple >= 0) || !(options.fleet_noise_multiple >= 0) ||
      !(options.min_noise >= 0)) {
    throw std::invalid_argument(
        "regression options: noise_multiple, fleet_noise_multiple and min_noise must not be "
        "negative");
  }
  if (!(options.every_run > 0 && options.every_run <= 1)) {
    throw std::invalid_argument("regression options: every_run must be within (0, 1]");
  }
}

RegressionResult regr_not_judged(std::string reason) {
  RegressionResult r;
  r.outcome = RegressionResult::Outcome::not_judged;
  r.reason = std::move(reason);
  return r;
}

// "1 run", "3 earlier healthy runs".
std::string regr_runs(std::size_t count, const std::string& what) {
  return std::to_string(count) + (what.empty() ? "" : " " + what) + (count == 1 ? " run" : " runs");
}

}  // namespace

RegressionResult judge_regression(const std::vector<double>& earlier,
                                  const std::vector<double>& window,
                                  const std::optional<FleetReference>& fleet,
                                  const RegressionOptions& options) {
  regr_check_options(options);
  if (window.size() != static_cast<std::size_t>(options.window)) {
    return regr_not_judged(regr_runs(window.size(), "") + ", " + std::to_string(options.window) +
                           " needed");
  }
  // A run without a value failed, and the check reports that itself; it is no evidence of a
  // slow node here.
  if (!std::all_of(window.begin(), window.end(), regr_usable)) {
    return regr_not_judged("a run of the window has no value");
  }

  // The newest max_reference_runs usable earlier runs.
  std::vector<double> buffer;
  const std::size_t most = static_cast<std::size_t>(options.max_reference_runs);
  buffer.reserve(std::min(most, earlier.size()));
  for (auto it = earlier.rbegin(); it != earlier.rend() && buffer.size() < most; ++it) {
    if (regr_usable(*it)) buffer.push_back(*it);
  }

  RegressionResult r;
  double multiple = options.noise_multiple;
  double reference_uncertainty = 1.0;
  if (buffer.size() >= static_cast<std::size_t>(options.min_reference_runs)) {
    r.reference_by = "own history";
    r.reference_runs = static_cast<int>(buffer.size());
    r.reference = regr_median_in_place(buffer);
    for (double& v : buffer) v = std::fabs(v - r.reference);
    const double spread = kRegrMadToSigma * regr_median_in_place(buffer) / r.reference;
    r.noise = std::max(options.min_noise, spread);
    reference_uncertainty = std::sqrt(1.0 + kRegrPi / (2.0 * static_cast<double>(buffer.size())));
  } else if (fleet && regr_usable(fleet->median) && std::isfinite(fleet->spread)) {
    r.reference_by = "fleet baseline";
    r.reference_runs = 0;
    r.reference = fleet->median;
    r.noise = std::max(options.min_noise, fleet->spread);
    multiple = options.fleet_noise_multiple;
  } else {
    return regr_not_judged(regr_runs(buffer.size(), "earlier healthy") + ", " +
                           std::to_string(options.min_reference_runs) +
                           " needed, and no fleet baseline");
  }

  const double threshold = std::max(options.drop / 2.0, multiple * r.noise) * reference_uncertainty;
  r.threshold = threshold;
  buffer.clear();
  for (const double v : window) buffer.push_back(1.0 - v / r.reference);
  std::sort(buffer.begin(), buffer.end());
  const std::size_t w = buffer.size();
  // Sorted rising: the lower median has floor(w / 2) + 1 runs at or above it (a majority).
  const double lower_median = buffer[(w - 1) / 2];
  const double least = buffer.front();
  r.drop = w % 2 == 1 ? buffer[w / 2] : (buffer[w / 2 - 1] + buffer[w / 2]) / 2.0;
  r.current = window.back();
  const bool regressed = lower_median >= threshold && least >= options.every_run * threshold;
  r.outcome = regressed ? RegressionResult::Outcome::regressed : RegressionResult::Outcome::steady;
  return r;
}

BelowBaseline judge_below_baseline(const std::vector<double>& before, double current, double limit,
                                   int window) {
  if (window < 2) throw std::invalid_argument("the window must be at least 2 runs");
  BelowBaseline out;
  out.runs = 1;
  out.below = current < limit ? 1 : 0;
  const std::size_t take = std::min(before.size(), static_cast<std::size_t>(window - 1));
  for (std::size_t i = before.size() - take; i < before.size(); ++i) {
    ++out.runs;
    if (before[i] < limit) ++out.below;
  }
  // A majority of the full window, counted as if the runs not recorded were above: a node with
  // one run below and no history is not yet known to be slow.
  out.persistent = current < limit && 2 * out.below > window;
  return out;
}

}  // namespace preflight
