#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/gemm_kernels.hpp"
#include "kernels/gemm_numerics.hpp"
#include "kernels/kernel_support.cuh"

namespace preflight {
namespace {

// Column kernels run one block per column: a column is contiguous in column-major storage, so
// a block reads it coalesced, and its sums need no atomics.
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kMaxColumnBlocks = 1u << 20;  // more columns: blocks stride over them
constexpr unsigned kMaxGenerateBlocks = 4096;    // grid-stride beyond this
constexpr int kBatch = 4;                        // loads in flight per thread (verify_kernel)

template <class T>
__device__ T from_int(int value);
template <>
__device__ __nv_bfloat16 from_int<__nv_bfloat16>(int value) {
  return __float2bfloat16_rn(static_cast<float>(value));
}
template <>
__device__ __half from_int<__half>(int value) {
  return __float2half_rn(static_cast<float>(value));
}
template <>
__device__ float from_int<float>(int value) {
  return static_cast<float>(value);
}
template <>
__device__ double from_int<double>(int value) {
  return static_cast<double>(value);
}

__device__ double to_double(__nv_bfloat16 x) {
  return static_cast<double>(__bfloat162float(x));
}
__device__ double to_double(__half x) {
  return static_cast<double>(__half2float(x));
}
__device__ double to_double(float x) {
  return static_cast<double>(x);
}
__device__ double to_double(double x) {
  return x;
}

// The sum of `value` over the block, valid in thread 0. Every thread of the block must call
// it; `shared` (kWarps entries) is free again when it returns.
template <class T>
__device__ T block_sum(T value, T* shared) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value += __shfl_down_sync(0xFFFFFFFFu, value, offset);
  }
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = value;
  __syncthreads();
  T total = T{};
  if (threadIdx.x == 0) {
    for (int w = 0; w < kWarps; ++w) total += shared[w];
  }
  __syncthreads();
  return total;
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    generate_kernel(T* out, std::uint64_t count, std::uint64_t seed, int matrix, int range) {
  const std::uint64_t stride = static_cast<std::uint64_t>(blockDim.x) * gridDim.x;
  const std::uint64_t stream = gemm_input_stream(seed, matrix);
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    out[i] = from_int<T>(gemm_input_from_stream(stream, i, range));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    column_sums_kernel(const T* a, int rows, int cols, double* sums, double* abs_sums) {
  __shared__ double shared[kWarps];
  for (int col = blockIdx.x; col < cols; col += gridDim.x) {
    const T* column = a + static_cast<std::size_t>(col) * rows;
    double sum = 0.0;
    double abs_sum = 0.0;
    for (int i = threadIdx.x; i < rows; i += kThreads) {
      const double v = to_double(column[i]);
      sum += v;
      abs_sum += fabs(v);
    }
    sum = block_sum(sum, shared);
    abs_sum = block_sum(abs_sum, shared);
    if (threadIdx.x == 0) {
      sums[col] = sum;
      abs_sums[col] = abs_sum;
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    reference_kernel(const T* b, int k, int n, const double* col_a, const double* abs_col_a,
                     double* ref, double* abs_ref) {
  __shared__ double shared[kWarps];
  for (int col = blockIdx.x; col < n; col += gridDim.x) {
    const T* column = b + static_cast<std::size_t>(col) * k;
    double sum = 0.0;
    double abs_sum = 0.0;
    for (int l = threadIdx.x; l < k; l += kThreads) {
      const double v = to_double(column[l]);
      sum += col_a[l] * v;
      abs_sum += abs_col_a[l] * fabs(v);
    }
    sum = block_sum(sum, shared);
    abs_sum = block_sum(abs_sum, shared);
    if (threadIdx.x == 0) {
      ref[col] = sum;
      abs_ref[col] = abs_sum;
    }
  }
}

// One thread's share of a column of the output.
struct ColumnPartial {
  double sum = 0.0;
  double abs_sum = 0.0;
  unsigned long long digest = 0;
  unsigned long long nonfinite = 0;

  __device__ void add(float x, unsigned long long index) {
    const unsigned int bits = __float_as_uint(x);
    add_value(static_cast<double>(x), (bits & 0x7F800000u) == 0x7F800000u, index, bits);
  }
  __device__ void add(double x, unsigned long long index) {
    const auto bits = static_cast<unsigned long long>(__double_as_longlong(x));
    add_value(x, (bits & 0x7FF0000000000000ull) == 0x7FF0000000000000ull, index, bits);
  }
  __device__ void add(const float4& v, unsigned long long index) {
    add(v.x, index);
    add(v.y, index + 1);
    add(v.z, index + 2);
    add(v.w, index + 3);
  }
  __device__ void add(const double2& v, unsigned long long index) {
    add(v.x, index);
    add(v.y, index + 1);
  }

 private:
  __device__ void add_value(double v, bool not_finite, unsigned long long index,
                            unsigned long long bits) {
    sum += v;
    abs_sum += fabs(v);
    nonfinite += not_finite ? 1 : 0;
    digest += gemm_digest_term(index, bits);
  }
};

// Memory-bound: each element is read once, in 16-byte loads (Vector, Lanes elements) where the
// columns are aligned for them, else one element at a time (Vector = T, Lanes = 1).
template <class T, class Vector, int Lanes>
__global__ void __launch_bounds__(kThreads) verify_kernel(GemmVerifyArgs args) {
  __shared__ double shared_sums[kWarps];
  __shared__ unsigned long long shared_counts[kWarps];
  const T* c = static_cast<const T*>(args.c);
  const int vectors = args.m / Lanes;  // the launcher picks Lanes dividing m
  for (int col = blockIdx.x; col < args.n; col += gridDim.x) {
    const unsigned long long base = static_cast<unsigned long long>(col) * args.m;
    const Vector* column = reinterpret_cast<const Vector*>(c + base);
    ColumnPartial part;
    // All loads of a batch are issued before any is used, so each thread keeps kBatch loads in
    // flight: enough to saturate HBM.
    for (int first = threadIdx.x; first < vectors; first += kBatch * kThreads) {
      Vector loaded[kBatch] = {};
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int q = first + u * kThreads;
        // Streaming load: the output is read once and overwritten by the next product.
        if (q < vectors) loaded[u] = __ldcs(column + q);
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int q = first + u * kThreads;
        if (q < vectors) part.add(loaded[u], base + static_cast<unsigned long long>(q) * Lanes);
      }
    }
    const double sum = block_sum(part.sum, shared_sums);
    const double abs_sum = block_sum(part.abs_sum, shared_sums);
    const unsigned long long digest = block_sum(part.digest, shared_counts);
    const unsigned long long nonfinite = block_sum(part.nonfinite, shared_counts);
    if (threadIdx.x == 0) {
      GemmVerifyResult* result = args.result;
      atomicAdd(&result->digest, digest);
      if (nonfinite != 0) atomicAdd(&result->nonfinite, nonfinite);
      const double expected = args.ref[col];
      const double tolerance = gemm_checksum_tolerance(
          args.output_roundoff, args.accumulation_gamma, abs_sum, args.abs_ref[col]);
      if (!gemm_column_ok(sum, expected, tolerance)) {
        // Written only for bad columns, and read only for the smallest of them: no race.
        args.bad_expected[col] = expected;
        args.bad_actual[col] = sum;
        atomicAdd(&result->bad_columns, 1ull);
        atomicMax(&result->first_bad_inverted, ~static_cast<unsigned long long>(col));
      }
    }
  }
}

// After verify_kernel (stream order makes its writes visible): the sums of the smallest bad
// column, which only now is known.
__global__ void pick_first_bad_kernel(GemmVerifyResult* result, const double* bad_expected,
                                      const double* bad_actual) {
  const unsigned long long inverted = result->first_bad_inverted;
  if (inverted != 0) {
    const unsigned long long col = ~inverted;
    result->first_bad_expected = bad_expected[col];
    result->first_bad_actual = bad_actual[col];
  }
}

__global__ void inject_kernel(void* c, bool wide, std::uint64_t index, int bit, bool nan) {
  if (wide) {
    double* element = static_cast<double*>(c) + index;
    if (nan) {
      *element = __longlong_as_double(0x7FF8000000000000ll);  // quiet NaN
      return;
    }
    auto bits = static_cast<unsigned long long>(__double_as_longlong(*element));
    const int flip = bit < 0 ? gemm_default_flip_bit(bits, true) : (bit & 63);
    bits ^= 1ull << flip;
    *element = __longlong_as_double(static_cast<long long>(bits));
  } else {
    float* element = static_cast<float*>(c) + index;
    if (nan) {
      *element = __uint_as_float(0x7FC00000u);  // quiet NaN
      return;
    }
    unsigned int bits = __float_as_uint(*element);
    const int flip = bit < 0 ? gemm_default_flip_bit(bits, false) : (bit & 31);
    bits ^= 1u << flip;
    *element = __uint_as_float(bits);
  }
}

unsigned column_blocks(int columns) {
  return static_cast<unsigned>(columns) < kMaxColumnBlocks ? static_cast<unsigned>(columns)
                                                           : kMaxColumnBlocks;
}

template <class T>
cudaError_t generate(void* out, std::uint64_t count, std::uint64_t seed, int matrix, int range,
                     cudaStream_t stream) {
  std::uint64_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > kMaxGenerateBlocks) blocks = kMaxGenerateBlocks;
  generate_kernel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      static_cast<T*>(out), count, seed, matrix, range);
  return cudaGetLastError();
}

template <class T>
cudaError_t column_sums(const void* a, int rows, int cols, double* sums, double* abs_sums,
                        cudaStream_t stream) {
  column_sums_kernel<T><<<column_blocks(cols), kThreads, 0, stream>>>(static_cast<const T*>(a),
                                                                      rows, cols, sums, abs_sums);
  return cudaGetLastError();
}

template <class T>
cudaError_t reference(const void* b, int k, int n, const double* col_a, const double* abs_col_a,
                      double* ref, double* abs_ref, cudaStream_t stream) {
  reference_kernel<T><<<column_blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(b), k, n,
                                                                 col_a, abs_col_a, ref, abs_ref);
  return cudaGetLastError();
}

template <class T, class Vector, int Lanes>
cudaError_t verify(const GemmVerifyArgs& args, cudaStream_t stream) {
  verify_kernel<T, Vector, Lanes><<<column_blocks(args.n), kThreads, 0, stream>>>(args);
  return cudaGetLastError();
}

template <class T>
struct ElementType {
  using type = T;
};

// Calls `launch` with the ElementType of the C++ type `element` names: the one switch over the
// element types for every launcher.
template <class Launch>
cudaError_t with_element_type(GemmElement element, Launch launch) {
  switch (element) {
    case GemmElement::bf16:
      return launch(ElementType<__nv_bfloat16>{});
    case GemmElement::fp16:
      return launch(ElementType<__half>{});
    case GemmElement::fp32:
      return launch(ElementType<float>{});
    case GemmElement::fp64:
      return launch(ElementType<double>{});
  }
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t launch_gemm_generate(GemmElement type, void* out, std::uint64_t count,
                                 std::uint64_t seed, int matrix, int range, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  return with_element_type(type, [&](auto element) {
    return generate<typename decltype(element)::type>(out, count, seed, matrix, range, stream);
  });
}

cudaError_t launch_gemm_column_sums(GemmElement type, const void* a, int rows, int cols,
                                    double* sums, double* abs_sums, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  return with_element_type(type, [&](auto element) {
    return column_sums<typename decltype(element)::type>(a, rows, cols, sums, abs_sums, stream);
  });
}

cudaError_t launch_gemm_reference(GemmElement type, const void* b, int k, int n,
                                  const double* col_a, const double* abs_col_a, double* ref,
                                  double* abs_ref, cudaStream_t stream) {
  if (k <= 0 || n <= 0) return cudaSuccess;
  return with_element_type(type, [&](auto element) {
    return reference<typename decltype(element)::type>(b, k, n, col_a, abs_col_a, ref, abs_ref,
                                                       stream);
  });
}

cudaError_t launch_gemm_verify(const GemmVerifyArgs& args, cudaStream_t stream) {
  if (args.m <= 0 || args.n <= 0) return cudaSuccess;
  // 16-byte loads need every column to start on a 16-byte boundary.
  const bool aligned = reinterpret_cast<std::uintptr_t>(args.c) % 16 == 0;
  cudaError_t status = cudaSuccess;
  if (args.wide) {
    status = aligned && args.m % 2 == 0 ? verify<double, double2, 2>(args, stream)
                                        : verify<double, double, 1>(args, stream);
  } else {
    status = aligned && args.m % 4 == 0 ? verify<float, float4, 4>(args, stream)
                                        : verify<float, float, 1>(args, stream);
  }
  if (status != cudaSuccess) return status;
  pick_first_bad_kernel<<<1, 1, 0, stream>>>(args.result, args.bad_expected, args.bad_actual);
  return cudaGetLastError();
}

cudaError_t launch_gemm_inject(void* c, bool wide, std::uint64_t index, int bit, bool nan,
                               cudaStream_t stream) {
  inject_kernel<<<1, 1, 0, stream>>>(c, wide, index, bit, nan);
  return cudaGetLastError();
}

cudaError_t launch_gemm_spin(std::uint64_t nanoseconds, cudaStream_t stream) {
  return kernel_support::launch_spin(nanoseconds, stream);
}

cudaError_t preload_gemm_kernels() {
  const void* kernels[] = {
      reinterpret_cast<const void*>(&generate_kernel<__nv_bfloat16>),
      reinterpret_cast<const void*>(&generate_kernel<__half>),
      reinterpret_cast<const void*>(&generate_kernel<float>),
      reinterpret_cast<const void*>(&generate_kernel<double>),
      reinterpret_cast<const void*>(&column_sums_kernel<__nv_bfloat16>),
      reinterpret_cast<const void*>(&column_sums_kernel<__half>),
      reinterpret_cast<const void*>(&column_sums_kernel<float>),
      reinterpret_cast<const void*>(&column_sums_kernel<double>),
      reinterpret_cast<const void*>(&reference_kernel<__nv_bfloat16>),
      reinterpret_cast<const void*>(&reference_kernel<__half>),
      reinterpret_cast<const void*>(&reference_kernel<float>),
      reinterpret_cast<const void*>(&reference_kernel<double>),
      reinterpret_cast<const void*>(&verify_kernel<float, float4, 4>),
      reinterpret_cast<const void*>(&verify_kernel<float, float, 1>),
      reinterpret_cast<const void*>(&verify_kernel<double, double2, 2>),
      reinterpret_cast<const void*>(&verify_kernel<double, double, 1>),
      reinterpret_cast<const void*>(&pick_first_bad_kernel),
      reinterpret_cast<const void*>(&inject_kernel),
      reinterpret_cast<const void*>(&kernel_support::spin_kernel),
  };
  return kernel_support::preload(kernels);
}

}  // namespace preflight
