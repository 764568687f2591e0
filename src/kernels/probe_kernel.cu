#include "kernels/probe_kernel.hpp"

namespace preflight {
namespace {

__global__ void probe_pattern_kernel(std::uint32_t* words, std::size_t count, std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    words[i] = probe_pattern_word(i, seed);
  }
}

}  // namespace

cudaError_t launch_probe_pattern(std::uint32_t* device_words, std::size_t count, std::uint32_t seed,
                                 cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  constexpr unsigned kThreads = 256;
  // Enough blocks to touch every SM; the grid-stride loop covers larger buffers.
  constexpr std::size_t kMaxBlocks = 1024;
  std::size_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  probe_pattern_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(device_words, count,
                                                                               seed);
  return cudaGetLastError();
}

}  // namespace preflight
