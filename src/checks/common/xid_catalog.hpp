#pragma once
// NVIDIA's Xid codes as the events check judges them: one row per code, with the bucket of
// NVIDIA's Xid catalogue ("Immediate action" / resolution bucket) that decides the finding, and
// the source of the row. Data, not logic: xid_catalog.cpp; docs/checks/events-xid.md lists the
// same rows (tests/checks/events/test_xid_catalog.cpp keeps them in step).
#include <string_view>
#include <vector>

namespace preflight {

// What an Xid asks of an operator, from the catalogue's buckets.
enum class XidBucket {
  informational,  // IGNORE / no action: recorded as info, changes nothing
  application,    // RESTART_APP: the program running then was at fault (13, 31, 43, 45): info
  reset_gpu,      // RESET_GPU: the GPU must be reset before it is trusted again: fail
  reboot,         // RESTART_BM / RESTART_VM: the node must be rebooted: fail
  service,        // CONTACT_SUPPORT, CHECK_MECHANICALS, hardware replacement: fail
};

struct XidSpec {
  int code = 0;
  std::string_view name;  // NVIDIA's short description: "GPU has fallen off the bus"
  XidBucket bucket = XidBucket::service;
  std::string_view source;  // where the row's bucket comes from (document, section, version)
};

// Every row, ordered by code; codes unique.
const std::vector<XidSpec>& xid_catalog();

// The row of `code`; nullptr for a code the table does not list (judged as unlisted: warn).
const XidSpec* find_xid(int code);

std::string_view to_string(XidBucket bucket);  // "informational", "application", "reset_gpu", ...

}  // namespace preflight
