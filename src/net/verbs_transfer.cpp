// transfer(): RDMA writes (or reads) between one port's queue pair and memory registered on
// another (or the same) port, measured over a fixed time and checked byte for byte afterwards.
// InfiniBand and RoCE devices carry it on an RC queue pair (verbs_connection.hpp), EFA devices
// on an SRD one (efa_connection.hpp); the work-request loop (verbs_work_loop.hpp), the memory and
// the verification are the same for both.
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

#include "net/efa_connection.hpp"
#include "net/transfer_memory.hpp"
#include "net/verbs_connection.hpp"
#include "net/verbs_engine.hpp"
#include "net/verbs_work_loop.hpp"

namespace preflight {
namespace {

using Clock = std::chrono::steady_clock;

// The buffers hold a few messages (at most this much), and the messages wrap around them:
// message k always copies source slot k % slots to destination slot k % slots, so the
// destination's expected contents do not depend on how many messages there were or in which
// order they landed.
constexpr std::size_t kMaxBuffer = std::size_t{64} << 20;
constexpr std::size_t kSlots = 4;
// Without a deadline from the caller (a default-constructed one): this long past the transfer.
constexpr auto kDefaultGrace = std::chrono::seconds(30);

// Everything one transfer holds. Torn down so the device stops touching memory before the memory
// goes: queue pairs, then memory regions, then buffers, then completion queues, protection
// domains and devices.
struct Session {
  VerbsEndpoint initiator;  // from_device: its queue pair issues the writes or reads
  VerbsEndpoint peer;       // to_device: its memory is written or read
  // The source holds the pattern, the destination receives it: the source is registered on the
  // initiator for a write and on the peer for a read.
  std::unique_ptr<TransferMemory> memory;
  VerbsMr source_mr;
  VerbsMr destination_mr;

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() {
    initiator.qp.reset();
    peer.qp.reset();
    destination_mr.reset();
    source_mr.reset();
    memory.reset();
    // The members then go in reverse order: each end's address handle, completion queue,
    // domain and device.
  }

  // Leaks everything (verbs_resources.hpp): past the deadline, any teardown command could wait
  // on a device that no longer answers.
  void abandon() {
    initiator.abandon();
    peer.abandon();
    source_mr.abandon();
    destination_mr.abandon();
    if (memory) memory->abandon();
  }
};

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

// The queue depth the devices allow, and a message size they take; "" or why not.
struct TransferShape {
  int outstanding = 1;
  int signal_every = 1;
};

std::string shape_transfer(const RdmaTransferJob& job, bool srd, const Session& session,
                           TransferShape& shape) {
  const VerbsEndpoint& initiator = session.initiator;
  // The device's limits cap the queue depth; the signalling interval must fit in it, or the
  // queue would fill with requests of which none completes.
  shape.outstanding = job.outstanding;
  if (initiator.max_qp_wr > 0) shape.outstanding = std::min(shape.outstanding, initiator.max_qp_wr);
  if (initiator.max_cqe > 1) shape.outstanding = std::min(shape.outstanding, initiator.max_cqe - 1);
  if (srd && initiator.efa_caps.max_sq_wr > 0) {
    shape.outstanding = static_cast<int>(std::min<std::uint64_t>(
        static_cast<std::uint64_t>(shape.outstanding), initiator.efa_caps.max_sq_wr));
  }
  // EFA takes no unsignalled request.
  shape.signal_every = srd ? 1 : std::min(job.signal_every, shape.outstanding);
  // An EFA port's max_msg_sz is its MTU, the limit of a send; RDMA operations have their own.
  const std::uint32_t max_message =
      srd ? std::min(initiator.efa_caps.max_rdma_size, session.peer.efa_caps.max_rdma_size)
          : std::min(initiator.port.max_message, session.peer.port.max_message);
  if (max_message != 0 && job.message_bytes > max_message) {
    return "invalid transfer: message of " + std::to_string(job.message_bytes) +
           " bytes exceeds the " + (srd ? "devices' largest RDMA operation" : "ports' maximum") +
           " of " + std::to_string(max_message);
  }
  return "";
}

// Fills `result` from the session; returns once the transfer is over, with the session either
// intact (its destructor tears it down) or abandoned.
void run(const VerbsLibrary& library, const LazyEfaLibrary& efa, const RdmaTransferJob& job,
         Session& session, RdmaTransferResult& result) {
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
  VerbsEndpoint& initiator = session.initiator;
  VerbsEndpoint& peer = session.peer;

  {
    const VerbsDeviceList list(library);
    if (list.error() != 0) {
      result.error = list.error() == ENOSYS
                         ? "no RDMA devices (the kernel has no RDMA support)"
                         : verbs_failure("ibv_get_device_list", "devices", list.error());
      return;
    }
    result.error = open_endpoint(library, list, job.from_device, job.from_port, initiator);
    if (!result.error.empty()) return;
    result.error = open_endpoint(library, list, job.to_device, job.to_port, peer);
    if (!result.error.empty()) return;
  }
  if (out_of_time()) return;

  // EFA has no RC queue pairs, and the others no SRD ones.
  const bool srd = initiator.efa || peer.efa;
  if (srd && !(initiator.efa && peer.efa)) {
    const VerbsEndpoint& efa_end = initiator.efa ? initiator : peer;
    const VerbsEndpoint& other = initiator.efa ? peer : initiator;
    result.error = efa_end.device + " is an EFA device and " + other.device +
                   " is not: no queue pair type connects them";
    return;
  }
  if (srd) {
    result.error = check_srd_support(library, efa.get(), job.op, initiator, peer);
    if (!result.error.empty()) return;
  }
  TransferShape shape;
  result.error = shape_transfer(job, srd, session, shape);
  if (!result.error.empty()) return;

  const std::size_t slots =
      job.message_bytes >= kMaxBuffer ? 1 : std::min(kSlots, kMaxBuffer / job.message_bytes);
  const std::size_t buffer_bytes = slots * job.message_bytes;
  session.memory = job.memory == RdmaMemory::gpu
                       ? make_gpu_memory(job.gpu_cuda_ordinal, buffer_bytes, result.error)
                       : make_host_memory(buffer_bytes, result.error, job.host_numa_node);
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
  const bool read = job.op == RdmaOp::read;
  const int access = verbs_access(job.op);
  step = session.memory->register_with(library, read ? peer.pd.get() : initiator.pd.get(),
                                       read ? initiator.pd.get() : peer.pd.get(), access,
                                       session.source_mr, session.destination_mr);
  result.error = step.error;
  if (!result.error.empty()) return;
  result.registration = session.memory->registration();
  if (out_of_time()) return;

  // The peer's queue pair only has to exist and be ready: it posts nothing.
  const int depth = shape.outstanding;
  result.error =
      srd ? create_srd_queue_pair(library, efa.get(), initiator, job.op, depth, depth + 1)
          : create_queue_pair(library, initiator, depth, depth + 1);
  if (!result.error.empty()) return;
  result.error = srd ? create_srd_queue_pair(library, efa.get(), peer, job.op, 1, 2)
                     : create_queue_pair(library, peer, 1, 2);
  if (!result.error.empty()) return;
  bool timed_out = false;
  result.error = srd ? connect_srd_queue_pairs(library, initiator, peer, deadline, timed_out)
                     : connect_queue_pairs(library, initiator, peer, access, deadline, timed_out);
  if (timed_out) {
    result.timed_out = true;
    session.abandon();
    return;
  }
  if (!result.error.empty()) return;
  result.connected = true;
  result.queue_pair = srd ? "srd" : "rc";

  VerbsWorkBuffers buffers;
  buffers.op = job.op;
  const TransferMemory& memory = *session.memory;
  buffers.local_address = read ? memory.destination_address() : memory.source_address();
  buffers.lkey = (read ? session.destination_mr : session.source_mr).get()->lkey;
  buffers.remote_address = read ? memory.source_address() : memory.destination_address();
  buffers.rkey = (read ? session.source_mr : session.destination_mr).get()->rkey;
  buffers.message = job.message_bytes;
  VerbsWorkPlan plan;
  plan.cq = initiator.cq.get();
  plan.message = job.message_bytes;
  plan.slots = slots;
  plan.outstanding = shape.outstanding;
  plan.signal_every = shape.signal_every;
  plan.in_order_completions = !srd;
  plan.duration =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(job.seconds));
  plan.deadline = deadline;
  plan.cancel = job.cancel.get();
  plan.slow_factor = job.slow_factor;
  VerbsWorkOutcome out;
  if (srd) {
    SrdPoster poster(initiator, peer.qp.get()->qp_num, buffers);
    out = run_work_requests(library, plan, poster);
  } else {
    RcPoster poster(initiator.qp.get(), buffers);
    out = run_work_requests(library, plan, poster);
  }

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
    // The initiator's completion of a write means the receiving NIC acknowledged it, not that
    // the bytes are visible to the CPU or a GPU copy engine yet (its PCIe writes are posted, and
    // nothing here orders them with those reads). A late write shows up a moment later,
    // corruption does not: count again once before reporting.
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

RdmaTransferResult run_rdma_transfer(const VerbsLibrary& library, const LazyEfaLibrary& efa,
                                     const RdmaTransferJob& job) {
  RdmaTransferResult result;
  if (!library.ok()) {
    result.error = library.error();
    return result;
  }
  try {
    Session session;
    run(library, efa, job, session, result);
  } catch (const std::bad_alloc&) {
    result.error = "out of memory";
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

}  // namespace preflight
