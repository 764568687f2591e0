#include "checks/gemm/gemm_faults.hpp"

#include "checks/common/fault_kinds.hpp"

namespace preflight {

std::vector<FaultKindSpec> gemm_fault_kinds() {
  // Consensus codes appear only where two or more GPUs of the model ran; the tie, on every GPU
  // of a two-GPU split.
  FaultKindSpec bitflip = fault_kind(
      "gemm-bitflip", TargetType::gpu,
      "flip bit BIT (0-31; default: the top mantissa bit) of one output element of one product, "
      "between the product and its verification",
      {"GEMM_CHECKSUM_MISMATCH", "GEMM_NOT_REPEATABLE", "GEMM_CONSENSUS_MINORITY",
       "GEMM_CONSENSUS_TIE"},
      FaultValue::optional_number, 0, 31);
  bitflip.integer = true;  // a bit number
  return {
      bitflip,
      fault_kind("gemm-nan", TargetType::gpu, "write a NaN into one output element of one product",
                 {"GEMM_NAN_INF", "GEMM_CHECKSUM_MISMATCH", "GEMM_NOT_REPEATABLE",
                  "GEMM_CONSENSUS_MINORITY", "GEMM_CONSENSUS_TIE"}),
      slow_kind(
          "gemm-slow", TargetType::gpu,
          "the GPU delivers FACTOR of its speed (held idle after each product), e.g. 0.9",
          {"GEMM_TFLOPS_LOW", "GEMM_TFLOPS_MARGINAL", "GEMM_STRAGGLER", "GEMM_STRAGGLER_SEVERE"}),
  };
}

bool apply_gemm_faults(const FaultPlan& faults, GemmJob& job) {
  bool applied = false;
  if (const InjectedFault* f = faults.for_gpu("gemm-bitflip", job.gpu_index)) {
    job.inject_bitflip = true;
    job.bitflip_bit = f->number ? static_cast<int>(*f->number) : -1;
    applied = true;
  }
  if (faults.for_gpu("gemm-nan", job.gpu_index) != nullptr) {
    job.inject_nan = true;
    applied = true;
  }
  if (const InjectedFault* f = faults.for_gpu("gemm-slow", job.gpu_index)) {
    job.slow_factor = f->number.value_or(1.0);
    applied = true;
  }
  return applied;
}

}  // namespace preflight
