// Finding codes several checks emit: a run-time library missing (gemm, nccl) and a fault
// injected at a device the node lacks (nccl, rdma). docs/findings.md, "Shared by several checks",
// lists the same codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable:
// admins grep for them and drain reasons carry them.
#include "checks/common/findings.hpp"

namespace preflight {

const FindingTable& shared_findings() {
  static const FindingTable table{
      "shared",
      "docs/findings.md",
      {
          {"TOOL_LIBRARY_MISSING", Severity::fail, Action::none,
           "A CUDA library this check needs (cuBLAS, NCCL), loaded at run time, was not found "
           "where preflight looks for it. A tool-installation problem, not a node fault: exit 3.",
           "Install the library the message names (the package's Recommends: cuBLAS and NCCL of "
           "the package's CUDA major), or set PREFLIGHT_CUBLAS_LIBRARY / PREFLIGHT_NCCL_LIBRARY "
           "to its path (docs/install.md).",
           Blame::tool},
          {"FAULT_TARGET_MISSING", Severity::fail, Action::none,
           "An injected fault names a device this node does not have (e.g. a NIC), so the drill "
           "could not test anything.",
           "Name a device the node has (`ibv_devices` for NICs) in --inject-fault."},
      }};
  return table;
}

}  // namespace preflight
