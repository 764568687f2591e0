// The gemm check's finding codes. docs/checks/gemm.md, "Finding codes", lists the same
// codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable: admins grep for
// them and drain reasons carry them.
#include "checks/gemm/gemm_findings.hpp"

namespace preflight {

const FindingTable& gemm_findings() {
  static const FindingTable table{
      "gemm",
      "docs/checks/gemm.md",
      {
          {"GEMM_NAN_INF", Severity::fail, Action::service,
           "A matrix product of finite inputs produced NaN or Inf outputs: the GPU computed "
           "garbage (silent data corruption that a job would not notice).",
           "Drain the node; rerun preflight run --checks gemm --profile burnin to confirm; RMA "
           "the GPU with the verdict (serial, UUID)."},
          {"GEMM_CHECKSUM_MISMATCH", Severity::fail, Action::service,
           "Column sums of a product's output disagree with the sums computed from its inputs: "
           "the GPU returned a wrong result (silent data corruption).",
           "Drain the node; rerun preflight run --checks gemm --profile burnin to confirm; RMA "
           "the GPU with the verdict (serial, UUID)."},
          {"GEMM_NOT_REPEATABLE", Severity::fail, Action::service,
           "The same product on the same inputs gave different output bits on this GPU from one "
           "repeat to the next (silent data corruption; a healthy GPU is deterministic here).",
           "Drain the node; rerun preflight run --checks gemm --profile burnin to confirm; RMA "
           "the GPU with the verdict (serial, UUID)."},
          {"GEMM_CONSENSUS_MINORITY", Severity::fail, Action::service,
           "This GPU's output differs from the output that the majority of the node's GPUs of the "
           "same model computed for the same product (silent data corruption).",
           "Drain the node; rerun preflight run --checks gemm --profile burnin to confirm; RMA "
           "the GPU with the verdict (serial, UUID)."},
          {"GEMM_CONSENSUS_TIE", Severity::fail, Action::service,
           "GPUs of the same model computed different outputs for the same product and split "
           "evenly, so no majority tells which one is wrong; every GPU of the tie is reported.",
           "Drain the node; rerun preflight run --checks gemm --profile burnin and look for a "
           "checksum or repeatability finding that names the faulty GPU; RMA that GPU with the "
           "verdict (serial, UUID)."},
          {"GEMM_TFLOPS_LOW", Severity::fail, Action::service,
           "The GPU's median matrix-product speed is below the failure share of the SKU's "
           "sustained figure where it has one, else of its datasheet peak.",
           "Read the telemetry in the message: power cap (check nvidia-smi -q -d POWER), thermal "
           "slowdown (airflow, fans, inlet temperature), HW slowdown or power brake (PSU, power "
           "brake signal); nvidia-smi -q -d PERFORMANCE shows the active reasons. Drain until "
           "fixed."},
          {"GEMM_TFLOPS_MARGINAL", Severity::warn, Action::none,
           "The GPU's median matrix-product speed is below the warning share of the SKU's "
           "sustained figure where it has one, else of its datasheet peak.",
           "Read the telemetry in the message: power cap, thermal slowdown (airflow, fans, inlet "
           "temperature) or HW slowdown (power brake, PSU); nvidia-smi -q -d PERFORMANCE shows "
           "the active reasons."},
          {"GEMM_STRAGGLER", Severity::warn, Action::none,
           "The GPU is slower at matrix products than the median of the node's GPUs of its model "
           "by more than the warning percentage; a synchronous job runs at the pace of its "
           "slowest GPU.",
           "Read the telemetry in the message: power cap, thermal slowdown (airflow, fans, inlet "
           "temperature) or HW slowdown (power brake, PSU); nvidia-smi -q -d PERFORMANCE shows "
           "the active reasons."},
          {"GEMM_STRAGGLER_SEVERE", Severity::fail, Action::service,
           "The GPU is slower at matrix products than the median of the node's GPUs of its model "
           "by more than the failure percentage; it would hold back every job on the node.",
           "Drain the node; read the telemetry in the message: power cap, thermal slowdown "
           "(airflow, fans, inlet temperature) or HW slowdown (power brake, PSU); nvidia-smi -q "
           "-d PERFORMANCE shows the active reasons."},
          {"GEMM_CUDA_ERROR", Severity::fail, Action::reset_gpu,
           "A CUDA or cuBLAS call failed while the GPU ran or verified matrix products.",
           "Check dmesg for Xid errors; reset the GPU (nvidia-smi -r) or reboot the node, then "
           "rerun preflight; RMA if it repeats."},
          {"GEMM_TIMEOUT", Severity::fail, Action::reset_gpu,
           "Matrix products on this GPU did not complete before the check's deadline: the GPU or "
           "the driver hung.",
           "Check dmesg for Xid errors and whether nvidia-smi still answers; drain the node and "
           "reset the GPU or reboot."},
          {"GEMM_GPU_NOT_TESTED", Severity::warn, Action::none,
           "Matrix products were not run on this GPU, so it is unverified; the message says why.",
           "Act on the message: free the GPU memory held by another process (nvidia-smi lists "
           "it), or fix why CUDA cannot see the GPU (CUDA_VISIBLE_DEVICES, Xid errors); then "
           "rerun."},
      }};
  return table;
}

}  // namespace preflight
