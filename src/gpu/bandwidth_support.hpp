#pragma once
// What the bandwidth engine's parts (cuda_bandwidth_engine.cpp: copy measurements,
// bandwidth_reference.cpp: the benchmark's plain copies, bandwidth_pattern.cpp: the memory
// pattern test) share: error texts, timing events polled against a deadline, peer access,
// pinned host memory, and the placement of host buffers on the GPU's NUMA node. The NCCL
// session (nccl_session.cpp) uses the events, the polling and the stream drain as well.
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <string>

#include "gpu/cuda_check.hpp"
#include "gpu/device_scope.hpp"
#include "gpu/stream_drain.hpp"

namespace preflight {
namespace bandwidth_detail {

using Clock = std::chrono::steady_clock;

// How often completion is polled: short next to a copy of a few milliseconds, long enough not
// to keep a core busy.
inline constexpr auto kPollInterval = std::chrono::microseconds(200);

// Thrown when the deadline passes with work still queued: everything is then leaked.
struct TimedOut {};
// Thrown when the caller's cancel flag is seen while work is queued.
struct Cancelled {};

// True once `event` completed, false while not ready; an error is thrown as CudaError.
bool event_done(cudaEvent_t event);

// Polls `event` until it completes: TimedOut at the deadline, Cancelled when `cancel` (may be
// null) is set, CudaError for an error. Never a synchronize: that would not return on a hung GPU.
void wait_event(cudaEvent_t event, Clock::time_point deadline,
                const std::atomic<bool>* cancel = nullptr);

// stream_idle_by (gpu/stream_drain.hpp) for `stream` of GPU `device`, made current through
// `scope` first.
bool wait_stream_idle(DeviceScope& scope, int device, cudaStream_t stream,
                      Clock::time_point deadline) noexcept;

// Lets `from`'s kernels and copy engines reach `to`'s memory. Already enabled is fine; any
// other failure (cudaErrorPeerAccessUnsupported, ...) is thrown as CudaError.
void enable_peer_access(int from, int to);

// Pinned host memory that every context treats as pinned (a measurement's streams may sit on
// several GPUs), optionally mapped into the GPUs' address space (the latch words).
template <unsigned Flags>
struct HostAllocTraits {
  using Handle = void*;
  static constexpr bool kHostAccessible = true;
  static cudaError_t allocate(void** memory, std::size_t bytes) {
    return cudaHostAlloc(memory, bytes, Flags);
  }
  static void destroy(Handle memory) noexcept {
    PREFLIGHT_CUDA_CHECK_NOEXCEPT(cudaFreeHost(memory));
  }
};
template <class T>
using PortableHostBuffer = CudaBuffer<T, HostAllocTraits<cudaHostAllocPortable>>;
template <class T>
using MappedHostBuffer =
    CudaBuffer<T, HostAllocTraits<cudaHostAllocPortable | cudaHostAllocMapped>>;

// The NUMA node of GPU `ordinal`'s PCI device (sysfs), -1 when unknown (no NUMA, no sysfs, or
// the bus id cannot be read).
int gpu_numa_node(int ordinal);

// The NUMA node that holds the page at `address`, -1 when the kernel does not say (move_pages
// refused, e.g. by a container's seccomp filter, or pages the driver maps itself).
int page_numa_node(const void* address);

// Restricts the calling thread to the CPUs of NUMA node `node` while alive and restores its
// previous affinity on destruction. Memory the driver first touches meanwhile (cudaHostAlloc
// pins, and so faults in, its pages from this thread) comes from that node under the default
// local-allocation policy. placed() is false when the node's CPUs could not be read or set;
// the thread's affinity is then unchanged.
class NodeAffinity {
 public:
  explicit NodeAffinity(int node);
  ~NodeAffinity();
  NodeAffinity(const NodeAffinity&) = delete;
  NodeAffinity& operator=(const NodeAffinity&) = delete;
  bool placed() const { return placed_; }

 private:
  cpu_set_t saved_{};
  bool placed_ = false;
};

}  // namespace bandwidth_detail
}  // namespace preflight
