// The events check's finding codes. docs/checks/events.md, "Finding codes", lists the same codes
// (tests/unit/test_catalogue.cpp keeps the two in step). The XID_* codes it emits are shared
// with the load checks, which read the driver's Xid events (checks/common/xid_findings.cpp).
#include "checks/events/events_findings.hpp"

namespace preflight {

const FindingTable& events_findings() {
  static const FindingTable table{
      "events",
      "docs/checks/events.md",
      {
          {"HOST_MCE_UNCORRECTED", Severity::fail, Action::service,
           "The kernel logged an uncorrected machine check (a CPU, cache or memory error the "
           "hardware could not correct).",
           "Drain the node; read the machine check (`rasdaemon`, `mcelog`, the BMC's event log) "
           "and service the part it names."},
          {"HOST_MCE_CORRECTED", Severity::warn, Action::none,
           "The kernel logged corrected machine checks at or above events.mce_corrected_warn in "
           "the window judged.",
           "Read the machine checks (`rasdaemon`, `mcelog`, the BMC's event log); corrected "
           "errors that keep rising on one part precede uncorrected ones: plan its service."},
          {"HOST_EDAC_UNCORRECTED", Severity::fail, Action::service,
           "EDAC reported an uncorrected host memory error.",
           "Drain the node; find the DIMM from the message (`edac-util -v`, the BMC's event "
           "log) and replace it."},
          {"HOST_EDAC_CORRECTED", Severity::warn, Action::none,
           "EDAC reported corrected host memory errors at or above events.edac_corrected_warn "
           "in the window judged.",
           "Find the DIMM from the messages (`edac-util -v`); a DIMM whose corrected errors keep "
           "rising should be replaced at the next maintenance."},
          {"PCIE_AER_FATAL", Severity::fail, Action::reboot,
           "The kernel's PCIe Advanced Error Reporting logged a fatal uncorrectable error on a "
           "device (the link or device needed a reset).",
           "Drain and reboot the node; reseat or service the device the message names if it "
           "returns."},
          {"PCIE_AER_UNCORRECTED", Severity::warn, Action::none,
           "PCIe AER logged a non-fatal uncorrectable error on a device: a transaction was lost "
           "and recovered by the driver.",
           "Watch the device: run `preflight run --checks pcie --profile standard`; reseat or "
           "service it if the errors repeat."},
          {"PCIE_AER_CORRECTED", Severity::warn, Action::none,
           "PCIe AER logged corrected errors on a device at or above events.aer_corrected_warn "
           "in the window judged (a marginal link: bad TLPs, replays).",
           "Run `preflight run --checks pcie --profile standard` to see whether bandwidth "
           "suffers; reseat the device or its riser at the next maintenance."},
          {"NIC_LINK_FLAP", Severity::warn, Action::none,
           "A network port went down in the window judged (a link flap: cable, transceiver or "
           "switch port).",
           "Check the port's cable and transceiver and the switch side's log; the rdma check "
           "judges the port's present state."},
          {"KERNEL_LOG_UNREADABLE", Severity::info, Action::none,
           "The live kernel log could not be read (not root, kernel.dmesg_restrict, or a "
           "container without /dev/kmsg): kernel events were not judged.",
           "Run preflight as root on the host, or give a saved log with --kernel-log FILE."},
          {"KERNEL_LOG_INCOMPLETE", Severity::info, Action::none,
           "Part of the kernel log was not judged: records were overwritten before they were "
           "read, or the reader's bounds (size, lines, time) were reached.",
           "Nothing for the node. A larger kernel ring buffer (log_buf_len) keeps more; a saved "
           "log can be judged with --kernel-log FILE."},
      }};
  return table;
}

}  // namespace preflight
