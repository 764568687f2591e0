// Group speed judgement for the fleet rounds (fleet_speed.hpp, docs/fleet-planner.md#stragglers).
#include "fleet/logic/fleet_speed.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <utility>

#include "model/stats.hpp"

namespace preflight {
namespace {

bool measured(double v) {
  return std::isfinite(v) && v > 0;
}

double median_of(std::vector<double> values) {
  return summarize(std::move(values)).median;
}

// log_spread() of the comparable groups other than the judged one (one value equal to `judged`
// is left out), so that a slow group does not widen the noise it is measured against.
double log_noise_without(const std::vector<double>& values, double judged) {
  std::vector<double> others;
  bool skipped = false;
  for (double v : values) {
    if (!skipped && v == judged) {
      skipped = true;
      continue;
    }
    others.push_back(v);
  }
  return log_spread(others);
}

}  // namespace

std::string_view to_string(SpeedJudgement j) {
  switch (j) {
    case SpeedJudgement::not_measured:
      return "not_measured";
    case SpeedJudgement::unjudged:
      return "unjudged";
    case SpeedJudgement::normal:
      return "normal";
    case SpeedJudgement::slow:
      return "slow";
  }
  return "unknown";
}

std::vector<GroupSpeed> judge_group_speeds(const std::vector<double>& busbw_gbps,
                                           const std::vector<std::string>& comparable_key,
                                           double min_gbps, double median_factor) {
  if (busbw_gbps.size() != comparable_key.size()) {
    throw std::invalid_argument("group speeds: " + std::to_string(busbw_gbps.size()) +
                                " bandwidths for " + std::to_string(comparable_key.size()) +
                                " keys");
  }
  std::map<std::string, std::vector<double>> by_key;
  for (std::size_t i = 0; i < busbw_gbps.size(); ++i) {
    if (measured(busbw_gbps[i])) by_key[comparable_key[i]].push_back(busbw_gbps[i]);
  }
  std::map<std::string, double> median;
  for (const auto& [key, values] : by_key) median[key] = median_of(values);

  const bool floor_on = min_gbps > 0;
  const bool median_on = median_factor > 0;
  std::vector<GroupSpeed> out(busbw_gbps.size());
  for (std::size_t i = 0; i < busbw_gbps.size(); ++i) {
    const double v = busbw_gbps[i];
    if (!measured(v)) continue;
    GroupSpeed& s = out[i];
    const std::string& key = comparable_key[i];
    s.groups_compared = static_cast<int>(by_key[key].size());
    s.median_gbps = median[key];
    const bool enough = s.groups_compared >= kMinComparableGroups;
    if (enough && s.median_gbps > 0) {
      s.gap = 1.0 - v / s.median_gbps;
      s.noise = log_noise_without(by_key[key], v);
    }
    const bool below_factor = median_on && enough && v < median_factor * s.median_gbps;
    const bool beyond_noise =
        below_factor && std::log(s.median_gbps / v) > kNoiseMultiple * s.noise;
    char text[240];
    if (floor_on && v < min_gbps) {
      s.judgement = SpeedJudgement::slow;
      std::snprintf(text, sizeof text, "bus bandwidth %.3g GB/s < the floor of %.3g GB/s", v,
                    min_gbps);
      s.detail = text;
    } else if (below_factor && beyond_noise) {
      s.judgement = SpeedJudgement::slow;
      std::snprintf(text, sizeof text,
                    "bus bandwidth %.3g GB/s < %.3g x the median %.3g GB/s of %d groups of %s "
                    "(gap %.0f%%, noise %.0f%%)",
                    v, median_factor, s.median_gbps, s.groups_compared, key.c_str(), 100.0 * s.gap,
                    100.0 * s.noise);
      s.detail = text;
    } else if (below_factor) {
      // Below the fraction, but the comparable groups scatter as much: not evidence.
      s.judgement = SpeedJudgement::unjudged;
      std::snprintf(text, sizeof text,
                    "speed not judged: noise %.0f%% (bus bandwidth %.3g GB/s, gap %.0f%% below "
                    "the median %.3g GB/s of %d groups of %s, is within %.1f x the noise)",
                    100.0 * s.noise, v, 100.0 * s.gap, s.median_gbps, s.groups_compared,
                    key.c_str(), kNoiseMultiple);
      s.detail = text;
    } else if ((median_on && enough) || floor_on) {
      s.judgement = SpeedJudgement::normal;
    } else {
      // Fewer than three comparable groups (or the median test off) and no floor: no evidence
      // either way, and no evidence is not slowness.
      s.judgement = SpeedJudgement::unjudged;
    }
  }
  return out;
}

double smallest_resolvable_gap(double noise) {
  if (!(noise > 0)) return 0;
  return 1.0 - std::exp(-kNoiseMultiple * noise);
}

std::string speed_resolution_note(const std::vector<GroupSpeed>& groups,
                                  const std::vector<double>& iteration_se, double median_factor) {
  if (!(median_factor > 0)) return {};
  if (!iteration_se.empty() && iteration_se.size() != groups.size()) {
    throw std::invalid_argument("speed resolution: " + std::to_string(iteration_se.size()) +
                                " iteration errors for " + std::to_string(groups.size()) +
                                " groups");
  }
  std::vector<double> spreads;
  std::vector<double> errors;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const GroupSpeed& g = groups[i];
    if (g.judgement == SpeedJudgement::not_measured) continue;
    if (g.groups_compared < kMinComparableGroups) continue;
    spreads.push_back(g.noise);
    errors.push_back(iteration_se.empty() ? 0.0 : iteration_se[i]);
  }
  if (spreads.empty()) return {};
  const double spread = median_of(spreads);
  const double error = median_of(errors);
  const double noise = std::max(spread, error);
  const double resolvable = smallest_resolvable_gap(noise);
  if (resolvable <= 1.0 - median_factor) return {};
  char text[360];
  std::snprintf(text, sizeof text,
                "speed not judged to --slow-factor %.3g: noise %.0f%% (median over %zu groups: "
                "their spread %.0f%%, their own iterations %.0f%%) resolves only gaps above "
                "%.0f%%; a node slower than its peers by less than that is not named",
                median_factor, 100.0 * noise, spreads.size(), 100.0 * spread, 100.0 * error,
                100.0 * resolvable);
  return text;
}

std::vector<bool> slow_groups(const std::vector<double>& busbw_gbps,
                              const std::vector<std::string>& comparable_key, double min_gbps,
                              double median_factor) {
  const auto speeds = judge_group_speeds(busbw_gbps, comparable_key, min_gbps, median_factor);
  std::vector<bool> slow(speeds.size(), false);
  for (std::size_t i = 0; i < speeds.size(); ++i) {
    slow[i] = speeds[i].judgement == SpeedJudgement::slow;
  }
  return slow;
}

std::vector<GroupSpeed> RoundSpeedJudge::judge_round(
    const std::vector<double>& busbw_gbps, const std::vector<std::string>& comparable_key) {
  if (busbw_gbps.size() != comparable_key.size()) {
    throw std::invalid_argument("round speeds: " + std::to_string(busbw_gbps.size()) +
                                " bandwidths for " + std::to_string(comparable_key.size()) +
                                " keys");
  }
  // A key with enough measured groups in this round is judged on them alone: they ran at the
  // same moment, under the same load. Slow retests can only pull the round's median down, never
  // push a healthy group below it; the planner's reference pairs keep it at a healthy speed.
  // Only a key with too few borrows the earlier rounds.
  std::map<std::string, int> measured_now;
  for (std::size_t g = 0; g < busbw_gbps.size(); ++g) {
    if (measured(busbw_gbps[g])) ++measured_now[comparable_key[g]];
  }
  const auto own = judge_group_speeds(busbw_gbps, comparable_key, min_gbps_, median_factor_);
  std::vector<double> all_busbw = history_busbw_;
  std::vector<std::string> all_keys = history_keys_;
  all_busbw.insert(all_busbw.end(), busbw_gbps.begin(), busbw_gbps.end());
  all_keys.insert(all_keys.end(), comparable_key.begin(), comparable_key.end());
  const auto all = judge_group_speeds(all_busbw, all_keys, min_gbps_, median_factor_);
  const std::size_t offset = history_busbw_.size();
  std::vector<GroupSpeed> out(all.begin() + static_cast<std::ptrdiff_t>(offset), all.end());
  for (std::size_t g = 0; g < out.size(); ++g) {
    if (measured_now[comparable_key[g]] >= kMinComparableGroups) out[g] = own[g];
  }
  for (std::size_t g = 0; g < out.size(); ++g) {
    const SpeedJudgement j = out[g].judgement;
    if (j == SpeedJudgement::normal || j == SpeedJudgement::unjudged) {
      history_busbw_.push_back(busbw_gbps[g]);
      history_keys_.push_back(comparable_key[g]);
    }
  }
  return out;
}

}  // namespace preflight
