#include <cstdint>

#include "kernels/collective_kernels.hpp"
#include "kernels/kernel_support.cuh"

namespace preflight {
namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 4096;       // grid-stride beyond this
constexpr unsigned kMaxSlotBlocks = 65535;  // gridDim.y limit; more slots loop

unsigned blocks_for(std::uint64_t items, unsigned cap) {
  const std::uint64_t blocks = (items + kThreads - 1) / kThreads;
  if (blocks == 0) return 1;
  return blocks < cap ? static_cast<unsigned>(blocks) : cap;
}

__device__ std::uint64_t first_index() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}

__device__ std::uint64_t stride() {
  return static_cast<std::uint64_t>(blockDim.x) * gridDim.x;
}

__global__ void __launch_bounds__(kThreads)
    fill_words_kernel(std::uint32_t* __restrict__ data, std::uint64_t count, std::uint64_t key) {
  for (std::uint64_t i = first_index(); i < count; i += stride()) {
    data[i] = collective_word(key, i);
  }
}

__global__ void __launch_bounds__(kThreads)
    fill_values_kernel(float* __restrict__ data, std::uint64_t count, std::uint64_t key, int bits) {
  for (std::uint64_t i = first_index(); i < count; i += stride()) {
    data[i] = static_cast<float>(collective_value(key, i, bits));
  }
}

// blockIdx.y walks the slots (sources); x the slot's words. Each thread counts in a register
// and publishes once, so a clean buffer costs no atomics.
__global__ void __launch_bounds__(kThreads)
    verify_gather_kernel(const std::uint32_t* __restrict__ received, std::uint64_t count,
                         std::uint32_t nranks, std::uint64_t seed, unsigned long long* counters) {
  for (std::uint32_t slot = blockIdx.y; slot < nranks; slot += gridDim.y) {
    const std::uint64_t key = collective_rank_key(seed, slot);
    const std::uint32_t* words = received + static_cast<std::uint64_t>(slot) * count;
    unsigned long long bad = 0;
    for (std::uint64_t i = first_index(); i < count; i += stride()) {
      bad += words[i] != collective_word(key, i) ? 1 : 0;
    }
    if (bad != 0) atomicAdd(&counters[slot], bad);
  }
}

__global__ void __launch_bounds__(kThreads)
    verify_sum_kernel(const float* __restrict__ received, std::uint64_t count, std::uint32_t nranks,
                      std::uint64_t seed, int bits, unsigned long long* counter) {
  unsigned long long bad = 0;
  for (std::uint64_t i = first_index(); i < count; i += stride()) {
    std::uint32_t sum = 0;  // below 2^24 by the choice of bits: exact as a float
    for (std::uint32_t r = 0; r < nranks; ++r) {
      sum += collective_value(collective_rank_key(seed, r), i, bits);
    }
    bad += __float_as_uint(received[i]) != __float_as_uint(static_cast<float>(sum)) ? 1 : 0;
  }
  if (bad != 0) atomicAdd(counter, bad);
}

__global__ void corrupt_kernel(void* data, std::uint64_t index, bool as_value) {
  if (as_value) {
    static_cast<float*>(data)[index] += 1.0f;
  } else {
    static_cast<std::uint32_t*>(data)[index] ^= 1u;
  }
}

}  // namespace

cudaError_t launch_collective_fill_words(std::uint32_t* data, std::uint64_t count,
                                         std::uint64_t seed, std::uint32_t rank,
                                         cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  fill_words_kernel<<<blocks_for(count, kMaxBlocks), kThreads, 0, stream>>>(
      data, count, collective_rank_key(seed, rank));
  return cudaGetLastError();
}

cudaError_t launch_collective_fill_values(float* data, std::uint64_t count, std::uint64_t seed,
                                          std::uint32_t rank, int bits, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  fill_values_kernel<<<blocks_for(count, kMaxBlocks), kThreads, 0, stream>>>(
      data, count, collective_rank_key(seed, rank), bits);
  return cudaGetLastError();
}

cudaError_t launch_collective_verify_gather(const std::uint32_t* received, std::uint64_t count,
                                            std::uint32_t nranks, std::uint64_t seed,
                                            unsigned long long* counters, cudaStream_t stream) {
  if (count == 0 || nranks == 0) return cudaSuccess;
  // Spread the slots over y and keep the whole grid near kMaxBlocks blocks.
  const unsigned slots = nranks < kMaxSlotBlocks ? nranks : kMaxSlotBlocks;
  const unsigned per_slot = kMaxBlocks / slots > 0 ? kMaxBlocks / slots : 1;
  const dim3 grid(blocks_for(count, per_slot), slots);
  verify_gather_kernel<<<grid, kThreads, 0, stream>>>(received, count, nranks, seed, counters);
  return cudaGetLastError();
}

cudaError_t launch_collective_verify_sum(const float* received, std::uint64_t count,
                                         std::uint32_t nranks, std::uint64_t seed, int bits,
                                         unsigned long long* counter, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  verify_sum_kernel<<<blocks_for(count, kMaxBlocks), kThreads, 0, stream>>>(received, count, nranks,
                                                                            seed, bits, counter);
  return cudaGetLastError();
}

cudaError_t launch_collective_corrupt(void* data, std::uint64_t index, bool as_value,
                                      cudaStream_t stream) {
  corrupt_kernel<<<1, 1, 0, stream>>>(data, index, as_value);
  return cudaGetLastError();
}

cudaError_t launch_collective_spin(std::uint64_t nanoseconds, cudaStream_t stream) {
  return kernel_support::launch_spin(nanoseconds, stream);
}

cudaError_t preload_collective_kernels() {
  const void* kernels[] = {
      reinterpret_cast<const void*>(&fill_words_kernel),
      reinterpret_cast<const void*>(&fill_values_kernel),
      reinterpret_cast<const void*>(&verify_gather_kernel),
      reinterpret_cast<const void*>(&verify_sum_kernel),
      reinterpret_cast<const void*>(&corrupt_kernel),
      reinterpret_cast<const void*>(&kernel_support::spin_kernel),
  };
  return kernel_support::preload(kernels);
}

}  // namespace preflight
