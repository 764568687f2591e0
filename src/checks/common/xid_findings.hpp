#pragma once
// The Xid finding codes, shared by the events check (the kernel log) and the load checks (the
// driver's event stream, counters.hpp): xid_findings.cpp.
#include <string>

#include "checks/common/xid_catalog.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

const FindingTable& xid_findings();

// The finding of an Xid's bucket: XID_RESET_GPU, XID_REBOOT, XID_SERVICE, XID_APPLICATION,
// XID_INFORMATIONAL, or XID_UNLISTED for a code the table lacks (spec nullptr).
Finding xid_bucket_finding(const XidSpec* spec, std::string entity, std::string message);

}  // namespace preflight
