#pragma once
#include "preflight/thresholds.hpp"

namespace preflight {

// The pcie check's threshold keys, "pcie.*" (pcie_thresholds.cpp; docs/checks/pcie.md).
const ThresholdSpecs& pcie_thresholds();

}  // namespace preflight
