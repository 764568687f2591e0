#pragma once
// The work-request loop of every transfer, whatever carries it: RDMA writes or reads posted for a
// fixed time with a bounded number in flight, completions polled, then the queue drained. What
// differs between a reliable-connected queue pair (ibv_post_send, verbs_connection.hpp) and EFA's
// SRD one (the extended queue-pair API, efa_connection.hpp) is behind VerbsWorkPoster.
#include <infiniband/verbs.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "net/verbs_library.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

using VerbsWorkClock = std::chrono::steady_clock;

// Where a transfer's messages go. Message k uses slot k % slots of both buffers, `offset` bytes
// in, so the buffer that receives holds the same bytes however many messages there were and
// in whichever order they landed.
struct VerbsWorkBuffers {
  RdmaOp op = RdmaOp::write;
  // The initiator's buffer: the source of a write, the destination of a read.
  std::uint64_t local_address = 0;
  std::uint32_t lkey = 0;
  // The peer's buffer: the destination of a write, the source of a read.
  std::uint64_t remote_address = 0;
  std::uint32_t rkey = 0;
  std::size_t message = 0;
};

struct VerbsWorkRequest {
  std::uint64_t id = 0;      // its wr_id: the message number, from 0
  std::uint64_t offset = 0;  // into both buffers
  bool signalled = false;    // asks for a completion
};

// Posts work requests on one queue pair.
class VerbsWorkPoster {
 public:
  virtual ~VerbsWorkPoster() = default;
  // Posts requests[0, count) in order. "" when every one was posted; else the failed verbs call
  // ("ibv_post_send(RDMA write): Cannot allocate memory"), with `posted` the number posted before
  // the one it refused.
  virtual std::string post(const VerbsWorkRequest* requests, int count, int& posted) = 0;
};

struct VerbsWorkPlan {
  ibv_cq* cq = nullptr;
  std::size_t message = 0;
  std::size_t slots = 1;
  int outstanding = 1;
  int signal_every = 1;
  // RC: completions come in posting order, so a signalled completion of request k accounts for
  // every request before it, the unsignalled ones included. SRD: they come in any order, and
  // EFA takes only signalled requests (signal_every 1), so each completion accounts for one.
  bool in_order_completions = true;
  VerbsWorkClock::duration duration{};
  VerbsWorkClock::time_point deadline;
  const std::atomic<bool>* cancel = nullptr;
  double slow_factor = 1.0;
};

struct VerbsWorkOutcome {
  std::uint64_t posted = 0;
  std::uint64_t completed = 0;  // requests completed successfully
  VerbsWorkClock::time_point first_post;
  // The end of the transfer window: the last completion, or the end of a paced transfer's idle.
  VerbsWorkClock::time_point last_completion;
  bool drained = false;  // posting stopped and every posted request completed
  bool timed_out = false;
  bool cancelled = false;
  std::string error;
};

// Posts for plan.duration with at most plan.outstanding in flight, then drains, paced to
// plan.slow_factor of the link when below 1; stops at the deadline, on cancel or at the first
// failure. Never throws.
VerbsWorkOutcome run_work_requests(const VerbsLibrary& library, const VerbsWorkPlan& plan,
                                   VerbsWorkPoster& poster);

}  // namespace preflight
