#pragma once
#include "preflight/catalogue.hpp"

namespace preflight {

// The rdma check's finding codes (rdma_findings.cpp; docs/checks/rdma.md, "Finding codes").
const FindingTable& rdma_findings();

}  // namespace preflight
