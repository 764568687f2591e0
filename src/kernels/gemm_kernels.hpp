#pragma once
// The gemm check's device code (src/kernels/gemm_kernels.cu): input generation, the fp64
// column references, the fused verification of a product's output, and the two test hooks
// (an injected corruption, a GPU held idle). Only the CUDA runtime's types appear here, so the
// engine (src/gpu/cublas_gemm_engine.cpp) includes it without the device headers; the arithmetic
// the kernels share with the host tests is in gemm_numerics.hpp.
//
// Every launcher queues its work on `stream` and returns the launch error, if any; completion
// and asynchronous errors are the caller's to observe (with events, never a synchronize).
#include <cuda_runtime_api.h>

#include <cstdint>

namespace preflight {

// How the input matrices A and B are stored: bf16, fp16, fp32 (the tf32 and fp32 paths) or
// fp64. Outputs are fp32, fp64 for fp64 inputs (`wide` below).
enum class GemmElement { bf16, fp16, fp32, fp64 };

// What the verification kernel found in one product. The engine zeroes it (cudaMemsetAsync)
// before the kernel and copies it back after, so every field is 0 for a clean output, and a
// column index is stored complemented: atomicMax of ~column keeps the smallest bad column,
// and 0 (the zeroed value) means none, with no separate initialization.
struct GemmVerifyResult {
  unsigned long long digest;              // sum mod 2^64 of gemm_digest_term over the output
  unsigned long long nonfinite;           // NaN or Inf elements
  unsigned long long bad_columns;         // columns whose sum misses the reference
  unsigned long long first_bad_inverted;  // ~(smallest bad column), 0 when none
  double first_bad_expected;              // reference sum of that column
  double first_bad_actual;                // its sum in the output
};
static_assert(sizeof(unsigned long long) == 8, "device atomics on 64-bit words");

// The smallest bad column of a result, -1 when none.
inline std::int64_t gemm_first_bad_column(const GemmVerifyResult& result) {
  return result.first_bad_inverted == 0 ? -1
                                        : static_cast<std::int64_t>(~result.first_bad_inverted);
}

// out[i] = gemm_input_value(seed, matrix, i, range) converted exactly to `type`, for
// i < count: the whole column-major matrix, whose element (row, col) has index row + col * rows.
cudaError_t launch_gemm_generate(GemmElement type, void* out, std::uint64_t count,
                                 std::uint64_t seed, int matrix, int range, cudaStream_t stream);

// For each column l of the rows x cols matrix `a`: sums[l] = sum_i a(i, l) and
// abs_sums[l] = sum_i |a(i, l)|, in fp64.
cudaError_t launch_gemm_column_sums(GemmElement type, const void* a, int rows, int cols,
                                    double* sums, double* abs_sums, cudaStream_t stream);

// For each column j of the k x n matrix `b`: ref[j] = sum_l col_a[l] * b(l, j) and
// abs_ref[j] = sum_l abs_col_a[l] * |b(l, j)|, in fp64: the column sums that A * B must have.
cudaError_t launch_gemm_reference(GemmElement type, const void* b, int k, int n,
                                  const double* col_a, const double* abs_col_a, double* ref,
                                  double* abs_ref, cudaStream_t stream);

struct GemmVerifyArgs {
  const void* c = nullptr;  // m x n output, column-major, ldc = m
  bool wide = false;        // fp64 output (else fp32)
  int m = 0;
  int n = 0;
  const double* ref = nullptr;      // n reference column sums
  const double* abs_ref = nullptr;  // n reference sums built from |A| and |B|
  double output_roundoff = 0.0;     // tolerance factors (gemm_checksum_tolerance)
  double accumulation_gamma = 0.0;
  // n doubles each, scratch: the sums of a bad column are written at its index, so that the
  // smallest bad column's can be picked once every column is judged.
  double* bad_expected = nullptr;
  double* bad_actual = nullptr;
  GemmVerifyResult* result = nullptr;  // zeroed by the caller beforehand
};

// Reads the output once: per column the fp64 sum and sum of magnitudes, checked against the
// reference; non-finite elements; the digest. Then fills result->first_bad_* (a second,
// one-thread kernel, so the values belong to the smallest bad column whatever order the
// columns finished in).
cudaError_t launch_gemm_verify(const GemmVerifyArgs& args, cudaStream_t stream);

// Test hook (--inject-fault): changes output element `index` of `c`. nan: writes a quiet NaN;
// otherwise flips bit `bit` (0-31 for fp32, 0-63 for fp64), or when bit < 0 the bit
// gemm_default_flip_bit chooses for the element's value.
cudaError_t launch_gemm_inject(void* c, bool wide, std::uint64_t index, int bit, bool nan,
                               cudaStream_t stream);

// Test hook (--inject-fault gemm-slow): one thread waits `nanoseconds` on the GPU's global
// timer, so the stream holds the GPU idle that long.
cudaError_t launch_gemm_spin(std::uint64_t nanoseconds, cudaStream_t stream);

// Loads every kernel of this file now (CUDA loads modules lazily at first launch): the loading
// then happens at setup, not in the middle of a timed product.
cudaError_t preload_gemm_kernels();

}  // namespace preflight
