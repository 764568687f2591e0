#pragma once
// The one rule for a stream that still holds work when something failed: wait for it against a
// deadline, and if it does not finish (or the context is broken) leak what it uses. Freeing memory
// or destroying a stream waits for queued work, and on a hung GPU that is forever.
#include <cuda_runtime_api.h>

#include <chrono>
#include <thread>
#include <utility>

namespace preflight {

// How often a draining stream is polled: short next to a copy or a GEMM of a few milliseconds,
// long enough not to keep a core busy.
inline constexpr auto kStreamDrainPoll = std::chrono::microseconds(200);

// Polls `stream` (its device current) until it has no work left: true then. False when the
// deadline passes first or the stream reports an error: whatever it uses may still be in use.
// Never a synchronize: that would not return on a hung GPU.
inline bool stream_idle_by(cudaStream_t stream,
                           std::chrono::steady_clock::time_point deadline) noexcept {
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return true;
    if (status != cudaErrorNotReady || std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kStreamDrainPoll);
  }
}

// After a failure: clears the failure's non-sticky error (the next call must not report it
// again), waits for `stream` as above and calls `abandon` when it does not become idle, then
// clears whatever the wait left.
template <typename Abandon>
void drain_or_abandon(cudaStream_t stream, std::chrono::steady_clock::time_point deadline,
                      Abandon&& abandon) noexcept {
  cudaGetLastError();
  if (!stream_idle_by(stream, deadline)) std::forward<Abandon>(abandon)();
  cudaGetLastError();
}

}  // namespace preflight
