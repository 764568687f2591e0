#include <cstdint>

#include "kernels/bandwidth_kernels.hpp"
#include "kernels/kernel_support.cuh"
#include "kernels/memory_patterns.hpp"

namespace preflight {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxFillBlocks = 8192;  // grid-stride beyond this
// A verification block covers a slice of a chunk: 4 per chunk, so that a small region (a
// 256 MiB copy destination) still spreads over enough blocks to keep the SMs' loads in flight.
constexpr std::uint64_t kSliceWords = kPatternChunkWords / 4;
constexpr unsigned kMaxVerifyBlocks = 65535;
static_assert(kPatternChunkWords % kSliceWords == 0, "a slice never straddles two chunks");

__device__ bool aligned16(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

__global__ void __launch_bounds__(kThreads)
    fill_kernel(std::uint32_t* __restrict__ words, std::uint64_t count, int pattern,
                std::uint64_t seed, int pass) {
  const std::uint64_t stride = static_cast<std::uint64_t>(blockDim.x) * gridDim.x;
  const std::uint64_t first = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // 16-byte stores where the buffer allows: the pattern test is as fast as the memory is.
  const std::uint64_t vectors = aligned16(words) ? count / 4 : 0;
  uint4* v = reinterpret_cast<uint4*>(words);
  for (std::uint64_t q = first; q < vectors; q += stride) {
    const std::uint64_t i = 4 * q;
    v[q] = make_uint4(memory_pattern_word(pattern, i, seed, pass),
                      memory_pattern_word(pattern, i + 1, seed, pass),
                      memory_pattern_word(pattern, i + 2, seed, pass),
                      memory_pattern_word(pattern, i + 3, seed, pass));
  }
  for (std::uint64_t i = 4 * vectors + first; i < count; i += stride) {
    words[i] = memory_pattern_word(pattern, i, seed, pass);
  }
}

__global__ void chunks_init_kernel(PatternChunk* chunks, std::uint64_t count) {
  const std::uint64_t stride = static_cast<std::uint64_t>(blockDim.x) * gridDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    chunks[i] = PatternChunk{0ull, ~0ull, 0ull};
  }
}

// One thread's mismatches: kept in registers, published once per slice.
struct Tally {
  unsigned long long bad = 0;
  unsigned long long first = ~0ull;
  unsigned long long last = 0;
};

__device__ void tally(Tally& t, std::uint32_t word, std::uint64_t i, int pattern,
                      std::uint64_t seed, int pass) {
  if (word != memory_pattern_word(pattern, i, seed, pass)) {
    ++t.bad;
    t.first = t.first < i ? t.first : i;
    t.last = t.last > i ? t.last : i;
  }
}

__global__ void __launch_bounds__(kThreads)
    verify_kernel(const std::uint32_t* __restrict__ words, std::uint64_t count, int pattern,
                  std::uint64_t seed, int pass, PatternChunk* chunks, unsigned long long* total) {
  const std::uint64_t slices = (count + kSliceWords - 1) / kSliceWords;
  for (std::uint64_t s = blockIdx.x; s < slices; s += gridDim.x) {
    const std::uint64_t begin = s * kSliceWords;
    const std::uint64_t end = begin + kSliceWords < count ? begin + kSliceWords : count;
    Tally t;
    const std::uint64_t vectors = aligned16(words + begin) ? (end - begin) / 4 : 0;
    const uint4* v = reinterpret_cast<const uint4*>(words + begin);
#pragma unroll 4
    for (std::uint64_t q = threadIdx.x; q < vectors; q += blockDim.x) {
      const uint4 w = v[q];
      const std::uint64_t i = begin + 4 * q;
      tally(t, w.x, i, pattern, seed, pass);
      tally(t, w.y, i + 1, pattern, seed, pass);
      tally(t, w.z, i + 2, pattern, seed, pass);
      tally(t, w.w, i + 3, pattern, seed, pass);
    }
    for (std::uint64_t i = begin + 4 * vectors + threadIdx.x; i < end; i += blockDim.x) {
      tally(t, words[i], i, pattern, seed, pass);
    }
    if (t.bad != 0) {
      atomicAdd(total, t.bad);
      if (chunks != nullptr) {
        PatternChunk& c = chunks[begin / kPatternChunkWords];
        atomicAdd(&c.bad, t.bad);
        atomicMin(&c.first, t.first);
        atomicMax(&c.last, t.last);
      }
    }
  }
}

__global__ void corrupt_kernel(std::uint32_t* words, std::uint64_t index) {
  words[index] ^= 1u;
}

__global__ void latch_kernel(const volatile std::uint32_t* release,
                             volatile std::uint32_t* timed_out, unsigned long long timeout_ns) {
  const unsigned long long start = kernel_support::global_timer_ns();
  // Volatile: every iteration reads the host's word again instead of a cached copy.
  while (*release == 0) {
    if (kernel_support::global_timer_ns() - start >= timeout_ns) {
      *timed_out = 1u;
      __threadfence_system();
      return;
    }
#if __CUDA_ARCH__ >= 700
    __nanosleep(200);  // fewer reads over the bus; the release is not part of any timing
#endif
  }
}

unsigned blocks_for(std::uint64_t items, std::uint64_t per_block, unsigned cap) {
  const std::uint64_t blocks = (items + per_block - 1) / per_block;
  if (blocks == 0) return 1;
  return blocks < cap ? static_cast<unsigned>(blocks) : cap;
}

}  // namespace

cudaError_t launch_pattern_fill(std::uint32_t* words, std::uint64_t count, int pattern,
                                std::uint64_t seed, int pass, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  fill_kernel<<<blocks_for((count + 3) / 4, kThreads, kMaxFillBlocks), kThreads, 0, stream>>>(
      words, count, pattern, seed, pass);
  return cudaGetLastError();
}

cudaError_t launch_pattern_chunks_init(PatternChunk* chunks, std::uint64_t count,
                                       cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  chunks_init_kernel<<<blocks_for(count, kThreads, kMaxFillBlocks), kThreads, 0, stream>>>(chunks,
                                                                                           count);
  return cudaGetLastError();
}

cudaError_t launch_pattern_verify(const std::uint32_t* words, std::uint64_t count, int pattern,
                                  std::uint64_t seed, int pass, PatternChunk* chunks,
                                  unsigned long long* total, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  verify_kernel<<<blocks_for(count, kSliceWords, kMaxVerifyBlocks), kThreads, 0, stream>>>(
      words, count, pattern, seed, pass, chunks, total);
  return cudaGetLastError();
}

cudaError_t launch_pattern_corrupt(std::uint32_t* words, std::uint64_t index, cudaStream_t stream) {
  corrupt_kernel<<<1, 1, 0, stream>>>(words, index);
  return cudaGetLastError();
}

cudaError_t launch_latch(const std::uint32_t* release, std::uint32_t* timed_out,
                         std::uint64_t timeout_ns, cudaStream_t stream) {
  latch_kernel<<<1, 1, 0, stream>>>(release, timed_out,
                                    static_cast<unsigned long long>(timeout_ns));
  return cudaGetLastError();
}

cudaError_t launch_bandwidth_spin(std::uint64_t nanoseconds, cudaStream_t stream) {
  return kernel_support::launch_spin(nanoseconds, stream);
}

cudaError_t preload_bandwidth_kernels() {
  const void* kernels[] = {
      reinterpret_cast<const void*>(&fill_kernel),
      reinterpret_cast<const void*>(&chunks_init_kernel),
      reinterpret_cast<const void*>(&verify_kernel),
      reinterpret_cast<const void*>(&corrupt_kernel),
      reinterpret_cast<const void*>(&latch_kernel),
      reinterpret_cast<const void*>(&kernel_support::spin_kernel),
  };
  return kernel_support::preload(kernels);
}

}  // namespace preflight
