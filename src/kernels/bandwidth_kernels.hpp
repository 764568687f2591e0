#pragma once
// The bandwidth checks' device code (src/kernels/bandwidth_kernels.cu): pattern fills and their
// verification (the hbm pattern test, and the sources and destinations of copy measurements),
// the latch that holds a stream until every copy is queued, and the test hooks (a corrupted
// word, a stream held idle). Only the CUDA runtime's types appear here, so the engine
// (src/gpu/bandwidth_*.cpp) includes it without the device headers; the words themselves are
// memory_pattern_word() (memory_patterns.hpp), shared with the host.
//
// Every launcher queues its work on `stream` and returns the launch error, if any; completion
// and asynchronous errors are the caller's to observe (with events, never a synchronize).
// Word buffers are expected 16-byte aligned (cudaMalloc, cudaHostAlloc); others are handled
// with scalar accesses.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace preflight {

// Words per chunk of the pattern test's mismatch report (1 MiB): mismatches are counted, and
// their first and last word recorded, per chunk.
inline constexpr std::uint64_t kPatternChunkWords = std::uint64_t{1} << 18;

// What the verification found in one chunk. Initialized by launch_pattern_chunks_init (bad 0,
// first all ones, last 0): the kernel lowers `first` and raises `last` with atomics, and only
// where it finds a mismatch, so a clean chunk keeps its initial values.
struct PatternChunk {
  unsigned long long bad;    // mismatched words in the chunk
  unsigned long long first;  // region word index of the first of them
  unsigned long long last;   // ... and of the last
};
static_assert(sizeof(unsigned long long) == 8, "device atomics on 64-bit words");

// The number of PatternChunk entries a region of `words` words needs.
inline std::uint64_t pattern_chunk_count(std::uint64_t words) {
  return (words + kPatternChunkWords - 1) / kPatternChunkWords;
}

// words[i] = memory_pattern_word(pattern, i, seed, pass) for i < count.
cudaError_t launch_pattern_fill(std::uint32_t* words, std::uint64_t count, int pattern,
                                std::uint64_t seed, int pass, cudaStream_t stream);

// Sets chunks[0, count) to their initial values (see PatternChunk).
cudaError_t launch_pattern_chunks_init(PatternChunk* chunks, std::uint64_t count,
                                       cudaStream_t stream);

// Compares words[0, count) with memory_pattern_word(pattern, i, seed, pass) and adds the number
// of mismatches to *total (zeroed by the caller beforehand). With `chunks` (may be null: a
// count alone), each mismatch is also reported in chunks[i / kPatternChunkWords]. Threads that
// find nothing touch neither, so a clean region costs no atomics.
cudaError_t launch_pattern_verify(const std::uint32_t* words, std::uint64_t count, int pattern,
                                  std::uint64_t seed, int pass, PatternChunk* chunks,
                                  unsigned long long* total, cudaStream_t stream);

// Test hook (--inject-fault hbm-corrupt): words[index] ^= 1, one thread.
cudaError_t launch_pattern_corrupt(std::uint32_t* words, std::uint64_t index, cudaStream_t stream);

// One thread that holds `stream` until the host sets *release (mapped pinned host memory,
// read volatile) to non-zero, so that copies queued behind it start together once everything
// is queued. A host that never releases it (abandoned, stuck in the driver) cannot wedge the
// GPU: after `timeout_ns` on the global timer the kernel sets *timed_out to 1 (mapped too, for
// the host to read) and returns.
cudaError_t launch_latch(const std::uint32_t* release, std::uint32_t* timed_out,
                         std::uint64_t timeout_ns, cudaStream_t stream);

// Test hook (--inject-fault pcie-slow, nvlink-slow): one thread waits `nanoseconds` on the GPU's
// global timer, so the stream stays idle that long.
cudaError_t launch_bandwidth_spin(std::uint64_t nanoseconds, cudaStream_t stream);

// Loads every kernel of this file into the current device's context now. CUDA loads modules
// lazily at first launch, and loading may wait for the context to go idle: a kernel loaded
// behind a spinning latch would then wait for the latch's timeout.
cudaError_t preload_bandwidth_kernels();

}  // namespace preflight
