#pragma once
#include "preflight/thresholds.hpp"

namespace preflight {

// The nccl check's threshold keys, "nccl.*" (nccl_thresholds.cpp; docs/checks/nccl.md).
const ThresholdSpecs& nccl_thresholds();

}  // namespace preflight
