// Host-side arithmetic of the gemm check (gemm_math.hpp). The exactness bounds are computed in
// unsigned 64-bit integers by division, never by multiplying m * k * R^2 (which overflows for
// large arguments) and never in floating point (where floor(sqrt(x)) can be off by one).
#include "checks/gemm/gemm_math.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace preflight {
namespace {

// fp64 column sums and references are exact while every one stays below 2^50: a margin of 3
// bits under fp64's 53 for the sum of the reference's own partial products.
constexpr int kColumnSumBits = 50;
constexpr std::uint64_t kMaxInputRange = 4096;

// Largest r with r * r <= x.
std::uint64_t isqrt(std::uint64_t x) {
  auto r = static_cast<std::uint64_t>(std::sqrt(static_cast<long double>(x)));
  // The floating-point root can be one off either way near large perfect squares.
  while (r > 0 && r * r > x) --r;
  while ((r + 1) * (r + 1) <= x) ++r;
  return r;
}

// Largest R^2 such that the partial sums (k * R^2 <= 2^exact bits) and the column sums
// (m * k * R^2 <= 2^50) stay exact. floor(floor(N / a) / b) == floor(N / (a * b)) for positive
// integers, so the divisions give the exact bound without forming the product.
std::uint64_t max_range_squared(GemmDtype dtype, int m, int k) {
  const auto mm = static_cast<std::uint64_t>(std::max(m, 1));
  const auto kk = static_cast<std::uint64_t>(std::max(k, 1));
  const std::uint64_t by_partial_sums =
      (std::uint64_t{1} << gemm_exact_accumulate_bits(dtype)) / kk;
  const std::uint64_t by_column_sums = ((std::uint64_t{1} << kColumnSumBits) / mm) / kk;
  return std::min(by_partial_sums, by_column_sums);
}

std::uint64_t max_representable_input(GemmDtype dtype) {
  return (std::uint64_t{1} << gemm_precision(dtype).input_bits) - 1;
}

}  // namespace

GemmPrecision gemm_precision(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16:
      return {8, 24, 24, true};
    case GemmDtype::fp16:
      return {11, 24, 24, true};
    case GemmDtype::tf32:
      return {11, 24, 24, true};
    case GemmDtype::fp32:
      return {24, 24, 24, false};
    case GemmDtype::fp64:
      return {53, 53, 53, false};
  }
  return {8, 24, 24, true};
}

int gemm_exact_accumulate_bits(GemmDtype dtype) {
  const GemmPrecision p = gemm_precision(dtype);
  return p.tensor_cores ? p.accumulate_bits - 2 : p.accumulate_bits;
}

int gemm_input_range(GemmDtype dtype, int m, int k) {
  std::uint64_t r = isqrt(max_range_squared(dtype, m, k));
  r = std::min({r, max_representable_input(dtype), kMaxInputRange});
  return static_cast<int>(std::max<std::uint64_t>(r, 1));
}

bool gemm_is_exact(GemmDtype dtype, int m, int k, int range) {
  const auto r = static_cast<std::uint64_t>(std::max(range, 0));
  // r <= 2^31, so r * r cannot overflow.
  return r <= max_representable_input(dtype) && r * r <= max_range_squared(dtype, m, k);
}

GemmTolerance gemm_tolerance(GemmDtype dtype, int m, int k, int range) {
  if (gemm_is_exact(dtype, m, k, range)) return {};
  const GemmPrecision p = gemm_precision(dtype);
  GemmTolerance t;
  t.output_roundoff = std::ldexp(1.0, -p.output_bits);
  const double ku = static_cast<double>(std::max(k, 1)) * std::ldexp(1.0, -p.accumulate_bits);
  if (ku >= 1.0) {
    // gamma_k does not exist: nothing bounds the accumulation error. The largest double makes
    // every finite column sum pass (it stays finite times a zero reference, where infinity
    // would give NaN and fail), so only the NaN/Inf detector can still see a fault.
    t.accumulation_gamma = std::numeric_limits<double>::max();
    return t;
  }
  t.accumulation_gamma = ku / (1.0 - ku);
  if (p.tensor_cores) t.accumulation_gamma *= 2.0;
  return t;
}

std::size_t gemm_input_bytes(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16:
    case GemmDtype::fp16:
      return 2;
    case GemmDtype::tf32:
    case GemmDtype::fp32:
      return 4;
    case GemmDtype::fp64:
      return 8;
  }
  return 4;
}

std::size_t gemm_output_bytes(GemmDtype dtype) {
  return dtype == GemmDtype::fp64 ? 8 : 4;
}

std::size_t gemm_footprint_bytes(GemmDtype dtype, int m, int n, int k,
                                 std::size_t workspace_bytes) {
  const auto mm = static_cast<std::size_t>(std::max(m, 0));
  const auto nn = static_cast<std::size_t>(std::max(n, 0));
  const auto kk = static_cast<std::size_t>(std::max(k, 0));
  const std::size_t in = gemm_input_bytes(dtype);
  // Plus the fp64 vectors, as the engine allocates them (src/gpu/cublas_gemm_engine.cpp): column
  // sums of A and |A| (2k), the reference and its |A||B| twin, and the sums of a bad column
  // (4n); and kGemmResultSlotBytes of verification results.
  return mm * kk * in + kk * nn * in + mm * nn * gemm_output_bytes(dtype) +
         (2 * kk + 4 * nn) * sizeof(double) + kGemmResultSlotBytes + workspace_bytes;
}

double gemm_flops(int m, int n, int k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double gemm_tflops(int m, int n, int k, double ms) {
  if (!(ms > 0.0)) return 0.0;
  return gemm_flops(m, n, k) / (ms * 1e-3) / 1e12;
}

}  // namespace preflight
