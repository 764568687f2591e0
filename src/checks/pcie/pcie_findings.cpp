// The pcie check's finding codes. docs/checks/pcie.md, "Finding codes", lists the same
// codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable: admins grep for
// them and drain reasons carry them.
#include "checks/pcie/pcie_findings.hpp"

namespace preflight {

const FindingTable& pcie_findings() {
  static const FindingTable table{
      "pcie",
      "docs/checks/pcie.md",
      {
          {"PCIE_BANDWIDTH_LOW", Severity::fail, Action::service,
           "A GPU's host-to-device, device-to-host or bidirectional copy bandwidth is below the "
           "failure share of what its PCIe link should carry; the message names the link (e.g. "
           "Gen5 x16 running Gen4 x16) and the figure.",
           "Reseat the GPU or its riser, check the slot's BIOS link settings and `lspci -vv` "
           "LnkSta against LnkCap; a link that trained down needs a reseat or a board/riser "
           "replacement. Drain until fixed."},
          {"PCIE_BANDWIDTH_MARGINAL", Severity::warn, Action::none,
           "A GPU's host<->device copy bandwidth is below the warning share of what its PCIe link "
           "should carry.",
           "Compare `lspci -vv` LnkSta with LnkCap and check the NUMA placement of the job's "
           "host memory; rerun `preflight run --checks pcie` to confirm."},
          {"PCIE_SHARED_BANDWIDTH_LOW", Severity::fail, Action::service,
           "With every GPU copying at once, this GPU gets less than the failure share of its fair "
           "share: its own link, at most the rate of the uplink it shares split among the GPUs "
           "behind it; the message names the uplink and the GPUs sharing it.",
           "Check the PCIe topology (`nvidia-smi topo -m`, `lspci -tv`) for a switch or root "
           "port shared by too many devices or trained down; fix the cabling or board, or the "
           "BIOS bifurcation settings."},
          {"PCIE_UPLINK_BANDWIDTH_LOW", Severity::fail, Action::service,
           "With every GPU copying at once, the GPUs behind one PCIe uplink (the link from a "
           "switch or a root port up to the CPU; the entity is its root port's PCI address) "
           "together move less than the failure share of what that link carries.",
           "Check the uplink's link with `lspci -vv -s <root port>` (LnkSta against LnkCap) and "
           "`lspci -tv` for what else sits behind it; reseat or replace the switch board or "
           "cable, check the BIOS link settings. Drain until fixed."},
      }};
  return table;
}

}  // namespace preflight
