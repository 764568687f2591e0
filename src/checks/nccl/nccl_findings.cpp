// The nccl check's finding codes. docs/checks/nccl.md, "Finding codes", lists the same
// codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable: admins grep for
// them and drain reasons carry them.
#include "checks/nccl/nccl_findings.hpp"

namespace preflight {

const FindingTable& nccl_findings() {
  static const FindingTable table{
      "nccl",
      "docs/checks/nccl.md",
      {
          {"NCCL_INIT_FAILED", Severity::fail, Action::service,
           "NCCL could not create the node's communicator (one rank per GPU, in one process): a "
           "job using NCCL on this node would fail at start-up.",
           "Read the NCCL error in the message; rerun with NCCL_DEBUG=INFO for details. Check "
           "that every GPU answers (`nvidia-smi`), that peer access and the fabric manager work "
           "on NVSwitch systems (`systemctl status nvidia-fabricmanager`), and `dmesg` for Xid "
           "errors."},
          {"NCCL_ERROR", Severity::fail, Action::reset_gpu,
           "An NCCL collective or a CUDA call around it failed after the communicator came up.",
           "Read the NCCL or CUDA error in the message; check `dmesg` for Xid errors and "
           "`nvidia-smi nvlink -s` for links down; reset the GPUs or reboot, then rerun "
           "`preflight run --checks nccl`."},
          {"NCCL_TIMEOUT", Severity::fail, Action::reset_gpu,
           "NCCL collectives (or creating the communicator) did not complete before the deadline; "
           "the communicators were aborted. A GPU, an NVLink or the driver hung.",
           "Check `dmesg` for Xid errors and whether `nvidia-smi` still answers; drain the node "
           "and reset the GPUs or reboot."},
          {"NCCL_DATA_MISMATCH", Severity::fail, Action::service,
           "Data moved by an NCCL collective arrived changed. The entity is the GPU whose "
           "contribution arrived corrupt everywhere, the GPU that received everything corrupt, "
           "the pair between which it changed, or the node when the source cannot be told.",
           "Drain the node; check `dmesg` for Xid errors, `nvidia-smi -q -d ECC` and `nvidia-smi "
           "nvlink -e` (error counters) for the GPUs named; rerun `preflight run --checks "
           "nccl,nvlink,hbm`; RMA the GPU or baseboard named if it repeats."},
          {"NCCL_BUSBW_LOW", Severity::fail, Action::service,
           "The node's NCCL bus bandwidth (all-gather or all-reduce, largest size) is below the "
           "failure share of the SKU's figure: collectives of every job on the node would be "
           "slow.",
           "Run `preflight run --checks nvlink,pcie` to find a slow link or GPU; check "
           "`nvidia-smi nvlink -s`, `nvidia-smi topo -m` and the fabric manager; compare with "
           "nccl-tests (docs/checks/nccl.md)."},
          {"NCCL_BUSBW_MARGINAL", Severity::warn, Action::none,
           "The node's NCCL bus bandwidth is below the warning share of the SKU's figure.",
           "Rerun `preflight run --checks nccl` on an idle node; compare with nccl-tests "
           "(docs/checks/nccl.md) and check NVLink error counters (`nvidia-smi nvlink -e`)."},
          {"NCCL_GPU_NOT_TESTED", Severity::warn, Action::none,
           "CUDA cannot use this GPU, so it took no part in the NCCL collectives: it is "
           "unverified.",
           "Fix why CUDA cannot see the GPU (inventory reports it: CUDA_VISIBLE_DEVICES, Xid "
           "errors, a GPU lost to the driver), then rerun."},
      }};
  return table;
}

}  // namespace preflight
