#pragma once
// The fleet planner: which nodes run an all-gather together in each round of `preflight fleet`,
// and what the outcomes say about every node (docs/fleet-planner.md). Pure host code, no MPI or
// NCCL: rank 0 feeds it the group outcomes and the same inputs always give the same plans.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fleet/logic/fleet_speed.hpp"

namespace preflight {

enum class GroupOutcome { ok, fail, corrupt, timeout, slow };
std::string_view to_string(GroupOutcome o);  // "ok","fail","corrupt","timeout","slow"
inline bool is_failure(GroupOutcome o) {
  return o == GroupOutcome::fail || o == GroupOutcome::corrupt || o == GroupOutcome::timeout;
}

struct FleetPlannerOptions {
  int group_size = 2;                  // g >= 2 (InvalidInput otherwise)
  std::vector<std::string> switch_of;  // per node: its switch name; empty = no topology
  int max_rounds = 0;                  // 0: fleet_round_bound(nodes, group_size); else a cap >= 1
  // In every round after the first, the proven (good) nodes that no group of suspects uses run
  // in pairs of their own, marked `reference`. A later round otherwise holds only the retests,
  // fewer groups than the first at another moment and another load, and their speed could only
  // be compared with the first round's groups (issue 32: under load a healthy retest group ran
  // at a quarter of the first round's speed and its node was called a straggler). With the
  // reference pairs a later round has enough groups to be judged on its own. Their outcomes convict
  // nobody (every member is proven); a failed reference pair is a bad pair, as any failed group of
  // proven nodes.
  bool reference_groups = false;
};

struct GroupPlan {
  std::vector<int> members;  // node indices, ascending
  bool reference = false;    // proven nodes run for comparison (reference_groups)
};
struct RoundPlan {
  int index = 0;  // from 1
  std::vector<GroupPlan> groups;
};

struct GroupReport {
  std::vector<int> members;  // exactly as planned
  GroupOutcome outcome = GroupOutcome::ok;
  std::vector<int> blamed;  // members the data attributes the fault to (may be empty; a hint)
  std::string detail;       // short text for reasons, e.g. "timeout after 30.0 s"
  // How the group's speed was judged (fleet_speed.hpp), for the conclusion's speed basis only:
  // the outcome alone decides. A caller without a speed judgement leaves not_measured.
  SpeedJudgement speed = SpeedJudgement::not_measured;
  int groups_compared = 0;  // the comparable groups the judgement rested on, this one included
};

enum class NodeConclusion { healthy, faulty, straggler, ambiguous };
std::string_view to_string(NodeConclusion c);  // "healthy","faulty","straggler","ambiguous"

// A group that failed although every member passed with other partners: a bad link (or, for
// more than two members, a bad path among them) rather than a bad node.
struct BadGroup {
  std::vector<int> members;
  GroupOutcome outcome = GroupOutcome::fail;
  std::string reason;
};

// What a node's speed in the rounds rests on: `slow` for a straggler (the group that convicted
// it), `normal` when a group of it was judged at speed (the one with the most comparable
// groups), `unjudged` when its groups finished but none was judged normal (too few comparable
// groups, or slow without being measured again), `not_measured` when none of its groups
// finished or the caller gave no judgement.
struct NodeSpeed {
  SpeedJudgement judgement = SpeedJudgement::not_measured;
  int groups_compared = 0;
};

struct FleetConclusion {
  std::vector<NodeConclusion> nodes;  // per node index
  std::vector<NodeSpeed> speed;       // per node index
  // Per node; empty for a healthy node (except a lone node: "no partner: the network was not
  // tested"); one line naming the round(s) and partner(s).
  std::vector<std::string> reasons;
  std::vector<BadGroup> bad_pairs;  // failed groups whose members all passed with others
  int rounds_used = 0;
  bool bound_reached = false;  // stopped by the round bound with suspects left (ambiguous)
};

// The most rounds the planner runs for `nodes` nodes in first-round groups of `group_size`:
// 0 for fewer than 2 nodes, else 3 + ceil(log2(nodes)), plus 1 when group_size > 2
// (docs/fleet-planner.md#the-round-bound).
int fleet_round_bound(int nodes, int group_size);

class FleetPlanner {
 public:
  // nodes >= 0; switch_of empty or of size nodes; group_size >= 2; max_rounds >= 0. Throws
  // InvalidInput otherwise.
  FleetPlanner(int nodes, FleetPlannerOptions options);

  // A node kept out of the rounds (failed its local checks, or stopped answering mid-run):
  // concluded faulty with this reason, never grouped again. May be called between rounds. A node
  // excluded right after record() for not answering in that round also takes back the
  // convictions that round made with it as the healthy partner (its silence explains the
  // failure). Throws std::out_of_range for a node outside [0, nodes).
  void exclude(int node, std::string reason);

  // The next round's groups, or nullopt when nothing is left to learn or the bound is reached.
  // Throws std::logic_error while the previous round has not been recorded.
  std::optional<RoundPlan> next_round();

  // The reports of the round last returned by next_round(), one per group (any order).
  // Throws std::logic_error if they do not match the plan (or no round is pending).
  void record(const std::vector<GroupReport>& reports);

  FleetConclusion conclude() const;

  int round_bound() const { return bound_; }

  // What the planner knows; public for the pairing and reason code (fleet_pairing.cpp,
  // fleet_reasons.cpp) and for tests.
  enum class State : std::uint8_t { suspect, good, faulty, straggler, excluded };
  struct Group {
    int round = 0;
    std::vector<int> members;
    GroupOutcome outcome = GroupOutcome::ok;
    std::vector<int> blamed;
    std::string detail;
    SpeedJudgement speed = SpeedJudgement::not_measured;
    int groups_compared = 0;
  };
  struct Node {
    State state = State::suspect;
    int passed_group = -1;        // first ok group (index into groups()), for "good" nodes
    int convicted_group = -1;     // the group that made it faulty or a straggler
    std::vector<int> bad_groups;  // failed or slow groups it was in as a suspect, in order
    std::vector<int> tried;       // partners it already shared a failed or slow pair with
    std::string reason;           // exclude()'s reason
    bool tested = false;          // was in at least one recorded group
  };
  const std::vector<Group>& groups() const { return groups_; }
  const std::vector<Node>& nodes() const { return nodes_; }

 private:
  void apply(std::size_t group_index);
  void add_reference_groups(RoundPlan& round) const;
  void convict_by_two_partners();
  std::vector<NodeSpeed> speeds() const;

  int n_ = 0;
  FleetPlannerOptions options_;
  int bound_ = 0;
  int rounds_used_ = 0;
  bool bound_reached_ = false;
  std::optional<RoundPlan> pending_;
  std::vector<Node> nodes_;
  std::vector<Group> groups_;
  std::size_t last_round_first_group_ = 0;  // groups_ index where the last recorded round starts
  std::vector<int> switch_id_;              // dense per node; empty without topology
};

// slow_groups() and the speed judgement of the fleet command: fleet_speed.hpp.

// A made-up fleet for the tests, the benchmark and dry runs of the planner: a group times out
// when it holds a hung node, fails when it holds a faulty node or both ends of a bad link, and
// is slow when it holds a straggler and does not fail.
struct SimulatedFleet {
  explicit SimulatedFleet(int nodes) : faulty(nodes, 0), straggler(nodes, 0), hung(nodes, 0) {}
  std::vector<char> faulty;                 // per node
  std::vector<char> straggler;              // per node
  std::vector<char> hung;                   // per node: its groups time out
  std::set<std::pair<int, int>> bad_links;  // (lower, higher) node index
  void add_bad_link(int a, int b) { bad_links.insert({std::min(a, b), std::max(a, b)}); }
  // With busbw_gbps set, speed is measured rather than known: every group that does not fail
  // gets busbw_gbps(round, members) and simulate_fleet judges the rounds with RoundSpeedJudge
  // (min_gbps, slow_factor), as the fleet command does; `straggler` is then not used.
  std::function<double(int round, const std::vector<int>& members)> busbw_gbps;
  double slow_factor = 0.8;
  double min_gbps = 0;
};
// One group with known speed: `straggler` makes it slow.
GroupReport simulate_group(const SimulatedFleet& fleet, const std::vector<int>& members);

struct SimulationRun {
  FleetConclusion conclusion;
  std::vector<double> round_ms;  // the planner's time per round: next_round() + record()
};
// Plays the planner's remaining rounds against the fleet, then concludes.
SimulationRun simulate_fleet(FleetPlanner& planner, const SimulatedFleet& fleet);

}  // namespace preflight
