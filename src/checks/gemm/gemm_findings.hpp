#pragma once
#include "preflight/catalogue.hpp"

namespace preflight {

// The gemm check's finding codes (gemm_findings.cpp; docs/checks/gemm.md, "Finding codes").
const FindingTable& gemm_findings();

}  // namespace preflight
