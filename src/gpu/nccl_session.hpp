#pragma once
// The state of one CollectiveEngine::run() (nccl_engine.cpp): this process's local ranks, each
// with its GPU, communicator, stream, timing events and buffers, and the steps of a run: set up,
// create the communicators, measure and verify each size, finalize; or, at the deadline, abort
// the communicators and leak what the GPUs may still use.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpu/bandwidth_support.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/device_scope.hpp"
#include "gpu/nccl_library.hpp"
#include "kernels/collective_kernels.hpp"
#include "preflight/engine/collective_engine.hpp"

namespace preflight {
namespace nccl_detail {

using bandwidth_detail::Cancelled;
using bandwidth_detail::kPollInterval;
using bandwidth_detail::PortableHostBuffer;
using bandwidth_detail::TimedOut;

// Thrown with the description of an NCCL call that failed.
struct NcclFailure {
  std::string text;
};

// One local rank: its GPU, communicator, stream, events and buffers.
struct Rank {
  explicit Rank(DeviceScope& session_scope) : scope(session_scope) {}

  DeviceScope& scope;  // the session's, which outlives its ranks
  int ordinal = 0;
  int rank = 0;
  double slow = 1.0;
  bool corrupt = false;
  ncclComm_t comm = nullptr;
  double iteration_ms = 0.0;  // the last warm-up iteration: the base of the injected idling
  std::optional<CudaStream> stream;
  TimingEvent warm_start;
  TimingEvent warm_end;
  TimingEvent start;
  TimingEvent end;
  TimingEvent done;
  std::optional<DeviceBuffer<std::uint32_t>> send;  // floats for all_reduce: the same bytes
  std::optional<DeviceBuffer<std::uint32_t>> recv;
  std::optional<DeviceBuffer<unsigned long long>> counters;
  std::optional<PortableHostBuffer<unsigned long long>> counts;

  // The members are freed after this body, with this rank's device current.
  ~Rank() {
    (void)scope.try_set(ordinal);
    cudaGetLastError();
  }
  void abandon() noexcept {
    if (counts) counts->release();
    if (counters) counters->release();
    if (recv) recv->release();
    if (send) send->release();
    for (TimingEvent* e : {&warm_start, &warm_end, &start, &end, &done}) e->release();
    if (stream) stream->release();
  }
};

// Why the engine refuses the job ("invalid job: ..."); empty when it is well-formed.
std::string invalid_collective_job(const CollectiveJob& job);

// Every method but the cleanup ones throws TimedOut (the deadline passed), Cancelled (the job's
// flag), NcclFailure or CudaError; the caller then aborts and abandons or disposes.
class CollectiveSession {
 public:
  CollectiveSession(const NcclLibrary& library, const CollectiveJob& job, CollectiveResult& out)
      : lib_(library),
        api_(library.api()),
        job_(job),
        out_(out),
        gather_(job.op == CollectiveOp::all_gather),
        bits_(collective_value_bits(job.nranks)) {}
  CollectiveSession(const CollectiveSession&) = delete;
  CollectiveSession& operator=(const CollectiveSession&) = delete;
  // Every path out of run() has finalized or aborted the communicators; one left here means an
  // exception escaped that handling, and a held communicator must not outlive its buffers.
  ~CollectiveSession();

  void setup();
  void init();
  void hold_until_deadline() const;
  void measure(std::size_t bytes);
  void finalize();
  void abort_comms() noexcept;
  void abandon() noexcept;
  void dispose_after_error() noexcept;

 private:
  bool cancelled() const { return job_.cancel && job_.cancel->load(); }
  // One poll step: TimedOut at the deadline, Cancelled on the caller's flag, else a short sleep.
  void tick() const {
    if (SteadyClock::now() >= job_.deadline) throw TimedOut{};
    if (cancelled()) throw Cancelled{};
    std::this_thread::sleep_for(kPollInterval);
  }
  // True while a communicator is still in progress; NcclFailure for one in error.
  bool comms_pending(const char* call) const;
  void wait_comms(const char* call) const {
    while (comms_pending(call)) tick();
  }
  void wait_events(TimingEvent Rank::*event) const;
  // One NCCL group over the local ranks: `call(rank)` makes that rank's NCCL call (`name` in a
  // failure's text) with its device current. Throws NcclFailure with the first failure, after
  // closing the group. Returns ncclGroupEnd's status: ncclSuccess, or ncclInProgress while
  // the communicators still work on it.
  template <class Call>
  ncclResult_t in_group(const char* name, Call call);
  void enqueue(std::uint64_t count);
  void verify(std::uint64_t count);
  std::uint64_t receive_count(std::uint64_t count) const {
    return gather_ ? count * static_cast<std::uint64_t>(job_.nranks) : count;
  }
  std::size_t counter_count() const { return gather_ ? static_cast<std::size_t>(job_.nranks) : 1; }

  const NcclLibrary& lib_;
  const NcclApi& api_;
  const CollectiveJob& job_;
  CollectiveResult& out_;
  const bool gather_;
  const int bits_;
  // Every device switch of the session; declared before the ranks, so it restores the caller's
  // device only after their memory is freed.
  DeviceScope device_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace nccl_detail
}  // namespace preflight
