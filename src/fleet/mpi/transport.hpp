#pragma once
// The data plane of a fleet round: one group's all-gathers, seen from one member. Two
// transports do the same job: NCCL over every GPU of the group's nodes (what a training job
// uses), and MPI on the CPUs (machines without GPUs, and the tests of the orchestration).
// Every member verifies what it received from each source, so the coordinator can tell a
// sender whose data arrives corrupt everywhere from a receiver that sees everything corrupt.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "preflight/verdict.hpp"

namespace preflight {

using SteadyClock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

class MpiLink;
class CollectiveEngine;

struct GroupTask {
  int round = 0;
  std::vector<int> members;      // world ranks, ascending; members[0] leads
  std::vector<int> member_gpus;  // GPUs of each member (NCCL ranks it contributes)
  std::vector<std::size_t> sizes;
  int iterations = 8;
  std::uint64_t seed = 1;
  SteadyClock::time_point deadline;
  // Injected faults of this rank (drills).
  bool corrupt = false;
  bool hang = false;
  double slow_factor = 1.0;
};

enum class GroupWorkStatus { ok, error, timeout };
std::string_view to_string(GroupWorkStatus s);
std::optional<GroupWorkStatus> parse_group_work_status(std::string_view text);

struct GroupWork {
  GroupWorkStatus status = GroupWorkStatus::ok;
  std::string error;
  double seconds = 0;  // the group's work as this member saw it
  std::vector<std::pair<std::size_t, double>> busbw_by_size;  // bytes per rank -> GB/s
  double busbw_gbps = 0;                                      // of the largest size
  // The allgather-slow drill's rank only: its figure of the same iterations before its pacing
  // (0 elsewhere), so the verdict can show the factor the drill delivered.
  double unslowed_busbw_gbps = 0;
  // How precisely busbw_gbps is known from this member's own iterations: the standard error of
  // their median, relative (1.2533 x 1.4826 x the MAD of their logarithms / sqrt(iterations));
  // 0 where the transport does not time iterations apart.
  double busbw_rel_se = 0;
  std::map<int, std::uint64_t> corrupt_from;  // source world rank -> bytes/elements wrong here
  bool verified = false;                      // every received byte was checked
  bool thread_abandoned = false;              // a worker stuck in the driver was left behind
};

class GroupTransport {
 public:
  virtual ~GroupTransport() = default;
  virtual std::string name() const = 0;
  // Never throws, never returns later than about a second past task.deadline.
  virtual GroupWork run(const GroupTask& task) = 0;
};

std::unique_ptr<GroupTransport> make_host_transport(MpiLink& link);
// engine: the backend's NCCL engine (may be null: every group then fails with the reason).
std::unique_ptr<GroupTransport> make_nccl_transport(MpiLink& link, CollectiveEngine* engine,
                                                    std::vector<int> cuda_ordinals);

// The pattern every rank contributes: 64-bit words of (seed, rank, word index), so a receiver
// knows exactly what each source must have sent.
void fill_contribution(unsigned char* data, std::size_t bytes, std::uint64_t seed, int rank);
// Bytes of `data` that differ from rank's contribution.
std::uint64_t count_wrong_bytes(const unsigned char* data, std::size_t bytes, std::uint64_t seed,
                                int rank);
// nccl-tests' bus bandwidth of an all-gather: (bytes per rank x n / seconds) x (n - 1) / n,
// in GB/s (decimal).
double allgather_busbw_gbps(std::size_t bytes_per_rank, int nranks, double seconds);

}  // namespace preflight
