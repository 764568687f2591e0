// transfer(): RDMA writes from one port's queue pair into memory registered on another (or the
// same) port, measured over a fixed time and checked byte for byte afterwards.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "net/transfer_memory.hpp"
#include "net/verbs_connection.hpp"
#include "net/verbs_engine.hpp"

namespace preflight {
namespace {

using Clock = std::chrono::steady_clock;

// The buffers hold a few messages (at most this much), and the writes wrap around them: message
// k always copies source slot k % slots to destination slot k % slots, so the destination's
// expected contents do not depend on how many writes there were or in which order they landed.
constexpr std::size_t kMaxBuffer = std::size_t{64} << 20;
constexpr std::size_t kSlots = 4;
constexpr int kPostBatch = 16;  // work requests chained into one ibv_post_send
constexpr int kPollBatch = 16;
// Paced (injected slowness): active phases of this long, each followed by an idle one. Long next
// to the queue's fill and drain (about a millisecond for 64 MiB in flight at 400 Gb/s).
constexpr auto kPacePhase = std::chrono::milliseconds(25);
// Without a deadline from the caller (a default-constructed one): this long past the writes.
constexpr auto kDefaultGrace = std::chrono::seconds(30);

// Everything one transfer holds. Torn down so the device stops touching memory before the memory
// goes: queue pairs, then memory regions, then buffers, then completion queues, protection
// domains and devices.
struct Session {
  VerbsEndpoint sender;
  VerbsEndpoint receiver;
  std::unique_ptr<TransferMemory> memory;
  VerbsMr source_mr;
  VerbsMr destination_mr;

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    sender.qp.reset();
    receiver.qp.reset();
    destination_mr.reset();
    source_mr.reset();
    memory.reset();
    // The members then go in reverse order: each end's completion queue, domain and device.
  }

  // Leaks everything (verbs_resources.hpp): past the deadline, any teardown command could wait
  // on a device that no longer answers.
  void abandon() {
    sender.abandon();
    receiver.abandon();
    source_mr.abandon();
    destination_mr.abandon();
    if (memory) memory->abandon();
  }
};

// What the write loop needs; the addresses are those of slot 0.
struct WritePlan {
  ibv_qp* qp = nullptr;
  ibv_cq* cq = nullptr;
  std::uint64_t source = 0;
  std::uint32_t lkey = 0;
  std::uint64_t destination = 0;
  std::uint32_t rkey = 0;
  std::size_t message = 0;
  std::size_t slots = 1;
  int outstanding = 1;
  int signal_every = 1;
  Clock::duration duration{};
  Clock::time_point deadline;
  const std::atomic<bool>* cancel = nullptr;
  double slow_factor = 1.0;
};

struct WriteOutcome {
  std::uint64_t posted = 0;
  std::uint64_t completed = 0;  // every work request before this one completed successfully
  Clock::time_point first_post;
  // The end of the writing window: the last completion, or the end of a paced transfer's idle.
  Clock::time_point last_completion;
  bool drained = false;  // posting stopped and every posted request completed
  bool timed_out = false;
  bool cancelled = false;
  std::string error;
};

bool cancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

// Sleeps until `until` in short steps, returning early at the deadline or on cancel (which the
// loop then sees).
void idle_until(Clock::time_point until, const WritePlan& plan) {
  constexpr auto kStep = std::chrono::milliseconds(5);
  for (auto now = Clock::now(); now < until; now = Clock::now()) {
    if (now >= plan.deadline || cancelled(plan.cancel)) return;
    std::this_thread::sleep_for(std::min<Clock::duration>(kStep, until - now));
  }
}

// Posts RDMA writes for plan.duration with plan.outstanding in flight, then drains. Completions
// of a queue pair arrive in order, so a signalled completion of request k means every request up
// to k completed: "in flight" is posted - completed, and at most plan.outstanding. Since
// signal_every <= outstanding, every full window holds a signalled request, and the last request
// is always signalled, so the drain ends.
WriteOutcome run_writes(const VerbsLibrary& library, const WritePlan& plan) {
  WriteOutcome out;
  std::vector<ibv_send_wr> requests(kPostBatch);
  std::vector<ibv_sge> entries(kPostBatch);
  ibv_wc completions[kPollBatch];
  const bool paced = plan.slow_factor > 0.0 && plan.slow_factor < 1.0;
  bool posting = true;
  bool last_signalled = true;  // the last request posted asked for a completion (or none yet)
  // Paced: posting is held until the queue drains, so the link really idles while the sender
  // does (with requests still queued, the device would keep the link busy through the pause).
  bool pausing = false;
  Clock::time_point stop_at;
  Clock::time_point phase_start;
  int idle_polls = 0;

  for (;;) {
    const auto now = Clock::now();
    if (now >= plan.deadline) {
      out.timed_out = true;
      break;
    }
    if (cancelled(plan.cancel)) {
      out.cancelled = true;
      break;
    }
    // At least one batch, so even a zero duration writes and verifies something.
    if (posting && out.posted > 0 && now >= stop_at) posting = false;
    if (paced && posting && out.posted > 0 && now - phase_start >= kPacePhase) pausing = true;
    const bool post_more = posting && !pausing;

    const auto in_flight = static_cast<int>(out.posted - out.completed);
    const int room = plan.outstanding - in_flight;
    // When posting stops, one more signalled request if the last one was not, so that its
    // completion accounts for the unsignalled ones before it.
    const int count =
        post_more ? std::min(room, kPostBatch) : (last_signalled ? 0 : std::min(room, 1));
    if (count > 0) {
      for (int i = 0; i < count; ++i) {
        const std::uint64_t id = out.posted + static_cast<std::uint64_t>(i);
        const std::uint64_t offset = (id % plan.slots) * plan.message;
        const bool signalled =
            !post_more || (id + 1) % static_cast<std::uint64_t>(plan.signal_every) == 0;
        entries[i] = ibv_sge{};
        entries[i].addr = plan.source + offset;
        entries[i].length = static_cast<std::uint32_t>(plan.message);
        entries[i].lkey = plan.lkey;
        requests[i] = ibv_send_wr{};
        requests[i].wr_id = id;
        requests[i].sg_list = &entries[i];
        requests[i].num_sge = 1;
        requests[i].opcode = IBV_WR_RDMA_WRITE;
        requests[i].send_flags = signalled ? IBV_SEND_SIGNALED : 0;
        requests[i].wr.rdma.remote_addr = plan.destination + offset;
        requests[i].wr.rdma.rkey = plan.rkey;
        requests[i].next = i + 1 < count ? &requests[i + 1] : nullptr;
      }
      if (out.posted == 0) {
        out.first_post = Clock::now();
        out.last_completion = out.first_post;
        stop_at = out.first_post + plan.duration;
        phase_start = out.first_post;
      }
      ibv_send_wr* bad = nullptr;
      // An inline of verbs.h that calls the provider through the context: no linked symbol.
      const int status = ibv_post_send(plan.qp, requests.data(), &bad);
      if (status != 0) {
        // The requests before the rejected one were posted.
        if (bad != nullptr) out.posted += static_cast<std::uint64_t>(bad - requests.data());
        out.error = verbs_failure("ibv_post_send", "RDMA write", verbs_status(status));
        break;
      }
      out.posted += static_cast<std::uint64_t>(count);
      last_signalled = (requests[count - 1].send_flags & IBV_SEND_SIGNALED) != 0;
    }

    const int polled = ibv_poll_cq(plan.cq, kPollBatch, completions);
    if (polled < 0) {
      out.error = verbs_failure("ibv_poll_cq", "sender", 0);
      break;
    }
    for (int i = 0; i < polled && out.error.empty(); ++i) {
      const ibv_wc& completion = completions[i];
      if (completion.status != IBV_WC_SUCCESS) {
        out.error =
            library.wc_status_text(completion.status) + ": wr " + std::to_string(completion.wr_id);
        break;
      }
      out.completed = completion.wr_id + 1;
      out.last_completion = Clock::now();
    }
    if (!out.error.empty()) break;
    const bool empty = last_signalled && out.completed == out.posted;
    if (!posting && empty) {
      out.drained = true;
      if (paced) {
        // The last active phase owes its idle share as well. Without it the window would end on
        // an active phase, and with few phases (a queue that drains slower than kPacePhase, a
        // short profile) the rate would come out well above slow_factor: 0.67 for 0.5.
        out.last_completion += std::chrono::duration_cast<Clock::duration>(
            (out.last_completion - phase_start) * (1.0 / plan.slow_factor - 1.0));
      }
      break;
    }
    if (pausing && empty) {
      // Idle so that the active phase is plan.slow_factor of the whole: the rate drops to that
      // share.
      const auto idle_from = Clock::now();
      const auto busy = idle_from - phase_start;
      idle_until(idle_from + std::chrono::duration_cast<Clock::duration>(
                                 busy * (1.0 / plan.slow_factor - 1.0)),
                 plan);
      pausing = false;
      phase_start = Clock::now();
      // The idle is part of the writing window, also when the writes stop right after it.
      out.last_completion = phase_start;
      continue;
    }
    if (count > 0 || polled > 0) {
      idle_polls = 0;
    } else if (++idle_polls < 4096) {
      std::this_thread::yield();  // a completion is usually microseconds away
    } else {
      // Nothing for a while (a stalled link): stop burning a core until the deadline.
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return out;
}

std::string invalid_job(const RdmaTransferJob& job) {
  if (job.from_device.empty() || job.to_device.empty()) return "invalid transfer: no device";
  if (job.message_bytes == 0 || job.message_bytes > std::numeric_limits<std::uint32_t>::max()) {
    return "invalid transfer: message of " + std::to_string(job.message_bytes) + " bytes";
  }
  if (job.outstanding < 1) return "invalid transfer: outstanding must be at least 1";
  if (job.signal_every < 1) return "invalid transfer: signal_every must be at least 1";
  if (!std::isfinite(job.seconds) || job.seconds < 0.0) return "invalid transfer: seconds";
  if (job.memory == RdmaMemory::gpu && job.gpu_cuda_ordinal < 0) {
    return "invalid transfer: GPUDirect without a CUDA device";
  }
  return "";
}

// Fills `result` from the session; returns once the transfer is over, with the session either
// intact (its destructor tears it down) or abandoned.
void run(const VerbsLibrary& library, const RdmaTransferJob& job, Session& session,
         RdmaTransferResult& result) {
  // Before anything uses job.seconds.
  result.error = invalid_job(job);
  if (!result.error.empty()) return;
  const auto deadline = job.deadline != Clock::time_point{}
                            ? job.deadline
                            : Clock::now() +
                                  std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(job.seconds)) +
                                  kDefaultGrace;
  const auto out_of_time = [&] {
    if (Clock::now() < deadline) return false;
    result.timed_out = true;
    session.abandon();
    return true;
  };

  {
    const VerbsDeviceList list(library);
    if (list.error() != 0) {
      result.error = list.error() == ENOSYS
                         ? "no RDMA devices (the kernel has no RDMA support)"
                         : verbs_failure("ibv_get_device_list", "devices", list.error());
      return;
    }
    result.error = open_endpoint(library, list, job.from_device, job.from_port, session.sender);
    if (!result.error.empty()) return;
    result.error = open_endpoint(library, list, job.to_device, job.to_port, session.receiver);
    if (!result.error.empty()) return;
  }
  if (out_of_time()) return;

  // The device's limits cap the queue depth; the signalling interval must fit in it, or the
  // queue would fill with requests of which none completes.
  int outstanding = job.outstanding;
  if (session.sender.max_qp_wr > 0) outstanding = std::min(outstanding, session.sender.max_qp_wr);
  if (session.sender.max_cqe > 1) outstanding = std::min(outstanding, session.sender.max_cqe - 1);
  const int signal_every = std::min(job.signal_every, outstanding);
  const std::uint32_t max_message =
      std::min(session.sender.port.max_message, session.receiver.port.max_message);
  if (max_message != 0 && job.message_bytes > max_message) {
    result.error = "invalid transfer: message of " + std::to_string(job.message_bytes) +
                   " bytes exceeds the ports' maximum of " + std::to_string(max_message);
    return;
  }

  const std::size_t slots =
      job.message_bytes >= kMaxBuffer ? 1 : std::min(kSlots, kMaxBuffer / job.message_bytes);
  const std::size_t buffer_bytes = slots * job.message_bytes;
  session.memory = job.memory == RdmaMemory::gpu
                       ? make_gpu_memory(job.gpu_cuda_ordinal, buffer_bytes, result.error)
                       : make_host_memory(buffer_bytes, result.error);
  if (!session.memory) return;
  const auto seed = static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
  MemoryStep step = session.memory->prepare(seed, deadline);
  if (step.timed_out) {
    result.timed_out = true;
    session.abandon();
    return;
  }
  result.error = step.error;
  if (!result.error.empty() || out_of_time()) return;
  step = session.memory->register_with(library, session.sender.pd.get(), session.receiver.pd.get(),
                                       kVerbsAccess, session.source_mr, session.destination_mr);
  result.error = step.error;
  if (!result.error.empty()) return;
  result.registration = session.memory->registration();
  if (out_of_time()) return;

  result.error = create_queue_pair(library, session.sender, outstanding, outstanding + 1);
  if (!result.error.empty()) return;
  result.error = create_queue_pair(library, session.receiver, 1, 2);
  if (!result.error.empty()) return;
  bool timed_out = false;
  result.error =
      connect_queue_pairs(library, session.sender, session.receiver, deadline, timed_out);
  if (timed_out) {
    result.timed_out = true;
    session.abandon();
    return;
  }
  if (!result.error.empty()) return;
  result.connected = true;

  WritePlan plan;
  plan.qp = session.sender.qp.get();
  plan.cq = session.sender.cq.get();
  plan.source = session.memory->source_address();
  plan.lkey = session.source_mr.get()->lkey;
  plan.destination = session.memory->destination_address();
  plan.rkey = session.destination_mr.get()->rkey;
  plan.message = job.message_bytes;
  plan.slots = slots;
  plan.outstanding = outstanding;
  plan.signal_every = signal_every;
  plan.duration =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(job.seconds));
  plan.deadline = deadline;
  plan.cancel = job.cancel.get();
  plan.slow_factor = job.slow_factor;
  const WriteOutcome out = run_writes(library, plan);

  result.bytes = out.completed * job.message_bytes;
  const double window = std::chrono::duration<double>(out.last_completion - out.first_post).count();
  if (out.completed > 0 && window > 0) {
    result.gbps = static_cast<double>(result.bytes) * 8.0 / window / 1e9;
  }
  result.error = out.error;
  if (out.timed_out) {
    result.timed_out = true;
    session.abandon();
    return;
  }
  if (out.cancelled) {
    result.error = "cancelled";
    // Requests still in flight: the device may be slow to flush them; do not wait for it.
    if (out.completed != out.posted) session.abandon();
    return;
  }
  if (!out.drained || !result.error.empty()) return;

  // Only the slots written at least once hold the pattern; the rest are still zero.
  const std::size_t written =
      static_cast<std::size_t>(std::min<std::uint64_t>(out.completed, slots));
  step = session.memory->compare(written * job.message_bytes, deadline, result.bad_bytes);
  if (step.ok() && result.bad_bytes > 0) {
    // The sender's completion means the receiving NIC acknowledged the write, not that the bytes
    // are visible to the CPU or a GPU copy engine yet (its PCIe writes are posted, and nothing
    // here orders them with those reads). A late write shows up a moment later, corruption
    // does not: count again once before reporting.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    step = session.memory->compare(written * job.message_bytes, deadline, result.bad_bytes);
  }
  if (step.timed_out) {
    result.timed_out = true;
    session.abandon();
    return;
  }
  result.error = step.error;
  result.verified = step.ok();
}

}  // namespace

RdmaTransferResult run_rdma_transfer(const VerbsLibrary& library, const RdmaTransferJob& job) {
  RdmaTransferResult result;
  if (!library.ok()) {
    result.error = library.error();
    return result;
  }
  try {
    Session session;
    run(library, job, session, result);
  } catch (const std::bad_alloc&) {
    result.error = "out of memory";
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

}  // namespace preflight
