#pragma once
#include "preflight/catalogue.hpp"

namespace preflight {

// The nccl check's finding codes (nccl_findings.cpp; docs/checks/nccl.md, "Finding codes").
const FindingTable& nccl_findings();

}  // namespace preflight
