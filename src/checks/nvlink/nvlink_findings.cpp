// The nvlink check's finding codes. docs/checks/nvlink.md, "Finding codes", lists the same
// codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable: admins grep for
// them and drain reasons carry them.
#include "checks/nvlink/nvlink_findings.hpp"

namespace preflight {

const FindingTable& nvlink_findings() {
  static const FindingTable table{
      "nvlink",
      "docs/checks/nvlink.md",
      {
          {"NVLINK_NO_PEER_ACCESS", Severity::fail, Action::reset_gpu,
           "Two GPUs of an NVLink SKU cannot access each other's memory (no peer-to-peer path): "
           "collectives between them would fall back to slower paths.",
           "Check `nvidia-smi nvlink -s` and `nvidia-smi topo -m`; the fabric manager must run "
           "on NVSwitch systems (`systemctl status nvidia-fabricmanager`); reset the GPUs or "
           "reboot; RMA the baseboard if links stay down."},
          {"NVLINK_BANDWIDTH_LOW", Severity::fail, Action::reset_gpu,
           "GPU-to-GPU copy bandwidth of a pair is below the failure share of what the SKU's "
           "NVLinks carry: links are down or degraded.",
           "Check `nvidia-smi nvlink -s` and `-e` (error counters) for both GPUs; reset the GPUs "
           "or reboot; RMA the baseboard or GPU if links stay down. Drain until fixed."},
          {"NVLINK_BANDWIDTH_MARGINAL", Severity::warn, Action::none,
           "GPU-to-GPU copy bandwidth of a pair is below the warning share of what the SKU's "
           "NVLinks carry.",
           "Check `nvidia-smi nvlink -e` for replay or CRC errors on both GPUs; rerun `preflight "
           "run --checks nvlink` to confirm."},
      }};
  return table;
}

}  // namespace preflight
