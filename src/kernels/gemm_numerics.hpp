#pragma once
// The arithmetic the gemm check's kernels and its host-side tests share: the counter-based
// input generator, the per-element digest term, the checksum comparison and the choice of the
// bit an injected bit flip changes. Host and device run the same functions (host_device.hpp),
// so the CPU reference in tests/checks/gemm/test_gemm_numerics.cpp checks what the GPU computes.
//
// Inputs are small integers in [-R, R]: every product and partial sum is then an integer well
// inside the accumulator's exact range, so the product is exact whatever order cuBLAS sums in,
// and the fp64 column sums of the output must equal the reference bit for bit
// (docs/checks/gemm.md).
#include <cstdint>

#include "kernels/host_device.hpp"
#include "kernels/lowbias32.hpp"

namespace preflight {

// splitmix64's finalizer: a bijection of 64-bit words with good avalanche.
PREFLIGHT_HOST_DEVICE inline std::uint64_t gemm_mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

enum : int { kGemmMatrixA = 0, kGemmMatrixB = 1 };

// The stream of one input matrix for one seed: hoisted out of the per-element loop.
PREFLIGHT_HOST_DEVICE inline std::uint64_t gemm_input_stream(std::uint64_t seed, int matrix) {
  return gemm_mix64(seed ^ (static_cast<std::uint64_t>(matrix) << 56));
}

// Element `index` (column-major) of the matrix whose stream this is: an integer in
// [-range, range]. The top 32 bits of the hash are scaled to the span with a multiply and a
// shift (Lemire's range reduction) rather than a 64-bit modulo, which costs tens of
// instructions per element on a GPU.
PREFLIGHT_HOST_DEVICE inline int gemm_input_from_stream(std::uint64_t stream, std::uint64_t index,
                                                        int range) {
  const std::uint64_t h = gemm_mix64(stream + index * 0x9E3779B97F4A7C15ull);
  const auto span = static_cast<std::uint64_t>(2 * range + 1);
  return static_cast<int>(((h >> 32) * span) >> 32) - range;
}

// Element `index` (column-major) of input matrix `matrix` for `seed`: an integer in
// [-range, range]. Counter-based: any element can be computed on its own, on any device, with
// no state, so every GPU of a node generates exactly the same inputs.
PREFLIGHT_HOST_DEVICE inline int gemm_input_value(std::uint64_t seed, int matrix,
                                                  std::uint64_t index, int range) {
  return gemm_input_from_stream(gemm_input_stream(seed, matrix), index, range);
}

// The digest of an output is the sum (mod 2^64) of one term per element. A sum does not depend
// on the order threads add in, so the digest is deterministic; the term mixes the element's
// index with its bits, so a changed bit or two swapped elements change the digest. For a fixed
// index the term is a bijection of a 32-bit element (any change of an fp32 output changes the
// digest); 64-bit elements are folded first.
PREFLIGHT_HOST_DEVICE inline std::uint32_t gemm_digest_term(std::uint64_t index,
                                                            std::uint64_t bits) {
  std::uint32_t x = static_cast<std::uint32_t>(bits) ^
                    (static_cast<std::uint32_t>(bits >> 32) * 0x27D4EB2Fu) ^
                    (static_cast<std::uint32_t>(index) * 0x9E3779B1u) ^
                    (static_cast<std::uint32_t>(index >> 32) * 0x85EBCA77u);
  return lowbias32(x);
}

// Allowed difference between a column's sum and its reference: the output's rounding
// (unit roundoff times the sum of the column's magnitudes) plus the accumulation error bound
// (gamma times the reference built from |A| and |B|). Both factors are 0 when the product is
// exact (gemm_math.hpp decides), and the comparison is then bit for bit.
PREFLIGHT_HOST_DEVICE inline double gemm_checksum_tolerance(double output_roundoff,
                                                            double accumulation_gamma,
                                                            double abs_column_sum,
                                                            double abs_reference) {
  return output_roundoff * abs_column_sum + accumulation_gamma * abs_reference;
}

// True when the column sum is within tolerance of the reference; false for NaN or Inf.
PREFLIGHT_HOST_DEVICE inline bool gemm_column_ok(double actual, double expected, double tolerance) {
  double diff = actual - expected;
  if (diff < 0) diff = -diff;
  return diff <= tolerance;  // NaN compares false
}

// The bit an injected flip changes when none was asked for, given the element's bits: the top
// mantissa bit (a change of a quarter to a half of the value, finite, far above the checksum's
// resolution), or for a zero element the top exponent bit (0 becomes 2). `wide`: fp64 element.
PREFLIGHT_HOST_DEVICE inline int gemm_default_flip_bit(std::uint64_t bits, bool wide) {
  const std::uint64_t magnitude = wide ? (bits & 0x7FFFFFFFFFFFFFFFull) : (bits & 0x7FFFFFFFull);
  if (magnitude == 0) return wide ? 62 : 30;
  return wide ? 51 : 22;
}

}  // namespace preflight
