// Finding codes of the error counters read around the load checks (counters.hpp).
// docs/checks/counters.md, "Finding codes", lists the same codes (tests/unit/test_catalogue.cpp
// keeps the two in step). Codes are stable: admins grep for them and drain reasons carry them.
#include "checks/common/counters.hpp"

namespace preflight {

const FindingTable& counter_findings() {
  static const FindingTable table{
      "counter",
      "docs/checks/counters.md",
      {
          {"ECC_UNCORRECTED_UNDER_LOAD", Severity::fail, Action::reset_gpu,
           "The GPU's volatile uncorrectable ECC count rose while preflight loaded it: memory "
           "returned data the GPU could not correct, under preflight's own work.",
           "Drain the node; reset the GPU (row remapping, or page retirement before Ampere, "
           "takes effect at the reset) and run preflight again. A count that rises again after "
           "the reset: RMA the GPU."},
          {"ECC_CORRECTED_UNDER_LOAD", Severity::warn, Action::none,
           "Corrected ECC errors arrived faster than the limit while preflight loaded the GPU. "
           "Each was corrected; a stream of them (a published Hopper case: about 17,000 per "
           "second under load, none at idle) is a memory fault on its way to uncorrectable ones.",
           "Watch the GPU: run the standard profile's hbm pattern test and check for pending row "
           "remaps (`nvidia-smi -q -d ROW_REMAPPER`). A rate that persists across runs: service "
           "the GPU."},
          {"PCIE_REPLAYS_UNDER_LOAD", Severity::warn, Action::none,
           "The GPU's PCIe replay counter rose faster than the limit during preflight's copies: "
           "the link is retransmitting packets, a sign of poor signal integrity (riser, slot, "
           "retimer, cable) while bandwidth may still hold.",
           "Reseat the GPU or its riser and check the slot's retimers; compare with the other "
           "GPUs of the node. A rate that persists: service the PCIe path."},
          {"PCIE_AER_CORRECTED_UNDER_LOAD", Severity::warn, Action::none,
           "The GPU's corrected PCIe error count (AER, sysfs aer_dev_correctable) rose faster "
           "than the limit during preflight's copies: bad TLPs or DLLPs, replay timeouts, "
           "receiver errors on the link.",
           "As for PCIE_REPLAYS_UNDER_LOAD: reseat, check the riser and retimers, compare with "
           "the node's other GPUs; `lspci -vvv` shows the AER status bits."},
          {"PCIE_AER_UNCORRECTED_UNDER_LOAD", Severity::fail, Action::reboot,
           "The GPU's uncorrected PCIe error count (AER non-fatal or fatal) rose during "
           "preflight's copies: packets were lost on the link, which the driver usually follows "
           "with an Xid and a GPU that falls off the bus.",
           "Drain the node and reboot it; a count that rises again: service the PCIe path (slot, "
           "riser, retimer, GPU baseboard)."},
          {"NVLINK_CRC_UNDER_LOAD", Severity::warn, Action::none,
           "NVLink CRC errors (flit and data, summed over the GPU's links) arrived faster than "
           "the limit during preflight's NVLink traffic; each is retried, and a high rate costs "
           "bandwidth and precedes link failures.",
           "Compare the GPU's links (`nvidia-smi nvlink -e`); a rate that persists across runs: "
           "service the GPU baseboard or NVSwitch tray."},
          {"NVLINK_REPLAYS_UNDER_LOAD", Severity::warn, Action::none,
           "NVLink replays or link recoveries occurred during preflight's NVLink traffic: the "
           "link retransmitted or retrained, which a healthy link does not do.",
           "Check `nvidia-smi nvlink -e` for the link; repeated recoveries: service the GPU "
           "baseboard or NVSwitch tray."},
          {"RDMA_PORT_ERRORS_UNDER_LOAD", Severity::warn, Action::none,
           "The port's link error counters (symbol errors, link error recovery, receive errors, "
           "local link integrity, buffer overruns) rose faster than the limit during preflight's "
           "transfers: the link is degrading while it still trains at full rate.",
           "Check the cable or transceiver and the switch port (`perfquery -x`, the switch's own "
           "counters); a rate that persists: replace the cable or transceiver."},
          {"RDMA_LINK_DOWNED_UNDER_LOAD", Severity::fail, Action::service,
           "The port's link went down during preflight's transfers (link_downed rose): its "
           "error recovery failed and the link retrained or stayed down.",
           "Drain the node; check the cable, transceiver and switch port, and the kernel log for "
           "the port's state changes. Replace the cable or transceiver if it recurs."},
      }};
  return table;
}

}  // namespace preflight
