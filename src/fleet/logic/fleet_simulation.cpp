// The planner against a made-up fleet (include/preflight/fleet_planner.hpp): what the tests and
// preflight-bench-fleet-planner play, and a dry run of a fault placement.
#include <chrono>
#include <cstddef>

#include "fleet/logic/fleet_planner.hpp"

namespace preflight {

GroupReport simulate_group(const SimulatedFleet& fleet, const std::vector<int>& members) {
  GroupReport r;
  r.members = members;
  bool slow = false;
  for (int m : members) {
    if (fleet.faulty[static_cast<std::size_t>(m)]) r.outcome = GroupOutcome::fail;
    if (fleet.straggler[static_cast<std::size_t>(m)]) slow = true;
  }
  if (r.outcome == GroupOutcome::ok && !fleet.bad_links.empty()) {
    // Members are ascending, so (a, b) with a < b is the key of the link.
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (std::size_t j = i + 1; j < members.size(); ++j) {
        if (fleet.bad_links.count({members[i], members[j]}) > 0) r.outcome = GroupOutcome::fail;
      }
    }
  }
  if (r.outcome == GroupOutcome::ok && slow) r.outcome = GroupOutcome::slow;
  return r;
}

SimulationRun simulate_fleet(FleetPlanner& planner, const SimulatedFleet& fleet) {
  using Clock = std::chrono::steady_clock;
  SimulationRun run;
  for (;;) {
    const auto start = Clock::now();
    const auto plan = planner.next_round();
    auto planned = Clock::now() - start;
    if (!plan) break;
    std::vector<GroupReport> reports;
    reports.reserve(plan->groups.size());
    for (const GroupPlan& g : plan->groups) reports.push_back(simulate_group(fleet, g.members));
    const auto before_record = Clock::now();
    planner.record(reports);
    planned += Clock::now() - before_record;
    run.round_ms.push_back(std::chrono::duration<double, std::milli>(planned).count());
  }
  run.conclusion = planner.conclude();
  return run;
}

}  // namespace preflight
