#pragma once
#include "preflight/catalogue.hpp"

namespace preflight {

// The hbm check's finding codes (hbm_findings.cpp; docs/checks/hbm.md, "Finding codes").
const FindingTable& hbm_findings();

}  // namespace preflight
