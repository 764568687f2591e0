// Finding codes of the copies pcie, nvlink and hbm share (bandwidth_faults.cpp): data that
// arrived changed, a copy that hung or failed, a GPU CUDA cannot use. docs/checks/bandwidth.md,
// "Finding codes", lists the same codes (tests/unit/test_catalogue.cpp keeps the two in step).
// Codes are stable: admins grep for them and drain reasons carry them.
#include "checks/common/findings.hpp"

namespace preflight {

const FindingTable& bandwidth_findings() {
  static const FindingTable table{
      "bandwidth",
      "docs/checks/bandwidth.md",
      {
          {"BANDWIDTH_DATA_MISMATCH", Severity::fail, Action::service,
           "Bytes that a bandwidth measurement copied arrived changed: the copy path (PCIe, "
           "NVLink or memory) corrupted data.",
           "Drain the node; check `dmesg` for Xid and AER errors and `nvidia-smi -q -d ECC`; "
           "rerun the check to confirm; reseat or RMA the component on the path named in the "
           "message."},
          {"BANDWIDTH_CUDA_ERROR", Severity::fail, Action::reset_gpu,
           "A CUDA call failed while a bandwidth check copied or tested memory on this GPU or "
           "pair.",
           "Check `dmesg` for Xid errors; if the message says out of memory, free the memory "
           "another process holds; otherwise reset the GPU or reboot and rerun."},
          {"BANDWIDTH_GPU_NOT_TESTED", Severity::warn, Action::none,
           "CUDA cannot use this GPU, so its copies and memory were not measured: it is "
           "unverified.",
           "Fix why CUDA cannot see the GPU (inventory reports it: CUDA_VISIBLE_DEVICES, Xid "
           "errors, a GPU lost to the driver), then rerun."},
          {"BANDWIDTH_TIMEOUT", Severity::fail, Action::reset_gpu,
           "Copies or memory tests on this GPU or pair did not complete before the check's "
           "deadline: the GPU, the link or the driver hung.",
           "Check `dmesg` for Xid errors and whether nvidia-smi still answers; drain the node "
           "and reset the GPU or reboot."},
      }};
  return table;
}

}  // namespace preflight
