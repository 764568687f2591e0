#pragma once
// Host-side arithmetic of the gemm check: the precision of each dtype's path, the input range
// that keeps products exact, the checksum tolerance, the memory a product needs, TFLOP/s and
// sample statistics. Pure functions, unit-tested (tests/checks/gemm/test_gemm_math.cpp).
#include <cstddef>
#include <vector>

#include "model/stats.hpp"  // summarize(): TFLOP/s statistics
#include "preflight/engine/gemm_engine.hpp"

namespace preflight {

// Significand bits (including the implicit bit) along one dtype's path.
struct GemmPrecision {
  int input_bits;       // bf16 8, fp16 11, tf32 11, fp32 24, fp64 53
  int accumulate_bits;  // fp32 24 (fp64 53); tensor-core paths are given 2 bits less (below)
  int output_bits;      // the output is fp32 (24), fp64 for fp64
  bool tensor_cores;    // bf16, fp16, tf32
};
GemmPrecision gemm_precision(GemmDtype dtype);

// Bits of the accumulator that exactness may rely on: the accumulator's significand, less a
// margin of 2 bits on tensor-core paths, whose adders align and truncate addends (Fasi et al.
// 2021, "Numerical behavior of NVIDIA tensor cores").
int gemm_exact_accumulate_bits(GemmDtype dtype);

// The largest R such that with inputs in [-R, R] every partial sum of a dot product of length k
// is at most 2^gemm_exact_accumulate_bits (k * R^2 <= 2^bits), every column sum of the output
// (m such values) is at most 2^50 so fp64 column sums are exact (m * k * R^2 <= 2^50), and R
// is representable in the input type (R <= 2^input_bits - 1); capped at 4096; at least 1.
int gemm_input_range(GemmDtype dtype, int m, int k);

// True when the product with inputs in [-range, range] is exact by the rules above.
bool gemm_is_exact(GemmDtype dtype, int m, int k, int range);

struct GemmTolerance {
  double output_roundoff = 0.0;     // times the column's sum of |C|
  double accumulation_gamma = 0.0;  // times the column's reference built from |A| and |B|
};
// Zero for an exact product; otherwise the output's unit roundoff 2^-output_bits and the
// classic bound gamma_k = k u / (1 - k u) with u = 2^-accumulate_bits (Higham, Accuracy and
// Stability of Numerical Algorithms, 3.1), doubled for tensor-core paths. Where k u >= 1 no such
// bound exists: gamma is then the largest finite double, which admits every finite column sum
// (only NaN/Inf fail). The fp64 rounding of the column sums themselves is not included: they
// are exact while m * k * R^2 <= 2^50, and otherwise far below an fp32 output's roundoff.
GemmTolerance gemm_tolerance(GemmDtype dtype, int m, int k, int range);

std::size_t gemm_input_bytes(GemmDtype dtype);   // bf16/fp16 2, tf32/fp32 4, fp64 8
std::size_t gemm_output_bytes(GemmDtype dtype);  // 4, fp64 8
// Room for the engine's verification result slots (4 of under 64 bytes each).
inline constexpr std::size_t kGemmResultSlotBytes = 256;
// Device memory one job needs: A, B, C, the fp64 vectors (2k + 4n doubles), the result slots
// and the workspace.
std::size_t gemm_footprint_bytes(GemmDtype dtype, int m, int n, int k, std::size_t workspace_bytes);

double gemm_flops(int m, int n, int k);  // 2 m n k
// TFLOP/s of one product that took `ms` milliseconds; 0 when ms <= 0.
double gemm_tflops(int m, int n, int k, double ms);

}  // namespace preflight
