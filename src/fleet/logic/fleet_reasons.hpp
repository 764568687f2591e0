#pragma once
// The one-line reasons of the fleet planner's conclusions: which rounds, which partners, what
// happened (docs/fleet-planner.md#reasons). Internal to preflight_core.
#include <string>
#include <vector>

#include "fleet/logic/fleet_planner.hpp"

namespace preflight::fleet_reasons {

struct Context {
  const std::vector<FleetPlanner::Node>& nodes;
  const std::vector<FleetPlanner::Group>& groups;
  int rounds_used = 0;
  int bound = 0;
  bool bound_reached = false;
};

// A faulty node or a straggler: its bad groups up to the one with a proven partner, e.g.
// "failed (timeout) with node 3 in round 1 and with node 7 (healthy) in round 2".
std::string convicted(const Context& ctx, int node);

// A suspect left when the planner stopped: its bad groups and why they were not separated.
std::string ambiguous(const Context& ctx, int node);

// A failed group all of whose members passed with other partners.
std::string bad_group(const Context& ctx, const FleetPlanner::Group& group);

}  // namespace preflight::fleet_reasons
