#pragma once
#include "preflight/thresholds.hpp"

namespace preflight {

// The gemm check's threshold keys, "gemm.*" (gemm_thresholds.cpp; docs/checks/gemm.md).
const ThresholdSpecs& gemm_thresholds();

}  // namespace preflight
