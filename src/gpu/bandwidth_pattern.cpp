// The hbm check's memory pattern test: each pattern is written over the whole region by one
// kernel and read back by another that counts mismatches per 1 MiB chunk, with the first and
// last bad word of each. Only a counter comes back to the host after each pass; the per-chunk
// report is copied only when the counter is not zero. Completion is polled against the
// deadline, and a GPU that does not finish in time is abandoned with its memory.
#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/bandwidth_support.hpp"
#include "gpu/cuda_bandwidth_engine.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/device_scope.hpp"
#include "gpu/stream_drain.hpp"
#include "kernels/bandwidth_kernels.hpp"
#include "kernels/memory_patterns.hpp"
#include "model/byte_units.hpp"
#include "model/memory_ranges.hpp"

namespace preflight {
namespace {

using namespace bandwidth_detail;

static_assert(static_cast<int>(MemoryPattern::zeros) == kPatternZeros &&
                  static_cast<int>(MemoryPattern::ones) == kPatternOnes &&
                  static_cast<int>(MemoryPattern::checkerboard) == kPatternCheckerboard &&
                  static_cast<int>(MemoryPattern::address) == kPatternAddress &&
                  static_cast<int>(MemoryPattern::inverse_address) == kPatternInverseAddress &&
                  static_cast<int>(MemoryPattern::random) == kPatternRandom,
              "MemoryPattern values are the kernels' pattern ids");

bool cancelled(const PatternJob& job) {
  return job.cancel && job.cancel->load();
}

}  // namespace

PatternResult CudaBandwidthEngine::pattern_test(const PatternJob& job) {
  PatternResult out;
  if (job.bytes < 4 || job.cuda_ordinal < 0) {
    out.error = "invalid pattern job: no GPU or less than one word";
    return out;
  }
  const std::uint64_t words = job.bytes / 4;
  const std::uint64_t chunk_count = pattern_chunk_count(words);
  // Before the resources: they are freed, or the stream polled, with the job's GPU current.
  DeviceScope device;
  std::optional<CudaStream> stream;
  TimingEvent start;
  TimingEvent verified;
  TimingEvent copied;
  std::optional<DeviceBuffer<std::uint32_t>> region;
  std::optional<DeviceBuffer<PatternChunk>> chunks;
  std::optional<DeviceBuffer<unsigned long long>> total;
  std::optional<PinnedHostBuffer<PatternChunk>> host_chunks;
  std::optional<PinnedHostBuffer<unsigned long long>> host_total;
  std::vector<ChunkMismatch> bad_chunks;
  bool queued = false;
  const auto abandon = [&] {
    if (region) region->release();
    if (chunks) chunks->release();
    if (total) total->release();
    if (host_chunks) host_chunks->release();
    if (host_total) host_total->release();
    copied.release();
    verified.release();
    start.release();
    if (stream) stream->release();
  };

  try {
    device.set(job.cuda_ordinal);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    PREFLIGHT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::uint64_t needed = words * 4 + chunk_count * sizeof(PatternChunk) + 64;
    if (needed > free_bytes) {
      throw std::runtime_error(cuda_error_text(cudaErrorMemoryAllocation) + " (the test needs " +
                               std::to_string(needed / kMiB) + " MiB, " +
                               std::to_string(free_bytes / kMiB) + " MiB of " +
                               std::to_string(total_bytes / kMiB) + " MiB are free)");
    }
    PREFLIGHT_CUDA_CHECK(preload_bandwidth_kernels());
    stream.emplace();
    start = timing_event();
    verified = timing_event();
    copied = timing_event();
    region.emplace(words);
    chunks.emplace(chunk_count);
    total.emplace(1);
    host_chunks.emplace(chunk_count);
    host_total.emplace(1);
    out.bytes_tested = words * 4;

    const cudaStream_t s = stream->get();
    bool chunks_clean = false;  // the per-chunk report holds its initial values
    for (std::size_t p = 0; p < job.patterns.size(); ++p) {
      if (cancelled(job)) break;  // between patterns: nothing is queued
      if (Clock::now() >= job.deadline) throw TimedOut{};
      const int pattern = static_cast<int>(job.patterns[p]);
      // The checkerboard runs in both phases, so that every bit is written both ways.
      const int passes = pattern == kPatternCheckerboard ? 2 : 1;
      for (int pass = 0; pass < passes; ++pass) {
        if (!chunks_clean) {
          PREFLIGHT_CUDA_CHECK(launch_pattern_chunks_init(chunks->get(), chunk_count, s));
          chunks_clean = true;
        }
        PREFLIGHT_CUDA_CHECK(cudaMemsetAsync(total->get(), 0, sizeof(unsigned long long), s));
        PREFLIGHT_CUDA_CHECK(cudaEventRecord(start.get(), s));
        PREFLIGHT_CUDA_CHECK(launch_pattern_fill(region->get(), words, pattern, job.seed, pass, s));
        queued = true;
        if (job.inject_corrupt && p == 0 && pass == 0) {
          PREFLIGHT_CUDA_CHECK(launch_pattern_corrupt(region->get(), words / 3, s));
        }
        PREFLIGHT_CUDA_CHECK(launch_pattern_verify(region->get(), words, pattern, job.seed, pass,
                                                   chunks->get(), total->get(), s));
        PREFLIGHT_CUDA_CHECK(cudaEventRecord(verified.get(), s));
        PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(host_total->get(), total->get(),
                                             sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                             s));
        PREFLIGHT_CUDA_CHECK(cudaEventRecord(copied.get(), s));
        wait_event(copied.get(), job.deadline);
        out.seconds += elapsed_ms(start.get(), verified.get()) / 1e3;
        const unsigned long long bad = (*host_total)[0];
        if (bad == 0) continue;
        PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(host_chunks->get(), chunks->get(),
                                             chunk_count * sizeof(PatternChunk),
                                             cudaMemcpyDeviceToHost, s));
        PREFLIGHT_CUDA_CHECK(cudaEventRecord(copied.get(), s));
        wait_event(copied.get(), job.deadline);
        chunks_clean = false;
        out.bad_words += bad;
        for (std::uint64_t c = 0; c < chunk_count; ++c) {
          const PatternChunk& chunk = (*host_chunks)[c];
          if (chunk.bad != 0) bad_chunks.push_back({c, chunk.bad, chunk.first, chunk.last});
        }
      }
      out.patterns_run.push_back(job.patterns[p]);
    }
  } catch (const TimedOut&) {
    out.timed_out = true;
    abandon();  // the GPU may never finish: leak, never free
    queued = false;
  } catch (const CudaError& e) {
    out.error = cuda_error_text(e.code());
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  // What the completed passes found; chunks a chunk's worth of good words apart join.
  const MergedRanges merged = merge_bad_chunks(std::move(bad_chunks), kPatternChunkWords);
  out.ranges = merged.ranges;
  out.ranges_truncated = merged.truncated;

  if (!out.error.empty()) {
    // Freed once the stream is idle, leaked when it is not by the deadline or the context is
    // broken.
    if (queued && stream) {
      drain_or_abandon(stream->get(), job.deadline, abandon);
    } else {
      cudaGetLastError();
    }
  }
  return out;
}

}  // namespace preflight
