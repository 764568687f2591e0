// The Xid codes: one per bucket of NVIDIA's Xid catalogue (xid_catalog.cpp), the same whether the
// Xid was read from the kernel log (the events check) or from the driver's event stream during a
// load check (counters.hpp). The code says what to do, the message which Xid and where it came
// from. docs/checks/events-xid.md, "Finding codes", lists the same codes
// (tests/unit/test_catalogue.cpp keeps the two in step).
#include "checks/common/xid_findings.hpp"

namespace preflight {

const FindingTable& xid_findings() {
  static const FindingTable table{
      "xid",
      "docs/checks/events-xid.md",
      {
          {"XID_RESET_GPU", Severity::fail, Action::reset_gpu,
           "The driver reported an Xid whose catalogue action is a GPU reset (for example 48, "
           "double-bit ECC error, or 95, uncontained ECC error): the GPU is not trusted until "
           "it is reset.",
           "Drain the node, reset the GPU (`nvidia-smi -r -i N`, or reboot), then acknowledge "
           "the event (`preflight acknowledge --state-dir DIR`) and rerun preflight; service "
           "the GPU if the Xid returns."},
          {"XID_REBOOT", Severity::fail, Action::reboot,
           "The driver reported an Xid whose catalogue action is a reboot of the node (for "
           "example 79, GPU fallen off the bus): a reset of the GPU alone does not recover it.",
           "Drain and reboot the node; rerun preflight. Service the GPU if the Xid returns after "
           "the reboot."},
          {"XID_SERVICE", Severity::fail, Action::service,
           "The driver reported an Xid that NVIDIA's catalogue sends to service (a hardware fault: "
           "contact support, check the mechanics, replace the part).",
           "Drain the node and open a service case with the message's Xid, bus id and time; "
           "collect `nvidia-bug-report.sh`."},
          {"XID_APPLICATION", Severity::info, Action::restart_job,
           "The driver reported an Xid that the catalogue puts on the program running then (for "
           "example 13, 31, 43, 45): an application fault, not the node's.",
           "Nothing for the node. The job that ran then should look at its own error; if the "
           "same Xid follows every job on this GPU, run `preflight run --profile standard`."},
          {"XID_INFORMATIONAL", Severity::info, Action::none,
           "The driver reported an Xid that the catalogue marks as informational.",
           "Nothing to do; kept in the verdict for the record."},
          {"XID_UNLISTED", Severity::warn, Action::none,
           "The driver reported an Xid that preflight's table does not list (a newer driver's "
           "code).",
           "Look the code up in NVIDIA's Xid catalogue for this driver "
           "(https://docs.nvidia.com/deploy/xid-errors/) and follow its action; tell the "
           "preflight maintainers so the table gains the row."},
      }};
  return table;
}

// Each code spelt out: tests/unit/test_catalogue.cpp finds every code a make_finding call emits.
Finding xid_bucket_finding(const XidSpec* spec, std::string entity, std::string message) {
  if (spec == nullptr)
    return make_finding(xid_findings(), "XID_UNLISTED", std::move(entity), std::move(message));
  switch (spec->bucket) {
    case XidBucket::informational:
      return make_finding(xid_findings(), "XID_INFORMATIONAL", std::move(entity),
                          std::move(message));
    case XidBucket::application:
      return make_finding(xid_findings(), "XID_APPLICATION", std::move(entity), std::move(message));
    case XidBucket::reset_gpu:
      return make_finding(xid_findings(), "XID_RESET_GPU", std::move(entity), std::move(message));
    case XidBucket::reboot:
      return make_finding(xid_findings(), "XID_REBOOT", std::move(entity), std::move(message));
    case XidBucket::service:
      break;
  }
  return make_finding(xid_findings(), "XID_SERVICE", std::move(entity), std::move(message));
}

}  // namespace preflight
