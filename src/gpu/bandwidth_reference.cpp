// The benchmark's reference (preflight-bench-bandwidth) and the peer-access query. The reference
// is the plainest way to time copies, what a first bandwidth test would do: one stream, memory
// from cudaMallocHost wherever the thread happens to run (no NUMA placement: comparing with it
// shows what placement and the latch change), one untimed copy, then per sample an event,
// `copies` copies and an event.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "gpu/bandwidth_support.hpp"
#include "gpu/cuda_bandwidth_engine.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/device_scope.hpp"
#include "gpu/stream_drain.hpp"

namespace preflight {
namespace {

using namespace bandwidth_detail;

// BandwidthEngine::reference() takes no deadline: each wait is bounded by this instead.
constexpr auto kReferenceWait = std::chrono::seconds(60);

std::string invalid_reference(const CopyStream& stream, std::size_t bytes, int copies,
                              int samples) {
  if (bytes == 0 || copies < 1 || samples < 0) {
    return "invalid reference: bytes and copies must be positive, samples not negative";
  }
  if (stream.cuda_ordinal < 0 ||
      (stream.direction == CopyDirection::peer && stream.peer_ordinal < 0)) {
    return "invalid reference: no GPU named";
  }
  return {};
}

}  // namespace

BandwidthEngine::Reference CudaBandwidthEngine::reference(const CopyStream& stream,
                                                          std::size_t bytes, int copies,
                                                          int samples) {
  Reference out;
  out.error = invalid_reference(stream, bytes, copies, samples);
  if (!out.error.empty()) return out;
  const int device = stream.cuda_ordinal;
  const bool to_peer =
      stream.direction == CopyDirection::peer && stream.peer_ordinal != stream.cuda_ordinal;
  // Before the resources: they are freed, or the stream polled, with `device` current.
  DeviceScope current;
  std::optional<CudaStream> s;
  TimingEvent start;
  TimingEvent end;
  std::optional<PinnedHostBuffer<unsigned char>> host;
  std::optional<DeviceBuffer<unsigned char>> src;
  std::optional<DeviceBuffer<unsigned char>> dst;
  bool queued = false;
  const auto abandon = [&] {
    if (dst) dst->release();
    if (src) src->release();
    if (host) host->release();
    end.release();
    start.release();
    if (s) s->release();
  };
  try {
    if (to_peer) enable_peer_access(device, stream.peer_ordinal);  // as measure() does
    current.set(device);
    s.emplace();
    start = timing_event();
    end = timing_event();
    void* to = nullptr;
    const void* from = nullptr;
    cudaMemcpyKind kind = cudaMemcpyDeviceToDevice;
    switch (stream.direction) {
      case CopyDirection::host_to_device:
        host.emplace(bytes);
        dst.emplace(bytes);
        from = host->get();
        to = dst->get();
        kind = cudaMemcpyHostToDevice;
        break;
      case CopyDirection::device_to_host:
        src.emplace(bytes);
        host.emplace(bytes);
        from = src->get();
        to = host->get();
        kind = cudaMemcpyDeviceToHost;
        break;
      case CopyDirection::device_to_device:
      case CopyDirection::peer:
        src.emplace(bytes);
        if (to_peer) current.set(stream.peer_ordinal);
        dst.emplace(bytes);
        current.set(device);
        from = src->get();
        to = dst->get();
        break;
    }
    const auto issue = [&] {
      if (to_peer) {
        PREFLIGHT_CUDA_CHECK(
            cudaMemcpyPeerAsync(to, stream.peer_ordinal, from, device, bytes, s->get()));
      } else {
        PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, kind, s->get()));
      }
      queued = true;
    };
    issue();  // untimed: first-use costs stay out of the first sample
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(end.get(), s->get()));
    wait_event(end.get(), Clock::now() + kReferenceWait);
    for (int sample = 0; sample < samples; ++sample) {
      PREFLIGHT_CUDA_CHECK(cudaEventRecord(start.get(), s->get()));
      for (int i = 0; i < copies; ++i) issue();
      PREFLIGHT_CUDA_CHECK(cudaEventRecord(end.get(), s->get()));
      wait_event(end.get(), Clock::now() + kReferenceWait);
      const double ms = elapsed_ms(start.get(), end.get());
      out.gbps.push_back(ms > 0 ? static_cast<double>(bytes) * copies / (ms * 1e6) : 0.0);
    }
    return out;
  } catch (const TimedOut&) {
    out.error = "timed out: copies did not complete within 60 s";
    abandon();  // the GPU may never finish: leak, never free
    return out;
  } catch (const CudaError& e) {
    out.error = cuda_error_text(e.code());
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  // Freed once the stream is idle, leaked when it is not within the wait or the context is
  // broken.
  if (queued && s) {
    drain_or_abandon(s->get(), Clock::now() + kReferenceWait, abandon);
  } else {
    cudaGetLastError();
  }
  return out;
}

PeerAccess CudaBandwidthEngine::peer_access(int from_ordinal, int to_ordinal) {
  PeerAccess out;
  int can = 0;
  const cudaError_t status = cudaDeviceCanAccessPeer(&can, from_ordinal, to_ordinal);
  if (status != cudaSuccess) {
    out.error = cuda_error_text(status);
    cudaGetLastError();
    return out;
  }
  out.supported = can != 0;
  return out;
}

}  // namespace preflight
