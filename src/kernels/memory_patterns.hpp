#pragma once
// The words the hbm pattern test writes and the copy measurements fill their sources with, for
// kernels and host tests alike (host_device.hpp): the engine's kernels and the host-side checks
// of tests/checks/common/test_bandwidth_math.cpp compute the very same words.
#include <cstdint>

#include "kernels/host_device.hpp"
#include "kernels/lowbias32.hpp"

namespace preflight {

// Pattern ids (the values of MemoryPattern in include/preflight/engine/bandwidth_engine.hpp).
enum : int {
  kPatternZeros = 0,
  kPatternOnes = 1,
  kPatternCheckerboard = 2,
  kPatternAddress = 3,
  kPatternInverseAddress = 4,
  kPatternRandom = 5,
};

// Word `index` of `pattern` for `seed`. `pass` alternates the checkerboard between its two
// phases (0x55555555 / 0xAAAAAAAA) so that every bit is written both ways.
PREFLIGHT_HOST_DEVICE inline std::uint32_t memory_pattern_word(int pattern, std::uint64_t index,
                                                               std::uint64_t seed, int pass = 0) {
  const auto low = static_cast<std::uint32_t>(index);
  const auto high = static_cast<std::uint32_t>(index >> 32);
  switch (pattern) {
    case kPatternZeros:
      return 0u;
    case kPatternOnes:
      return 0xFFFFFFFFu;
    case kPatternCheckerboard:
      // Alternates per word too, so neighbouring words never hold the same value.
      return ((low ^ static_cast<std::uint32_t>(pass)) & 1u) ? 0xAAAAAAAAu : 0x55555555u;
    case kPatternAddress:
      return low ^ (high * 0x9E3779B1u);  // the word's own index (folded above 4 Gi words)
    case kPatternInverseAddress:
      return ~(low ^ (high * 0x9E3779B1u));
    default:  // kPatternRandom
      // lowbias32: neighbouring indices give unrelated words.
      return lowbias32(low ^ lowbias32(high ^ static_cast<std::uint32_t>(seed) ^
                                       static_cast<std::uint32_t>(seed >> 32) * 0x85EBCA77u));
  }
}

}  // namespace preflight
