#pragma once
#include "preflight/catalogue.hpp"

namespace preflight {

// The pcie check's finding codes (pcie_findings.cpp; docs/checks/pcie.md, "Finding codes").
const FindingTable& pcie_findings();

}  // namespace preflight
