#pragma once
// The 32-bit mixing step that the kernels' words and digests share (the memory patterns, the
// responsiveness probe's pattern, the gemm digest), for kernels and host tests alike
// (host_device.hpp).
#include <cstdint>

#include "kernels/host_device.hpp"

namespace preflight {

// lowbias32, the murmur3-style finalizer: a bijection of 32-bit words (every step is
// invertible) in which neighbouring inputs give unrelated words.
PREFLIGHT_HOST_DEVICE inline std::uint32_t lowbias32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}

}  // namespace preflight
