#pragma once
// The NCCL engine's device code (src/kernels/collective_kernels.cu): the patterns each rank
// contributes, their verification per source slot, and the drill hooks (a changed element, a
// stream held idle). The patterns are exact integers, so verification is bit for bit: all_gather
// moves 32-bit hashes of (seed, rank, element index); all_reduce sums small whole numbers as
// floats, small enough that every partial sum is exact whatever order NCCL adds them in.
//
// Every launcher queues its work on `stream` and returns the launch error; completion and
// asynchronous errors are the caller's to observe with events, never a synchronize.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/host_device.hpp"

namespace preflight {

// splitmix64's finalizer: neighbouring indices and ranks give unrelated words.
PREFLIGHT_HOST_DEVICE inline std::uint64_t collective_mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The key of rank `rank`'s pattern under `seed`; mixed once more with each element index.
PREFLIGHT_HOST_DEVICE inline std::uint64_t collective_rank_key(std::uint64_t seed,
                                                               std::uint32_t rank) {
  return collective_mix(seed ^ (0xd1b54a32d192ed03ull * (static_cast<std::uint64_t>(rank) + 1)));
}

// Element `index` of a rank's all_gather contribution.
PREFLIGHT_HOST_DEVICE inline std::uint32_t collective_word(std::uint64_t key, std::uint64_t index) {
  return static_cast<std::uint32_t>(collective_mix(key ^ index) >> 32);
}

// Bits of a rank's all_reduce values: the sum of nranks values below 2^24 stays a whole number
// a float holds exactly, so any summation order gives the same bits.
PREFLIGHT_HOST_DEVICE inline int collective_value_bits(int nranks) {
  int log2 = 0;
  while (log2 < 24 && (1 << log2) < nranks) ++log2;
  return 24 - log2 < 1 ? 1 : 24 - log2;
}

// Element `index` of a rank's all_reduce contribution, as the integer the float holds.
PREFLIGHT_HOST_DEVICE inline std::uint32_t collective_value(std::uint64_t key, std::uint64_t index,
                                                            int bits) {
  return collective_word(key, index) >> (32 - bits);
}

// data[i] = collective_word(collective_rank_key(seed, rank), i), for i < count.
cudaError_t launch_collective_fill_words(std::uint32_t* data, std::uint64_t count,
                                         std::uint64_t seed, std::uint32_t rank,
                                         cudaStream_t stream);

// data[i] = (float)collective_value(collective_rank_key(seed, rank), i, bits), for i < count.
cudaError_t launch_collective_fill_values(float* data, std::uint64_t count, std::uint64_t seed,
                                          std::uint32_t rank, int bits, cudaStream_t stream);

// An all_gather receive buffer of nranks slots of `count` words: adds to counters[s] the words
// of slot s that differ from rank s's pattern (counters zeroed by the caller). A thread that
// finds nothing touches no counter.
cudaError_t launch_collective_verify_gather(const std::uint32_t* received, std::uint64_t count,
                                            std::uint32_t nranks, std::uint64_t seed,
                                            unsigned long long* counters, cudaStream_t stream);

// An all_reduce result of `count` floats: adds to *counter the elements whose bits differ from
// the exact sum over ranks 0..nranks-1 of their values.
cudaError_t launch_collective_verify_sum(const float* received, std::uint64_t count,
                                         std::uint32_t nranks, std::uint64_t seed, int bits,
                                         unsigned long long* counter, cudaStream_t stream);

// Drill hook (corrupt_send): one element changed, one thread. Words get bit 0 flipped; values
// (as_value) get 1 added, which moves the exact sum by 1 wherever the element goes.
cudaError_t launch_collective_corrupt(void* data, std::uint64_t index, bool as_value,
                                      cudaStream_t stream);

// Drill hook (slow_factor): one thread waits `nanoseconds` on the GPU's global timer, so the
// stream stays idle that long.
cudaError_t launch_collective_spin(std::uint64_t nanoseconds, cudaStream_t stream);

// Loads this file's kernels into the current device's context now: CUDA loads modules lazily at
// first launch, and a load may wait for the context to go idle, i.e. for a collective in flight.
cudaError_t preload_collective_kernels();

}  // namespace preflight
