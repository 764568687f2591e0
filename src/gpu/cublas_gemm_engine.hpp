#pragma once
// The cuBLAS implementation of GemmEngine (include/preflight/engine/gemm_engine.hpp): the
// products of the gemm check and the benchmark's plain loop. cuBLAS is loaded with dlopen on
// first use (cublas_library.hpp).
#include <memory>
#include <mutex>
#include <string>

#include "gpu/cublas_library.hpp"
#include "preflight/engine/gemm_engine.hpp"

namespace preflight {

// Every call sets up (and tears down, or abandons) its own stream, cuBLAS handle and memory, so
// jobs for different GPUs run concurrently on threads of their own. The one shared state is the
// loaded library.
class CudaGemmEngine final : public GemmEngine {
 public:
  std::string library_problem() override;
  GemmGpuRun run(const GemmJob& job) override;
  PlainLoop run_plain_loop(const GemmJob& job) override;

 private:
  // Loaded once, on first use: the check's jobs ask from threads of their own.
  const CublasLibrary& cublas();

  std::once_flag once_;
  std::unique_ptr<CublasLibrary> cublas_;
};

}  // namespace preflight
