#include "model/pair_rotation.hpp"

#include <algorithm>

namespace preflight {

int ordered_pairs_in_shift(int endpoints) {
  return endpoints >= 2 ? endpoints : 0;
}

int unordered_pairs_in_shift(int endpoints, int shift) {
  if (endpoints < 2 || shift < 1 || shift >= endpoints) return 0;
  if (2 * shift > endpoints) return 0;               // counted under shift n-k
  if (2 * shift == endpoints) return endpoints / 2;  // i and i+n/2 joined twice: once
  return endpoints;
}

PairRotation rotate_pairs(int endpoints, int shifts_per_step, std::uint64_t rotation) {
  PairRotation r;
  r.endpoints = std::max(endpoints, 0);
  const int shifts = std::max(r.endpoints - 1, 0);
  if (shifts == 0) return r;
  r.shifts_per_step = std::clamp(shifts_per_step, 1, shifts);
  r.steps = (shifts + r.shifts_per_step - 1) / r.shifts_per_step;
  r.step = static_cast<int>(rotation % static_cast<std::uint64_t>(r.steps));
  // Shifts k and n-k join the same endpoints in opposite directions: taken side by side, a
  // step covers whole pairs, both directions and the two-way copy.
  std::vector<int> order;
  for (int k = 1; 2 * k <= r.endpoints; ++k) {
    order.push_back(k);
    if (r.endpoints - k != k) order.push_back(r.endpoints - k);
  }
  const auto first = static_cast<std::size_t>(r.step * r.shifts_per_step);
  for (std::size_t i = first; i < order.size() && i < first + r.shifts_per_step; ++i) {
    r.shifts.push_back(order[i]);
  }
  return r;
}

std::vector<std::pair<int, int>> PairRotation::ordered_pairs() const {
  std::vector<std::pair<int, int>> out;
  for (int k : shifts) {
    for (int i = 0; i < endpoints; ++i) out.emplace_back(i, (i + k) % endpoints);
  }
  return out;
}

std::vector<std::pair<int, int>> PairRotation::unordered_pairs() const {
  std::vector<std::pair<int, int>> out;
  for (int k : shifts) {
    if (unordered_pairs_in_shift(endpoints, k) == 0) continue;
    const int count = 2 * k == endpoints ? endpoints / 2 : endpoints;
    for (int i = 0; i < count; ++i) {
      const int j = (i + k) % endpoints;
      out.emplace_back(std::min(i, j), std::max(i, j));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace preflight
