#pragma once
#include "preflight/catalogue.hpp"

namespace preflight {

// The events check's finding codes (events_findings.cpp; docs/checks/events.md).
const FindingTable& events_findings();

}  // namespace preflight
