#pragma once
// How the fleet planner forms groups (docs/fleet-planner.md): the first round over all nodes, and
// the later rounds that pair suspects with proven nodes or with fresh partners. Internal to
// preflight_core; FleetPlanner (fleet_planner.cpp) keeps the state and the conclusions.
#include <string>
#include <vector>

#include "fleet/logic/fleet_planner.hpp"

namespace preflight::fleet_pairing {

// Dense switch ids (0, 1, ...) in order of first appearance; empty when there is no topology.
std::vector<int> switch_ids(const std::vector<std::string>& switch_of);

// Round 1: `active` (ascending) in groups of group_size; the size mod group_size leftovers go one
// each to the last groups. With switch ids the members of a group come from different switches
// wherever the switch sizes allow it. Groups with ascending members; none for fewer than 2 nodes.
std::vector<std::vector<int>> first_round(const std::vector<int>& active, int group_size,
                                          const std::vector<int>& switch_id);

// A later round from what the planner knows: every suspect it can, with a good node (pairs),
// the rest with suspects they never shared a bad pair with. Groups with ascending members,
// ordered by first member; empty when no useful group is left.
std::vector<std::vector<int>> later_round(const std::vector<FleetPlanner::Node>& nodes,
                                          const std::vector<FleetPlanner::Group>& groups,
                                          const std::vector<int>& switch_id);

}  // namespace preflight::fleet_pairing
