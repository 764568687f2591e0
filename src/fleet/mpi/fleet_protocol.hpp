#pragma once
// The messages between rank 0 and the other ranks, as JSON text. Every message names its
// round, so a late message of a round that timed out is recognised and dropped.
#include <optional>
#include <string>
#include <vector>

#include "fleet/logic/fleet_verdict.hpp"
#include "fleet/mpi/transport.hpp"

namespace preflight {

// Rank -> 0, once: who this rank is and how its local checks went.
struct LocalReport {
  int rank = 0;
  std::string host;
  int gpus = 0;  // GPUs usable by CUDA (the NCCL ranks this node contributes)
  LocalSummary local;
};
std::string encode(const LocalReport& r);
std::optional<LocalReport> decode_local(const std::string& text);

// 0 -> rank, per round: the rank's group (empty: it sits this round out), or the end.
struct Assignment {
  bool done = false;
  int exit_code = 0;  // with done
  int round = 0;
  std::vector<int> members;
  std::vector<int> member_gpus;
  std::vector<std::size_t> sizes;
  int iterations = 8;
  std::uint64_t seed = 1;
  double group_timeout_s = 0;
};
std::string encode(const Assignment& a);
std::optional<Assignment> decode_assignment(const std::string& text);

// Rank -> 0, per round it took part in.
struct WorkReport {
  int round = 0;
  GroupWork work;
};
std::string encode(const WorkReport& r);
std::optional<WorkReport> decode_work(const std::string& text);

}  // namespace preflight
