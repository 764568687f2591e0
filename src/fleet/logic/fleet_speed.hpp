#pragma once
// Whether a group of a fleet round ran at speed: its all-gather bus bandwidth against the
// operator's floor and against the median of comparable groups (docs/fleet-planner.md#stragglers).
// Pure host code: the fleet command and the simulated fleet judge with the same functions.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/logic/fleet_stats.hpp"

namespace preflight {

// The fewest comparable groups, the judged one included, whose median may call a group slow.
// With two, the median is the mean of the judged group and one other: a group at 0.6 of the
// other is below 0.8 x that mean, so one ordinary fluctuation of one other group convicts
// (issue 15: a healthy rank under `srun --mpi=pmix` was called a straggler that way). From three
// on, a group below the median is not the median itself: the reference is another group's
// figure (or the mean of two others), and one odd group cannot move it past the middle.
constexpr int kMinComparableGroups = 3;

// A group is slow by the median test only when its gap below the median also stands out from the
// noise of the comparable groups in the same run: ln(median / busbw) > 2.5 x noise, where the
// noise is 1.4826 x the MAD of the logarithms of the other comparable groups (a robust standard
// deviation; logarithms because noise is a factor; the judged one left out, so that a slow
// group does not widen its own yardstick). Below the configured fraction but within the noise,
// the group's speed is not judged, and it says so: on a noisy machine a fixed fraction convicts
// healthy nodes (issue 32).
// Why 2.5 and not the 3.5 of Iglewicz and Hoaglin's outlier rule (NIST/SEMATECH e-Handbook of
// Statistical Methods, 1.3.5.17), which judges one value once: a slow group convicts nobody.
// A straggler takes three slow groups, the round-1 screen and two retests with partners proven
// before they ran (fleet_planner.cpp), each measured apart. Past 2.5 standard deviations lies
// 0.6% of a normal noise, so a healthy node is slow three times by chance about 2 in 10^7
// (1 in 5,000 if its tail is ten times heavier). With healthy pairs about 10% apart (a loaded
// 2-core machine, docs/fleet.md, --slow-factor 0.85), 3.5 named a node 25% slow in 5 runs of 10
// and 2.5 in 8, with no healthy node named in either.
constexpr double kNoiseMultiple = 2.5;

enum class SpeedJudgement {
  not_measured,  // the group did not finish (or reported no figure): nothing to judge
  unjudged,      // finished, but too few comparable groups and no floor to judge it by, or
                 // below the median factor but within the noise (detail says so)
  normal,        // at or above the floor and not below the median factor
  slow,          // below the floor, or below median_factor x the median of >= 3 groups
};
// "not_measured", "unjudged", "normal", "slow".
std::string_view to_string(SpeedJudgement j);

struct GroupSpeed {
  SpeedJudgement judgement = SpeedJudgement::not_measured;
  // The measured groups with the same comparable key that the median was taken over, the
  // judged one included; 0 for a group that was not measured.
  int groups_compared = 0;
  double median_gbps = 0;  // their median; 0 when not measured
  // 1 - busbw / median (negative above the median), and the robust spread of the logarithms of
  // the other compared groups (kMadToSigma x MAD; 0.1 is about 10%); both 0 when fewer than
  // kMinComparableGroups.
  double gap = 0;
  double noise = 0;
  // Why a slow group is slow, e.g. "bus bandwidth 12 GB/s < 0.8 x the median 20 GB/s of 3
  // groups of 2 nodes, 16 GPUs (gap 40%, noise 5%)"; why a group below the factor was not
  // judged ("speed not judged: noise 18% ..."); empty otherwise.
  std::string detail;
};

// One set of groups judged together. A group is slow when its busbw is below min_gbps (the
// operator's floor: an expectation, not a comparison, so it needs no other group), or, when it
// has at least kMinComparableGroups measured groups of its comparable key (same member count and
// GPU count; the caller builds the key), below median_factor x their median by a gap of more
// than kNoiseMultiple x their noise. busbw <= 0 or NaN:
// not measured, left out of the medians. median_factor <= 0 turns the median test off. Throws
// std::invalid_argument when the two vectors differ in size.
std::vector<GroupSpeed> judge_group_speeds(const std::vector<double>& busbw_gbps,
                                           const std::vector<std::string>& comparable_key,
                                           double min_gbps, double median_factor);

// The smallest gap below the median (1 - busbw / median) that a group can be called slow at
// when the comparable groups scatter by `noise` (GroupSpeed::noise): 1 - exp(-kNoiseMultiple x
// noise). 0 for noise <= 0.
double smallest_resolvable_gap(double noise);

// What a run's noise allows (issue 32: "speed not judged: noise N%" instead of silence). Over
// every group judged against enough comparable groups: the median of their noise (how far the
// other groups scatter) and the median of their iteration_se (how precisely each group's own
// iterations fix its figure; the same size as groups, or empty); the larger of the two is the
// run's noise. Three other groups can agree closely by chance while each figure is known only to
// a few percent, and a gap below that is not resolved whatever they say. Empty when that noise
// resolves the gap median_factor asks for (1 - median_factor), or when no group had enough
// comparable groups or median_factor <= 0. Else one line for the verdict's notes, e.g. "speed
// not judged to --slow-factor 0.95: noise 6% (median over 8 groups: their spread 2%, their own
// iterations 6%) resolves only gaps above 14%; a node slower than its peers by less than that is
// not named".
std::string speed_resolution_note(const std::vector<GroupSpeed>& groups,
                                  const std::vector<double>& iteration_se, double median_factor);

// judge_group_speeds(...) reduced to one bool per group: judgement == slow.
std::vector<bool> slow_groups(const std::vector<double>& busbw_gbps,
                              const std::vector<std::string>& comparable_key, double min_gbps,
                              double median_factor);

// The judgement across rounds. A comparable key with at least kMinComparableGroups measured
// groups in the round is judged on the round's own groups: they ran at the same moment, under
// the same load (a later round can run at a fraction of the first round's speed on a busy
// machine, issue 32). Slow retests only pull that median down, so it convicts no healthy group
// that a healthy median would not; the planner's reference pairs (FleetPlannerOptions::
// reference_groups) keep it at a healthy speed. A key with fewer, such as a later round's single
// retest, is judged together with the groups of earlier rounds that were not slow (normal or
// unjudged). A slow group never becomes a reference: a slow node tested again must not lower the
// median it is compared with.
class RoundSpeedJudge {
 public:
  RoundSpeedJudge(double min_gbps, double median_factor)
      : min_gbps_(min_gbps), median_factor_(median_factor) {}
  // One entry per group of the round, in the round's order. Throws std::invalid_argument when
  // the two vectors differ in size.
  std::vector<GroupSpeed> judge_round(const std::vector<double>& busbw_gbps,
                                      const std::vector<std::string>& comparable_key);
  std::size_t references() const { return history_busbw_.size(); }

 private:
  double min_gbps_ = 0;
  double median_factor_ = 0;
  std::vector<double> history_busbw_;
  std::vector<std::string> history_keys_;
};

}  // namespace preflight
