#pragma once
#include "preflight/catalogue.hpp"

namespace preflight {

// The inventory check's finding codes (inventory_findings.cpp; docs/checks/inventory.md, "Finding
// codes").
const FindingTable& inventory_findings();

}  // namespace preflight
