#pragma once
#include "preflight/thresholds.hpp"

namespace preflight {

// The inventory check's threshold keys, "inventory.*" (inventory_thresholds.cpp;
// docs/checks/inventory.md).
const ThresholdSpecs& inventory_thresholds();

}  // namespace preflight
