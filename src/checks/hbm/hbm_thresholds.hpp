#pragma once
#include "preflight/thresholds.hpp"

namespace preflight {

// The hbm check's threshold keys, "hbm.*" (hbm_thresholds.cpp; docs/checks/hbm.md).
const ThresholdSpecs& hbm_thresholds();

}  // namespace preflight
