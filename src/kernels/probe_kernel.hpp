#pragma once
// The responsiveness probe's kernel: it fills a buffer with a pattern that the host recomputes
// to verify the copy-back. probe_pattern_word() is plain host code for compilers without the
// toolkit's headers (the unit tests), and host-and-device code under nvcc.
#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__) || __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#define PREFLIGHT_PROBE_KERNEL_HAVE_CUDA 1
#endif

#include "kernels/host_device.hpp"
#include "kernels/lowbias32.hpp"

namespace preflight {

// A bijective hash of the index for a fixed seed (and of the seed for a fixed index), so
// neighbouring words and different seeds never produce the same word: a stale buffer or a copy
// that moved words around cannot pass verification.
PREFLIGHT_HOST_DEVICE inline std::uint32_t probe_pattern_word(std::size_t i, std::uint32_t seed) {
  const auto index = static_cast<std::uint64_t>(i);
  std::uint32_t x = static_cast<std::uint32_t>(index) * 0x9E3779B1u;
  x ^= static_cast<std::uint32_t>(index >> 32) * 0x85EBCA77u;
  x ^= seed ^ 0xA511E9B3u;  // keeps word 0 of seed 0 from being 0, like zeroed memory
  return lowbias32(x);
}

#ifdef PREFLIGHT_PROBE_KERNEL_HAVE_CUDA
// Queues a kernel on `stream` that sets device_words[i] = probe_pattern_word(i, seed) for
// i < count. Returns the launch error, if any; completion is the caller's to observe.
cudaError_t launch_probe_pattern(std::uint32_t* device_words, std::size_t count, std::uint32_t seed,
                                 cudaStream_t stream);
#endif

}  // namespace preflight
