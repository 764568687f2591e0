#pragma once
// The fleet's MPI control plane and host data plane, reduced to what cannot hang: messages are
// sent non-blocking (the link owns their buffers until MPI is done with them) and received by
// polling a matched probe against a deadline. No collective is used after start-up, so a rank
// that is stuck, slow or gone can delay no one past a deadline. All MPI calls come from the
// thread that made the link (MPI_THREAD_FUNNELED).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "preflight/verdict.hpp"

namespace preflight {

using SteadyClock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

// Tags of the control messages. Data messages of the host transport use tags from
// kDataTagBase up (see host_transport.cpp), so a late data message of a timed-out round can
// never be taken for a control message or for data of a later round.
enum class FleetTag : int { local = 1, assignment = 2, report = 3, unique_id = 4 };
inline constexpr int kDataTagBase = 100;

// The largest control message any rank accepts (docs/fleet.md#never-hanging). The largest honest
// one, a local report, is a few KiB, and its encoder keeps it under this. A message MPI says is
// larger is received into a scratch buffer of a few bytes (MPI truncates it) and dropped: what a
// peer claims never decides what the receiver allocates.
inline constexpr std::size_t kMaxControlMessageBytes = std::size_t{1} << 20;
// A message already matched must still arrive: its sender gets this long to deliver the rest
// (milliseconds between live ranks), even past the caller's deadline; then the receive is
// abandoned and the message is Problem::incomplete.
inline constexpr std::chrono::seconds kMessageCompletionGrace{2};

struct ReceivedMessage {
  // What went wrong with a message that was matched but not taken: the source misbehaved
  // (oversized) or stopped in the middle of sending it (incomplete). `text` is then empty.
  enum class Problem { none, oversized, incomplete };
  int source = -1;
  std::string text;
  Problem problem = Problem::none;
  long long claimed_bytes = 0;  // MPI's count for the message; -1 when above what an int holds
};

class MpiLink {
 public:
  // MPI_Init_thread; throws std::runtime_error when MPI cannot start.
  MpiLink(int* argc, char*** argv);
  ~MpiLink();
  MpiLink(const MpiLink&) = delete;
  MpiLink& operator=(const MpiLink&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The largest tag this MPI accepts (MPI_TAG_UB, at least 32767).
  int tag_upper_bound() const { return tag_ub_; }

  // Queues a copy of the bytes for `dest`; never blocks.
  void send(int dest, int tag, const void* data, std::size_t bytes);
  void send_text(int dest, FleetTag tag, const std::string& text) {
    send(dest, static_cast<int>(tag), text.data(), text.size());
  }
  // The next message with this tag (from `source`, or any source with -1), or nullopt when
  // none arrived before the deadline. Polls every `tick`. A message over `max_bytes` comes back
  // with Problem::oversized and no text; one whose sender stops before it is complete comes back
  // with Problem::incomplete after kMessageCompletionGrace. Never blocks on a peer.
  std::optional<ReceivedMessage> receive(
      int source, int tag, SteadyClock::time_point deadline,
      std::size_t max_bytes = kMaxControlMessageBytes,
      std::chrono::microseconds tick = std::chrono::microseconds(200));
  std::optional<ReceivedMessage> receive_text(int source, FleetTag tag,
                                              SteadyClock::time_point deadline) {
    return receive(source, static_cast<int>(tag), deadline);
  }

  // Completes what MPI has finished sending; true when nothing is pending.
  bool progress_sends();
  // Waits (polling) until every queued send completed or the deadline passed. Sends still
  // pending then keep their buffers for the life of the process: a peer that never receives
  // must not make MPI read freed memory.
  bool drain_sends(SteadyClock::time_point deadline);

  // MPI_Finalize when every send completed and `clean`; otherwise the caller should abort.
  void finalize();
  // MPI_Abort on the world: ends every rank (used only after the verdict is written).
  [[noreturn]] void abort(int code);

 private:
  struct PendingSend;
  int rank_ = 0;
  int size_ = 1;
  int tag_ub_ = 32767;
  bool finalized_ = false;
  std::deque<std::unique_ptr<PendingSend>> pending_;
};

// The rank the launcher gave this process, from its environment (Open MPI, PMIx, Slurm), for
// messages printed before MPI starts; nullopt when none is set.
std::optional<int> launcher_rank();

}  // namespace preflight
