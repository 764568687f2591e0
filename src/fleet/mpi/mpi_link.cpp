#include "fleet/mpi/mpi_link.hpp"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "model/abandoned.hpp"

namespace preflight {

struct MpiLink::PendingSend {
  std::vector<unsigned char> bytes;
  MPI_Request request = MPI_REQUEST_NULL;
};

namespace {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void check_mpi(int code, const char* what) {
  if (code != MPI_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + mpi_error_text(code));
}

// A matched message must be received (MPI_Mrecv/MPI_Imrecv) to leave MPI's queues. It is taken
// with a non-blocking receive polled against `give_up`, because a sender can stop half-way
// through a message larger than MPI's eager size, and a blocking receive would then wait
// forever. An oversized message goes into a scratch buffer of a few bytes: MPI reports the
// truncation and discards the rest, so nothing of the size the sender claims is allocated.
void take_matched(MPI_Message& message, int count, std::size_t max_bytes,
                  SteadyClock::time_point give_up, std::chrono::microseconds tick,
                  ReceivedMessage& out) {
  const bool oversized = count < 0 || static_cast<std::size_t>(count) > max_bytes;
  // Owned until MPI is done with it; leaked (never freed) when the sender never finishes.
  auto buffer =
      std::make_unique<std::vector<char>>(oversized ? 8 : static_cast<std::size_t>(count));
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Imrecv(buffer->data(), static_cast<int>(buffer->size()), MPI_BYTE, &message, &request) !=
      MPI_SUCCESS) {
    out.problem =
        oversized ? ReceivedMessage::Problem::oversized : ReceivedMessage::Problem::incomplete;
    return;
  }
  while (true) {
    int done = 0;
    // MPI_ERR_TRUNCATE for the oversized one is expected: the request is complete all the same.
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done || request == MPI_REQUEST_NULL) break;
    if (SteadyClock::now() >= give_up) {
      mark_abandoned(buffer.release());  // MPI may still write into it
      out.problem = ReceivedMessage::Problem::incomplete;
      return;
    }
    std::this_thread::sleep_for(tick);
  }
  if (oversized) {
    out.problem = ReceivedMessage::Problem::oversized;
    return;
  }
  out.text.assign(buffer->begin(), buffer->end());
}

}  // namespace

MpiLink::MpiLink(int* argc, char*** argv) {
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  // Errors come back as codes (turned into findings), never as an abort inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  void* value = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found) == MPI_SUCCESS && found) {
    tag_ub_ = *static_cast<int*>(value);
  }
}

MpiLink::~MpiLink() {
  // A link left without finalize() (an exception on the way out) must not finalize with
  // sends pending, which could wait forever on a peer that never receives.
  if (!finalized_) {
    int initialized = 0;
    int done = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&done);
    if (initialized && !done && progress_sends()) MPI_Finalize();
  }
}

void MpiLink::send(int dest, int tag, const void* data, std::size_t bytes) {
  auto pending = std::make_unique<PendingSend>();
  pending->bytes.resize(bytes);
  if (bytes > 0) std::memcpy(pending->bytes.data(), data, bytes);
  check_mpi(MPI_Isend(pending->bytes.data(), static_cast<int>(bytes), MPI_BYTE, dest, tag,
                      MPI_COMM_WORLD, &pending->request),
            "MPI_Isend");
  pending_.push_back(std::move(pending));
  progress_sends();
}

bool MpiLink::progress_sends() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    MPI_Test(&(*it)->request, &done, MPI_STATUS_IGNORE);
    it = done ? pending_.erase(it) : it + 1;
  }
  return pending_.empty();
}

std::optional<ReceivedMessage> MpiLink::receive(int source, int tag,
                                                SteadyClock::time_point deadline,
                                                std::size_t max_bytes,
                                                std::chrono::microseconds tick) {
  while (true) {
    int found = 0;
    MPI_Message message;
    MPI_Status status;
    const int from = source < 0 ? MPI_ANY_SOURCE : source;
    if (MPI_Improbe(from, tag, MPI_COMM_WORLD, &found, &message, &status) == MPI_SUCCESS && found) {
      ReceivedMessage out;
      out.source = status.MPI_SOURCE;
      int count = 0;
      // MPI_UNDEFINED (negative) when the message holds more bytes than an int counts.
      if (MPI_Get_count(&status, MPI_BYTE, &count) != MPI_SUCCESS) count = MPI_UNDEFINED;
      out.claimed_bytes = count < 0 ? -1 : count;
      // The grace is per message, not the caller's deadline: a sender stuck half-way must not
      // keep the other ranks' messages waiting until the end of a phase.
      take_matched(message, count, max_bytes, SteadyClock::now() + kMessageCompletionGrace, tick,
                   out);
      progress_sends();
      return out;
    }
    progress_sends();
    if (SteadyClock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(tick);
  }
}

bool MpiLink::drain_sends(SteadyClock::time_point deadline) {
  while (!progress_sends()) {
    if (SteadyClock::now() >= deadline) {
      for (auto& p : pending_) mark_abandoned(p.release());  // see the header
      pending_.clear();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

void MpiLink::finalize() {
  if (finalized_) return;
  finalized_ = true;
  MPI_Finalize();
}

void MpiLink::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this is for an MPI that does
}

std::optional<int> launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') continue;
    char* end = nullptr;
    const long rank = std::strtol(value, &end, 10);
    if (*end == '\0' && rank >= 0) return static_cast<int>(rank);
  }
  return std::nullopt;
}

}  // namespace preflight
