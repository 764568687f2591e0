#include "fleet/logic/fleet_scale.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <set>

#include "fleet/logic/fleet_planner.hpp"
#include "fleet/logic/fleet_setup.hpp"

namespace preflight {

namespace {

constexpr int kNodesPerSwitch = 16;

// A deterministic scatter in [1 - spread, 1 + spread] per round and group.
double wobble(unsigned seed, int round, const std::vector<int>& members, double spread) {
  std::uint64_t h = 1469598103934665603ULL ^ seed;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ULL;
  };
  mix(static_cast<std::uint64_t>(round));
  for (int m : members) mix(static_cast<std::uint64_t>(m) + 0x9e37U);
  const double unit = static_cast<double>(h % 1000003ULL) / 1000002.0;  // [0, 1]
  return 1.0 + spread * (2.0 * unit - 1.0);
}

}  // namespace

ScaleOutcome run_scale_scenario(const ScaleScenario& s) {
  std::mt19937 rng(s.seed + static_cast<unsigned>(s.nodes) * 7919U);
  std::vector<int> order(static_cast<std::size_t>(s.nodes));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  SimulatedFleet fleet(s.nodes);
  std::size_t next = 0;
  const auto take = [&]() { return order[next++ % order.size()]; };
  for (int i = 0; i < s.faulty; ++i) fleet.faulty[static_cast<std::size_t>(take())] = 1;
  std::vector<int> slow;
  for (int i = 0; i < s.stragglers; ++i) slow.push_back(take());
  FleetPlannerOptions options;
  options.reference_groups = true;  // as the fleet command, which judges speed
  for (int i = 0; s.topology && i < s.nodes; ++i) {
    options.switch_of.push_back("leaf" + std::to_string(i / kNodesPerSwitch));
  }
  // Bad links where round 1 uses them (a link no group crosses is never tested, and a random
  // pair almost never is): the first members of first-round groups of healthy nodes, taken in a
  // shuffled order.
  if (s.bad_links > 0) {
    FleetPlanner first(s.nodes, options);
    std::vector<GroupPlan> groups = first.next_round()->groups;
    std::shuffle(groups.begin(), groups.end(), rng);
    int placed = 0;
    for (const GroupPlan& g : groups) {
      if (placed == s.bad_links) break;
      const int a = g.members[0];
      const int b = g.members[1];
      const auto healthy = [&](int m) {
        return !fleet.faulty[static_cast<std::size_t>(m)] &&
               std::find(slow.begin(), slow.end(), m) == slow.end();
      };
      if (!healthy(a) || !healthy(b)) continue;
      fleet.add_bad_link(a, b);
      ++placed;
    }
  }
  if (s.stragglers > 0) {
    const std::set<int> slow_set(slow.begin(), slow.end());
    const double pace_slow = s.straggler_pace;
    const double spread = s.noise;
    const unsigned seed = s.seed;
    fleet.busbw_gbps = [slow_set, pace_slow, spread, seed](int round,
                                                           const std::vector<int>& members) {
      double pace = 1.0;
      for (int m : members) {
        if (slow_set.count(m) > 0) pace = pace_slow;
      }
      return 100.0 * pace * wobble(seed, round, members, spread);
    };
  }

  FleetPlanner planner(s.nodes, options);
  const SimulationRun run = simulate_fleet(planner, fleet);

  ScaleOutcome out;
  out.rounds = run.conclusion.rounds_used;
  out.bound = fleet_round_bound(s.nodes, options.group_size);
  out.planner_ms = std::accumulate(run.round_ms.begin(), run.round_ms.end(), 0.0);
  // What one round may take by the fleet's own plan: NCCL's default group timeout and its slack.
  const FleetTiming round =
      plan_fleet_timing(0, 1, std::nullopt, std::nullopt, kDefaultGroupSecondsNccl);
  out.budget_s = out.rounds * (round.group_s + round.report_slack_s);
  out.bad_pairs_found = static_cast<int>(run.conclusion.bad_pairs.size());
  for (int i = 0; i < s.nodes; ++i) {
    const auto idx = static_cast<std::size_t>(i);
    NodeConclusion truth = NodeConclusion::healthy;
    if (fleet.faulty[idx]) {
      truth = NodeConclusion::faulty;
    } else if (std::find(slow.begin(), slow.end(), i) != slow.end()) {
      truth = NodeConclusion::straggler;
    }
    const NodeConclusion said = run.conclusion.nodes[idx];
    if (said == NodeConclusion::ambiguous) {
      ++out.ambiguous;
    } else if (said != truth) {
      ++out.wrong;
    }
  }
  return out;
}

std::vector<ScaleScenario> scale_scenarios(int nodes) {
  std::vector<ScaleScenario> out;
  const auto add = [&](std::string label, int faulty, int links, int stragglers) {
    for (bool topology : {false, true}) {
      ScaleScenario s;
      s.nodes = nodes;
      s.faulty = faulty;
      s.bad_links = links;
      s.stragglers = stragglers;
      s.topology = topology;
      s.label = label;
      out.push_back(s);
    }
  };
  add("0 faulty", 0, 0, 0);
  add("1 faulty", 1, 0, 0);
  if (nodes / 64 > 1) add("N/64 faulty", nodes / 64, 0, 0);
  add("N/8 faulty", std::max(1, nodes / 8), 0, 0);
  add("N/2 faulty", nodes / 2, 0, 0);
  add("N/64 bad links", 0, std::max(1, nodes / 64), 0);
  add("5% stragglers", 0, 0, std::max(1, static_cast<int>(std::lround(nodes * 0.05))));
  return out;
}

}  // namespace preflight
