#pragma once
// One round on rank 0: send every member its group, take part where rank 0 is a member,
// collect the members' reports until the round's deadline, and turn them into one outcome
// per group (with the members the data blames) for the planner and the verdict.
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fleet/logic/fleet_planner.hpp"
#include "fleet/mpi/fleet_run.hpp"

namespace preflight {

struct RoundResult {
  std::vector<GroupReport> reports;  // one per planned group
  FleetRound record;                 // for the verdict
  std::vector<int> newly_unresponsive;
  // Ranks that broke the protocol this round, with what they did ("sent a malformed report in
  // round 2"): faulty, whatever their group's data said.
  std::vector<std::pair<int, std::string>> misbehaving;
  bool any_timeout = false;
};

// Members whose data the reports blame, from who saw which source corrupt: a source that
// arrived corrupt at every other member is blamed; so is a member that saw every other source
// corrupt. In a group of two both are blamed: the evidence cannot tell them apart.
std::vector<int> blamed_members(const std::vector<int>& members,
                                const std::vector<const GroupWork*>& works);

// What a message rank 0 matched but could not take says about its sender, e.g. "sent an
// oversized message as its local report (16777216 bytes; the limit is 1048576)"; empty when
// the message arrived whole.
std::string message_problem(const ReceivedMessage& message, const std::string& what);

class RoundDriver {
 public:
  RoundDriver(FleetRun& run, std::vector<int> gpus)
      : run_(run),
        gpus_(std::move(gpus)),
        speed_(run.args->min_busbw_gbps, run.args->slow_factor) {}
  // `shunned`: ranks already concluded unresponsive or misbehaving; what they send is ignored.
  RoundResult run_round(const RoundPlan& plan, const std::set<int>& shunned);
  bool threads_abandoned() const { return threads_abandoned_; }

 private:
  FleetRun& run_;
  std::vector<int> gpus_;  // per rank: GPUs usable by CUDA
  // Judges each round with the groups of earlier rounds that were not slow: a later round may
  // hold a single group, which is no median of its own.
  RoundSpeedJudge speed_;
  bool threads_abandoned_ = false;
  // rank -> the rounds it was assigned: a late report of one of them is no lie, a report of
  // any other round is.
  std::map<int, std::set<int>> rounds_of_;
};

}  // namespace preflight
