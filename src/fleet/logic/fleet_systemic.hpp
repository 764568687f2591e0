#pragma once
// The guard against mass exclusion (docs/fleet.md#systemic-failures). When many nodes fail the
// same way, a cause common to them (the tool's environment, a driver rollout, a threshold, a time
// budget, a switch) is likelier than that many broken nodes, and an exclude list of all of them
// would take a healthy fleet out of service. Cloud repair systems stop repairing past a share of
// a group (EKS node auto-repair: 20%); the fleet verdict stops excluding. Pure: no MPI, no clock.
#include <string>
#include <vector>

namespace preflight {

struct FleetNode;
struct FleetRound;

// The share of the fleet's nodes one cause may take out of service before the verdict calls it
// systemic (--max-exclude-share; 1.0 lifts the guard), and the least number of nodes that makes a
// cause systemic at all: two nodes failing alike may well be two bad nodes.
inline constexpr double kDefaultMaxExcludeShare = 0.2;
inline constexpr int kSystemicMinNodes = 3;

// What a judged node failed by, as short causes, each once: its local checks' finding codes
// ("DISCOVERY_TIMEOUT"; "local fail" or "local error" when the summary names none, "no local
// result" when none arrived), the outcomes of the groups it failed in ("all-gather timeout"),
// "straggler", "ambiguous". None for a healthy node.
std::vector<std::string> node_causes(const FleetNode& node, const std::vector<FleetRound>& rounds);

struct SystemicCause {
  std::string cause;
  int nodes = 0;     // how many nodes failed by it
  double share = 0;  // of all the fleet's nodes
};

// The causes that more than `max_share` of the nodes, and at least kSystemicMinNodes, failed by;
// most nodes first, then by name.
std::vector<SystemicCause> systemic_causes(const std::vector<FleetNode>& nodes,
                                           const std::vector<FleetRound>& rounds, double max_share);

}  // namespace preflight
