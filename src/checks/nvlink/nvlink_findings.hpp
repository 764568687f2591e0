#pragma once
#include "preflight/catalogue.hpp"

namespace preflight {

// The nvlink check's finding codes (nvlink_findings.cpp; docs/checks/nvlink.md, "Finding codes").
const FindingTable& nvlink_findings();

}  // namespace preflight
