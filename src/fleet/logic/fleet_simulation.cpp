// The planner against a made-up fleet (fleet_planner.hpp): what the tests and
// preflight-bench-fleet-planner play, and a dry run of a fault placement.
#include <chrono>
#include <cstddef>
#include <string>

#include "fleet/logic/fleet_planner.hpp"

namespace preflight {

namespace {

// The outcome before speed: timeout, fail or ok.
GroupOutcome finished_outcome(const SimulatedFleet& fleet, const std::vector<int>& members) {
  GroupOutcome outcome = GroupOutcome::ok;
  for (int m : members) {
    if (fleet.faulty[static_cast<std::size_t>(m)]) outcome = GroupOutcome::fail;
  }
  if (outcome == GroupOutcome::ok && !fleet.bad_links.empty()) {
    // Members are ascending, so (a, b) with a < b is the key of the link.
    for (std::size_t i = 0; i < members.size(); ++i) {
      for (std::size_t j = i + 1; j < members.size(); ++j) {
        if (fleet.bad_links.count({members[i], members[j]}) > 0) outcome = GroupOutcome::fail;
      }
    }
  }
  // A hung member holds the whole group until its deadline, whatever else is wrong.
  for (int m : members) {
    if (fleet.hung[static_cast<std::size_t>(m)]) outcome = GroupOutcome::timeout;
  }
  return outcome;
}

// The round's reports with measured speed: the groups that finished get their bandwidth from
// the fleet and are judged as the fleet command judges them (fleet/mpi/fleet_rounds.cpp).
std::vector<GroupReport> measured_round(const SimulatedFleet& fleet, const RoundPlan& plan,
                                        RoundSpeedJudge& judge) {
  std::vector<GroupReport> reports;
  std::vector<double> busbw;
  std::vector<std::string> keys;
  for (const GroupPlan& g : plan.groups) {
    GroupReport r;
    r.members = g.members;
    r.outcome = finished_outcome(fleet, g.members);
    busbw.push_back(r.outcome == GroupOutcome::ok ? fleet.busbw_gbps(plan.index, g.members) : 0.0);
    keys.push_back(std::to_string(g.members.size()) + " nodes");
    reports.push_back(std::move(r));
  }
  const std::vector<GroupSpeed> speeds = judge.judge_round(busbw, keys);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    GroupReport& r = reports[i];
    r.speed = speeds[i].judgement;
    r.groups_compared = speeds[i].groups_compared;
    if (r.speed == SpeedJudgement::slow) {
      r.outcome = GroupOutcome::slow;
      r.detail = speeds[i].detail;
    }
  }
  return reports;
}

}  // namespace

GroupReport simulate_group(const SimulatedFleet& fleet, const std::vector<int>& members) {
  GroupReport r;
  r.members = members;
  r.outcome = finished_outcome(fleet, members);
  bool slow = false;
  for (int m : members) {
    if (fleet.straggler[static_cast<std::size_t>(m)]) slow = true;
  }
  if (r.outcome == GroupOutcome::ok && slow) r.outcome = GroupOutcome::slow;
  return r;
}

SimulationRun simulate_fleet(FleetPlanner& planner, const SimulatedFleet& fleet) {
  using Clock = std::chrono::steady_clock;
  SimulationRun run;
  RoundSpeedJudge judge(fleet.min_gbps, fleet.slow_factor);
  for (;;) {
    const auto start = Clock::now();
    const auto plan = planner.next_round();
    auto planned = Clock::now() - start;
    if (!plan) break;
    std::vector<GroupReport> reports;
    if (fleet.busbw_gbps) {
      reports = measured_round(fleet, *plan, judge);
    } else {
      reports.reserve(plan->groups.size());
      for (const GroupPlan& g : plan->groups) reports.push_back(simulate_group(fleet, g.members));
    }
    const auto before_record = Clock::now();
    planner.record(reports);
    planned += Clock::now() - before_record;
    run.round_ms.push_back(std::chrono::duration<double, std::milli>(planned).count());
  }
  run.conclusion = planner.conclude();
  return run;
}

}  // namespace preflight
