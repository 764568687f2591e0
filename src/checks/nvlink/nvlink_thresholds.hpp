#pragma once
#include "preflight/thresholds.hpp"

namespace preflight {

// The nvlink check's threshold keys, "nvlink.*" (nvlink_thresholds.cpp; docs/checks/nvlink.md).
const ThresholdSpecs& nvlink_thresholds();

}  // namespace preflight
