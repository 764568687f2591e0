#pragma once
// What the engines' kernel files (bandwidth_kernels.cu, collective_kernels.cu, gemm_kernels.cu)
// share: the GPU's global timer, the test hooks' spin kernel and the preloading of a file's
// kernels. CUDA only: included by .cu files.
//
// The kernel and its launch are static, so every file that includes this header gets a copy of
// its own. Without relocatable device code a kernel lives in the module of the file that
// defines it, and each file's preload function must load the very copy its own launches use.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace preflight {
namespace kernel_support {

static __device__ inline unsigned long long global_timer_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

static __global__ void spin_kernel(unsigned long long nanoseconds) {
  const unsigned long long start = global_timer_ns();
  while (global_timer_ns() - start < nanoseconds) {
#if __CUDA_ARCH__ >= 700
    // Idle, not busy: the point is a stream (copies, products, a rank) that delivers less.
    __nanosleep(1000);
#endif
  }
}

// One thread that holds `stream` for `nanoseconds` on the global timer; nothing for 0.
static inline cudaError_t launch_spin(std::uint64_t nanoseconds, cudaStream_t stream) {
  if (nanoseconds == 0) return cudaSuccess;
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(nanoseconds));
  return cudaGetLastError();
}

// Loads `kernels` into the current device's context now: cudaFuncGetAttributes loads a lazily
// loaded kernel. The first error, if any.
template <std::size_t N>
cudaError_t preload(const void* const (&kernels)[N]) {
  for (const void* kernel : kernels) {
    cudaFuncAttributes attributes{};
    const cudaError_t status = cudaFuncGetAttributes(&attributes, kernel);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

}  // namespace kernel_support
}  // namespace preflight
