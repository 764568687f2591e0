#pragma once
// Which pairs of n endpoints (GPUs, NICs) a run covers when it cannot cover all of them, so that
// consecutive runs cover every pair (docs/plan.md, "Rotation"). The ordered pairs are cut into
// the n-1 shifts k = 1..n-1, shift k being the n pairs i -> (i+k) mod n: every endpoint sends
// once and receives once per shift, so one shift loads all endpoints evenly. The shifts are taken
// in the order 1, n-1, 2, n-2, ... and cut into steps of shifts_per_step; run r covers step
// r mod steps.
#include <cstdint>
#include <utility>
#include <vector>

namespace preflight {

struct PairRotation {
  int endpoints = 0;
  int shifts_per_step = 1;  // >= 1
  int steps = 1;            // ceil((endpoints - 1) / shifts_per_step), at least 1
  int step = 0;             // the step this run covers, 0-based
  std::vector<int> shifts;  // the shifts of that step

  bool complete() const { return steps == 1; }  // every pair, every run
  // The ordered pairs (from, to) of this step, endpoint indices 0..n-1.
  std::vector<std::pair<int, int>> ordered_pairs() const;
  // The unordered pairs {a, b} (a < b) of this step, each unordered pair belonging to exactly one
  // shift k <= n/2 (shift k and n-k join the same two endpoints), so every unordered pair is
  // covered once in `steps` runs.
  std::vector<std::pair<int, int>> unordered_pairs() const;
};

// n endpoints, as many shifts per run as `shifts_per_step` (clamped to 1..n-1), the run's
// rotation counter. Fewer than two endpoints: no pairs, one step.
PairRotation rotate_pairs(int endpoints, int shifts_per_step, std::uint64_t rotation);

// Ordered pairs of one shift, and unordered pairs whose shift is k, for the model's counts.
int ordered_pairs_in_shift(int endpoints);
int unordered_pairs_in_shift(int endpoints, int shift);

}  // namespace preflight
