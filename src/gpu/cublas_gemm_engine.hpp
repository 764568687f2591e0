#pragma once
// The cuBLAS implementation of GemmEngine (include/preflight/gemm_engine.hpp): the products of
// the gemm check and the benchmark's plain loop. Owned by the CUDA backend
// (cuda_backend.cpp, NodeBackend::gemm_engine()).
#include "preflight/engine/gemm_engine.hpp"

namespace preflight {

// Stateless: every call sets up (and tears down, or abandons) its own stream, cuBLAS handle and
// memory, so jobs for different GPUs run concurrently on threads of their own.
class CudaGemmEngine final : public GemmEngine {
 public:
  GemmGpuRun run(const GemmJob& job) override;
  PlainLoop run_plain_loop(const GemmJob& job) override;
};

}  // namespace preflight
