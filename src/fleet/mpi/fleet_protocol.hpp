#pragma once
// The messages between rank 0 and the other ranks, as JSON text. Every message names its
// round, so a late message of a round that timed out is recognised and dropped.
//
// A peer may be broken or hostile (docs/fleet.md#hostile-and-broken-peers): every decoder is
// total (nullopt for anything but a well-formed message within the bounds below; it never
// throws), and what a well-formed message claims is checked against what rank 0 knows by the
// *_problem functions before it is taken as evidence. The encoders keep honest messages within
// the same bounds, so an honest node is never taken for a misbehaving one.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleet/logic/fleet_verdict.hpp"
#include "fleet/mpi/transport.hpp"

namespace preflight {

// Bounds of a decoded message. Honest messages nest three levels deep; the nesting is checked
// on the text before it is parsed, so no parser or destructor recurses on a peer's say-so.
inline constexpr int kMaxMessageNesting = 8;
inline constexpr std::size_t kMaxHostBytes = 255;  // a host name (HOST_NAME_MAX is 64)
inline constexpr int kMaxGpusPerNode = 1024;
inline constexpr std::size_t kMaxMessageTextBytes = 4096;  // a reason, an error
inline constexpr std::size_t kMaxLocalFindings = 512;
inline constexpr std::size_t kMaxNameBytes = 256;  // a finding ("CODE@entity"), a figure's name
inline constexpr std::size_t kMaxLocalFigures = 256;
inline constexpr std::size_t kMaxReportSizes = 8;  // --sizes takes at most 8
inline constexpr int kMaxRound = 1 << 20;          // far above any round bound
inline constexpr int kMaxWorldRanks = 1 << 24;

// Rank -> 0, once: who this rank is and how its local checks went.
struct LocalReport {
  int rank = 0;
  std::string host;
  int gpus = 0;  // GPUs usable by CUDA (the NCCL ranks this node contributes)
  LocalSummary local;
};
// Trims what is above the bounds (findings, figures, long text) so the message always decodes.
std::string encode(const LocalReport& r);
std::optional<LocalReport> decode_local(const std::string& text);
// Why a decoded local report from `source` (MPI's word, not the message's) cannot be taken in a
// fleet of `world` ranks: it claims to be another rank. Empty when it can.
std::string local_report_problem(const LocalReport& r, int source, int world);

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
// Why rank `me` of `world` cannot run this assignment: members not ascending, outside the
// world or without `me`, a GPU count per member missing, sizes or a timeout out of range.
// Empty when it can.
std::string assignment_problem(const Assignment& a, int world, int me);

// Rank -> 0, per round it took part in.
struct WorkReport {
  int round = 0;
  GroupWork work;
};
std::string encode(const WorkReport& r);
std::optional<WorkReport> decode_work(const std::string& text);
// Why a decoded report of this round from `source`, a member of `members`, is no evidence: it
// blames a source outside its group, or itself. Empty when it is.
std::string work_report_problem(const WorkReport& r, int source, const std::vector<int>& members);

}  // namespace preflight
