#pragma once
// The inventory check's judgement, as a pure function of readings and thresholds, so every
// rule is unit-tested with readings made up in the test.
#include <string>
#include <vector>

#include "checks/common/judgement.hpp"
#include "checks/inventory/inventory_readings.hpp"
#include "preflight/check.hpp"
#include "preflight/engine/node_backend.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

using InventoryJudgement = CheckJudgement;

InventoryJudgement judge_inventory(const NodeReading& node, const Thresholds& thresholds,
                                   const NodeExpectations& expect);
// The same on the check's recorded readings: every finding of the inventory check follows from
// them, so `preflight judge` makes all of them again.
inline InventoryJudgement judge_inventory(const InventoryReadings& readings,
                                          const Thresholds& thresholds) {
  return judge_inventory(readings.node, thresholds, readings.expect);
}

// "HW slowdown, HW thermal" for the bits of a clocks-event mask that matter.
std::string describe_clock_events(std::uint64_t mask);

}  // namespace preflight
