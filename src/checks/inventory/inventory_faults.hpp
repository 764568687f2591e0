#pragma once
// Inventory fault kinds replace a reading after it was taken, so each rule of the inventory
// check can be driven end to end on a healthy node.
#include <vector>

#include "preflight/engine/node_backend.hpp"
#include "preflight/faults.hpp"

namespace preflight {

std::vector<FaultKindSpec> inventory_fault_kinds();

// Applies every inventory fault of the plan to the readings. Faults that replace the probe
// (unresponsive) are applied by the check before probing; see probe_is_replaced().
void apply_inventory_faults(const FaultPlan& faults, NodeReading& node);
bool probe_is_replaced(const FaultPlan& faults, int gpu_index);

}  // namespace preflight
