#pragma once
// Finding codes that several checks emit, declared once. A check that emits one lists its table
// in CheckInfo::findings.
#include "preflight/catalogue.hpp"

namespace preflight {

// The copies pcie, nvlink and hbm share (bandwidth_findings.cpp; docs/checks/bandwidth.md).
const FindingTable& bandwidth_findings();
// A run-time library missing, a fault injected at a device the node lacks (shared_findings.cpp;
// docs/findings.md, "Shared by several checks").
const FindingTable& shared_findings();

}  // namespace preflight
