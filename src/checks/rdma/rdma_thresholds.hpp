#pragma once
#include "preflight/thresholds.hpp"

namespace preflight {

// The rdma check's threshold keys, "rdma.*" (rdma_thresholds.cpp; docs/checks/rdma.md).
const ThresholdSpecs& rdma_thresholds();

}  // namespace preflight
