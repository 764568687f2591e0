#pragma once
// Binary byte units, one definition for every library and test that sizes buffers or prints
// sizes in MiB (a unity build merges the sources of a target, where copies of their own clash).
#include <cstdint>

namespace preflight {

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

}  // namespace preflight
