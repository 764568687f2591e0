// The copy measurements of the bandwidth checks, nvbandwidth's method: every stream is held by a
// latch kernel while its copies are queued, so queuing never shows up in the timing; warm-up
// copies run first; each sample is a start event, copies_per_sample copies per stream and an
// end event per stream, all released at once by one host write. The destinations are verified
// against their sources' pattern after the last sample.
//
// The host never synchronizes: events are polled against the deadline, and a GPU that does not
// finish in time is abandoned with its memory (freeing it would wait for the hung work).
#include "gpu/cuda_bandwidth_engine.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/bandwidth_support.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/device_scope.hpp"
#include "kernels/bandwidth_kernels.hpp"
#include "kernels/memory_patterns.hpp"

namespace preflight {
namespace {

using namespace bandwidth_detail;

// A latch not released within this gives up (and reports it). Queuing a sample takes
// milliseconds; the point is a host that is lost (abandoned, stuck in the driver) while the GPU
// waits for it.
constexpr std::uint64_t kLatchTimeoutNs = 10'000'000'000ull;
constexpr int kDestinationPattern = kPatternOnes;  // destinations before the first copy
constexpr unsigned char kDestinationByte = 0xFF;   // the same, written on the host

bool slowed(const CopyStream& s) {
  return s.slow_factor > 0.0 && s.slow_factor < 1.0;
}

bool cancelled(const CopyMeasurement& m) {
  return m.cancel && m.cancel->load();
}

// One buffer of a copy: device memory or pinned host memory.
struct Memory {
  std::optional<DeviceBuffer<std::uint32_t>> device;
  std::optional<PortableHostBuffer<std::uint32_t>> host;

  std::uint32_t* get() const {
    if (device) return device->get();
    return host ? host->get() : nullptr;
  }
  void reset() noexcept {
    device.reset();
    host.reset();
  }
  void release() noexcept {
    if (device) device->release();
    if (host) host->release();
  }
};

// One CopyStream and what it owns, on the GPU that issues its copies.
struct Lane {
  explicit Lane(DeviceScope& run_scope) : scope(run_scope) {}

  DeviceScope& scope;  // the run's, which outlives its lanes
  CopyStream spec;
  int device = 0;         // issues the copies, runs the kernels, owns stream and events
  int dst_device = -1;    // where a device destination lives
  std::size_t group = 0;  // its device's start event
  bool leader = false;    // the first stream of its device: records the start event
  std::uint64_t seed = 0;
  std::uint32_t* latch_release = nullptr;  // the latch words as this device addresses them
  std::uint32_t* latch_timed_out = nullptr;
  double copy_ms = 0.0;  // one warm-up copy: the base of the injected idling
  std::optional<CudaStream> stream;
  Memory src;
  Memory dst;
  TimingEvent warm_start;
  TimingEvent warm_end;
  TimingEvent end;
  std::optional<DeviceBuffer<unsigned long long>> mismatches;

  // Every buffer is freed with its own device current: a peer destination here, everything else
  // by the members' destructors after this body, with the lane's device current.
  ~Lane() {
    if (dst.device && dst_device >= 0 && scope.try_set(dst_device) == cudaSuccess) dst.reset();
    (void)scope.try_set(device);
    cudaGetLastError();
  }

  void abandon() noexcept {
    if (mismatches) mismatches->release();
    end.release();
    warm_end.release();
    warm_start.release();
    dst.release();
    src.release();
    if (stream) stream->release();
  }
};

// Pinned host memory for a lane, placed on `device`'s NUMA node and filled there (the fill
// touches it from the same CPUs): the source pattern, or the destination's stand-in.
Memory host_memory(int device, std::size_t words, const Lane& lane, bool source, int& numa_node) {
  Memory m;
  const int node = gpu_numa_node(device);
  int placed = -1;
  {
    NodeAffinity affinity(node);
    m.host.emplace(words);
    std::uint32_t* p = m.host->get();
    if (source) {
      for (std::size_t i = 0; i < words; ++i) {
        p[i] = memory_pattern_word(kPatternRandom, i, lane.seed);
      }
    } else {
      std::memset(p, kDestinationByte, words * sizeof(std::uint32_t));
    }
    if (affinity.placed()) placed = node;
  }
  const int actual = page_numa_node(m.host->get());
  numa_node = actual >= 0 ? actual : placed;
  return m;
}

std::string invalid_measurement(const CopyMeasurement& m) {
  if (m.streams.empty()) return "invalid measurement: no streams";
  if (m.bytes == 0) return "invalid measurement: 0 bytes per copy";
  if (m.copies_per_sample < 1) return "invalid measurement: copies_per_sample < 1";
  if (m.samples < 0 || m.warmups < 0) return "invalid measurement: negative samples or warmups";
  for (std::size_t i = 0; i < m.streams.size(); ++i) {
    const CopyStream& s = m.streams[i];
    if (s.cuda_ordinal < 0 || (s.direction == CopyDirection::peer && s.peer_ordinal < 0)) {
      return "invalid measurement: stream " + std::to_string(i) + " names no GPU";
    }
  }
  return {};
}

class CopyRun {
 public:
  CopyRun(const CopyMeasurement& m, MeasurementResult& out)
      : m_(m), out_(out), words_((m.bytes + 3) / 4), verified_words_(m.bytes / 4) {}
  CopyRun(const CopyRun&) = delete;
  CopyRun& operator=(const CopyRun&) = delete;
  // The start events go with their own device current (the lanes see to theirs).
  ~CopyRun() {
    for (std::size_t g = 0; g < starts_.size(); ++g) {
      if (device_.try_set(start_devices_[g]) == cudaSuccess) starts_[g].reset();
    }
    cudaGetLastError();
  }

  void setup();
  void warm_up();
  void sample();
  void verify();
  void abandon() noexcept;
  void dispose_after_error() noexcept;

 private:
  void add_lane(std::size_t index);
  void copy(const Lane& lane) const;
  void wait_all(TimingEvent Lane::*event) const {
    for (const auto& lane : lanes_) {
      wait_event((lane.get()->*event).get(), m_.deadline, m_.cancel.get());
    }
  }
  void release_latch() noexcept;

  const CopyMeasurement& m_;
  MeasurementResult& out_;
  const std::size_t words_;           // allocated per buffer
  const std::size_t verified_words_;  // whole words within the bytes copied
  // Every device switch of the run; declared before what it owns, so it restores the caller's
  // device only after the lanes and start events are freed.
  DeviceScope device_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::vector<TimingEvent> starts_;  // one per issuing device, in order of first appearance
  std::vector<int> start_devices_;
  std::optional<MappedHostBuffer<std::uint32_t>> latch_;          // [0] release, [1] timed out
  std::optional<PortableHostBuffer<unsigned long long>> counts_;  // mismatch counts read back
  bool copied_ = false;  // a copy was queued: the destinations hold the sources' words
};

void CopyRun::add_lane(std::size_t index) {
  const CopyStream& spec = m_.streams[index];
  auto owned = std::make_unique<Lane>(device_);
  Lane& lane = *owned;
  lane.spec = spec;
  lane.device = spec.cuda_ordinal;
  // Streams differ in their source words, so a copy that lands in another stream's
  // destination is caught too.
  lane.seed = (static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) << 8) + index;
  const bool to_peer = spec.direction == CopyDirection::peer && spec.peer_ordinal != lane.device;
  // Before anything is allocated: the source's kernels and copies must reach the peer's memory.
  if (to_peer) enable_peer_access(lane.device, spec.peer_ordinal);
  device_.set(lane.device);
  PREFLIGHT_CUDA_CHECK(preload_bandwidth_kernels());
  lane.stream.emplace();
  lanes_.push_back(std::move(owned));  // from here on, an error path must wait for its stream
  lane.warm_start = timing_event();
  lane.warm_end = timing_event();
  lane.end = timing_event();
  lane.mismatches.emplace(1);
  // The start event of this lane's device: an earlier lane's, or a new one this lane records.
  lane.group = starts_.size();
  for (const auto& other : lanes_) {
    if (other.get() != &lane && other->device == lane.device) {
      lane.group = other->group;
      break;
    }
  }
  if (lane.group == starts_.size()) {
    starts_.push_back(timing_event());
    start_devices_.push_back(lane.device);
    lane.leader = true;
  }

  const cudaStream_t s = lane.stream->get();
  switch (spec.direction) {
    case CopyDirection::host_to_device:
      lane.src = host_memory(lane.device, words_, lane, true, out_.streams[index].numa_node);
      device_.set(lane.device);
      lane.dst.device.emplace(words_);
      lane.dst_device = lane.device;
      break;
    case CopyDirection::device_to_host:
      lane.dst = host_memory(lane.device, words_, lane, false, out_.streams[index].numa_node);
      device_.set(lane.device);
      lane.src.device.emplace(words_);
      break;
    case CopyDirection::device_to_device:
    case CopyDirection::peer:
      lane.src.device.emplace(words_);
      lane.dst_device = to_peer ? spec.peer_ordinal : lane.device;
      device_.set(lane.dst_device);
      lane.dst.device.emplace(words_);
      device_.set(lane.device);
      break;
  }
  // Device buffers are filled by this device's kernels, a peer destination through peer access.
  if (lane.src.device) {
    PREFLIGHT_CUDA_CHECK(
        launch_pattern_fill(lane.src.get(), words_, kPatternRandom, lane.seed, 0, s));
  }
  if (lane.dst.device) {
    PREFLIGHT_CUDA_CHECK(launch_pattern_fill(lane.dst.get(), words_, kDestinationPattern, 0, 0, s));
  }
  PREFLIGHT_CUDA_CHECK(cudaEventRecord(lane.end.get(), s));
}

void CopyRun::setup() {
  for (std::size_t i = 0; i < m_.streams.size(); ++i) add_lane(i);
  // Mapped into every context, so allocated once every involved device has one.
  latch_.emplace(2);
  (*latch_)[0] = 1;  // released: a latch queued by mistake passes
  (*latch_)[1] = 0;
  counts_.emplace(lanes_.size());
  for (auto& lane : lanes_) {
    device_.set(lane->device);
    void* words = nullptr;
    PREFLIGHT_CUDA_CHECK(cudaHostGetDevicePointer(&words, latch_->get(), 0));
    lane->latch_release = static_cast<std::uint32_t*>(words);
    lane->latch_timed_out = static_cast<std::uint32_t*>(words) + 1;
  }
  wait_all(&Lane::end);  // the buffers are filled
}

void CopyRun::copy(const Lane& lane) const {
  const cudaStream_t s = lane.stream->get();
  void* dst = lane.dst.get();
  const void* src = lane.src.get();
  switch (lane.spec.direction) {
    case CopyDirection::host_to_device:
      PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(dst, src, m_.bytes, cudaMemcpyHostToDevice, s));
      return;
    case CopyDirection::device_to_host:
      PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(dst, src, m_.bytes, cudaMemcpyDeviceToHost, s));
      return;
    case CopyDirection::device_to_device:
      PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(dst, src, m_.bytes, cudaMemcpyDeviceToDevice, s));
      return;
    case CopyDirection::peer:
      if (lane.dst_device != lane.device) {
        PREFLIGHT_CUDA_CHECK(
            cudaMemcpyPeerAsync(dst, lane.dst_device, src, lane.device, m_.bytes, s));
      } else {
        PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(dst, src, m_.bytes, cudaMemcpyDeviceToDevice, s));
      }
      return;
  }
}

void CopyRun::warm_up() {
  const bool slow = std::any_of(m_.streams.begin(), m_.streams.end(), slowed);
  // The injected idling needs a copy time, so a slowed measurement warms up at least once.
  const int warmups = std::max(m_.warmups, slow ? 1 : 0);
  if (warmups == 0) return;
  for (auto& lane : lanes_) {
    device_.set(lane->device);
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(lane->warm_start.get(), lane->stream->get()));
    for (int i = 0; i < warmups; ++i) copy(*lane);
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(lane->warm_end.get(), lane->stream->get()));
  }
  copied_ = true;
  wait_all(&Lane::warm_end);
  for (auto& lane : lanes_) {
    lane->copy_ms = elapsed_ms(lane->warm_start.get(), lane->warm_end.get()) / warmups;
  }
}

void CopyRun::sample() {
  volatile std::uint32_t* latch = latch_->get();
  // The previous sample's latches have all returned (their streams' end events completed).
  // From here until release_latch() every exit path releases the latch (abandon, dispose).
  latch[1] = 0;
  latch[0] = 0;
  for (auto& lane : lanes_) {
    const cudaStream_t s = lane->stream->get();
    device_.set(lane->device);
    PREFLIGHT_CUDA_CHECK(
        launch_latch(lane->latch_release, lane->latch_timed_out, kLatchTimeoutNs, s));
    // The leader comes first among its device's lanes, so its record is queued before the
    // others wait on it (a wait applies to the record queued last).
    if (lane->leader) {
      PREFLIGHT_CUDA_CHECK(cudaEventRecord(starts_[lane->group].get(), s));
    } else {
      PREFLIGHT_CUDA_CHECK(cudaStreamWaitEvent(s, starts_[lane->group].get(), 0));
    }
  }
  for (auto& lane : lanes_) {
    const cudaStream_t s = lane->stream->get();
    device_.set(lane->device);
    const double idle_ms =
        slowed(lane->spec) ? lane->copy_ms * (1.0 / lane->spec.slow_factor - 1.0) : 0.0;
    for (int i = 0; i < m_.copies_per_sample; ++i) {
      copy(*lane);
      if (idle_ms > 0) {
        PREFLIGHT_CUDA_CHECK(launch_bandwidth_spin(static_cast<std::uint64_t>(idle_ms * 1e6), s));
      }
    }
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(lane->end.get(), s));
  }
  copied_ = true;
  release_latch();
  wait_all(&Lane::end);
  if (latch[1] != 0) {
    // The copies may have started before all were queued: the sample's times mean nothing.
    throw std::runtime_error(
        "latch timed out: a sample's copies were not released within 10 s of being queued");
  }

  std::vector<double> ms;
  double longest = 0.0;
  for (auto& lane : lanes_) {
    ms.push_back(elapsed_ms(starts_[lane->group].get(), lane->end.get()));
    longest = std::max(longest, ms.back());
  }
  const double stream_bytes = static_cast<double>(m_.bytes) * m_.copies_per_sample;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    out_.streams[i].gbps.push_back(ms[i] > 0 ? stream_bytes / (ms[i] * 1e6) : 0.0);
  }
  out_.total_gbps.push_back(
      longest > 0 ? stream_bytes * static_cast<double>(lanes_.size()) / (longest * 1e6) : 0.0);
}

void CopyRun::verify() {
  if (!copied_) return;  // nothing was copied: every destination would differ
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    Lane& lane = *lanes_[i];
    if (!lane.dst.device) continue;
    const cudaStream_t s = lane.stream->get();
    unsigned long long* counter = lane.mismatches->get();
    device_.set(lane.device);
    PREFLIGHT_CUDA_CHECK(cudaMemsetAsync(counter, 0, sizeof(*counter), s));
    // A peer destination is read through peer access, by the source GPU's kernel.
    PREFLIGHT_CUDA_CHECK(launch_pattern_verify(lane.dst.get(), verified_words_, kPatternRandom,
                                               lane.seed, 0, nullptr, counter, s));
    PREFLIGHT_CUDA_CHECK(
        cudaMemcpyAsync(counts_->get() + i, counter, sizeof(*counter), cudaMemcpyDeviceToHost, s));
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(lane.end.get(), s));
  }
  // Host destinations meanwhile: their last copy completed with the last sample.
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& lane = *lanes_[i];
    if (!lane.dst.host) continue;
    const std::uint32_t* words = lane.dst.get();
    std::uint64_t bad = 0;
    for (std::size_t w = 0; w < verified_words_; ++w) {
      bad += words[w] != memory_pattern_word(kPatternRandom, w, lane.seed) ? 1 : 0;
    }
    out_.streams[i].bad_words = bad;
    out_.streams[i].verified = true;
  }
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const Lane& lane = *lanes_[i];
    if (!lane.dst.device) continue;
    wait_event(lane.end.get(), m_.deadline, m_.cancel.get());
    out_.streams[i].bad_words = (*counts_)[i];
    out_.streams[i].verified = true;
  }
}

void CopyRun::release_latch() noexcept {
  if (!latch_ || latch_->get() == nullptr) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  static_cast<volatile std::uint32_t*>(latch_->get())[0] = 1;
}

void CopyRun::abandon() noexcept {
  release_latch();  // the GPUs go on with what is queued rather than waiting for the timeout
  for (auto& lane : lanes_) lane->abandon();
  for (TimingEvent& e : starts_) e.release();
  if (latch_) latch_->release();
  if (counts_) counts_->release();
}

void CopyRun::dispose_after_error() noexcept {
  cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  release_latch();
  // Freed once every stream is idle; leaked when one is still busy at the deadline or the
  // context is broken (every call would fail anyway).
  for (auto& lane : lanes_) {
    if (lane->stream &&
        !wait_stream_idle(device_, lane->device, lane->stream->get(), m_.deadline)) {
      abandon();
      cudaGetLastError();
      return;
    }
  }
  cudaGetLastError();
}

}  // namespace

MeasurementResult CudaBandwidthEngine::measure(const CopyMeasurement& m) {
  MeasurementResult out;
  out.streams.resize(m.streams.size());
  out.error = invalid_measurement(m);
  if (!out.error.empty()) return out;
  CopyRun run(m, out);
  bool abandoned = false;
  try {
    run.setup();
    run.warm_up();
    for (int i = 0; i < m.samples && !cancelled(m); ++i) {
      if (Clock::now() >= m.deadline) throw TimedOut{};
      run.sample();
    }
    // Between samples nothing is queued: the memory is freed below.
    if (cancelled(m)) {
      out.error = "cancelled";
    } else {
      run.verify();
    }
  } catch (const TimedOut&) {
    out.timed_out = true;
    run.abandon();  // the GPU may never finish: leak, never free
    abandoned = true;
  } catch (const Cancelled&) {
    out.error = "cancelled";
    run.abandon();  // work is queued, and the caller is not waiting for it
    abandoned = true;
  } catch (const CudaError& e) {
    out.error = cuda_error_text(e.code());
  } catch (const std::exception& e) {
    out.error = e.what();
  } catch (...) {
    out.error = "unknown error";
  }
  if (!abandoned && !out.error.empty()) run.dispose_after_error();
  return out;
}

}  // namespace preflight
