// The fleet planner against simulated fleets (SimulatedFleet: a group fails when it holds a
// faulty node or both ends of a bad link, times out when it holds a hung node, and is slow when
// it holds a straggler and no faulty node, or, with measured speed, when RoundSpeedJudge says
// so; the judgement itself is tested in test_fleet_speed.cpp). Every placement of up to N/2 faulty
// nodes for small fleets, and random, adjacent and one-switch placements for large ones: the
// faulty set must come out exact, no healthy node may be called faulty, and the rounds must stay
// within fleet_round_bound (docs/fleet-planner.md).
#include <algorithm>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <cmath>

#include "fleet/logic/fleet_planner.hpp"
#include "support/sweeps.hpp"

using namespace preflight;

namespace {

std::vector<std::string> spread_over_switches(int nodes, int switches) {
  std::vector<std::string> sw;
  for (int i = 0; i < nodes; ++i) sw.push_back("leaf" + std::to_string(i % switches));
  return sw;
}

FleetConclusion play(const SimulatedFleet& fleet, int group_size = 2,
                     std::vector<std::string> switches = {}) {
  FleetPlannerOptions o;
  o.group_size = group_size;
  o.switch_of = std::move(switches);
  FleetPlanner planner(static_cast<int>(fleet.faulty.size()), o);
  return simulate_fleet(planner, fleet).conclusion;
}

// The conclusion names exactly the faulty nodes and stragglers of the fleet, within the bound.
// Returns the rounds used.
int check_exact(const SimulatedFleet& fleet, const FleetConclusion& c, int group_size) {
  const int n = static_cast<int>(fleet.faulty.size());
  int wrong = 0;
  int healthy_called_faulty = 0;
  for (int i = 0; i < n; ++i) {
    const auto expected = fleet.faulty[static_cast<std::size_t>(i)]      ? NodeConclusion::faulty
                          : fleet.straggler[static_cast<std::size_t>(i)] ? NodeConclusion::straggler
                                                                         : NodeConclusion::healthy;
    if (c.nodes[static_cast<std::size_t>(i)] != expected) ++wrong;
    if (c.nodes[static_cast<std::size_t>(i)] == NodeConclusion::faulty &&
        !fleet.faulty[static_cast<std::size_t>(i)]) {
      ++healthy_called_faulty;
    }
  }
  std::string called;
  for (int i = 0; i < n; ++i) {
    called += std::to_string(i) + ": " +
              std::string(to_string(c.nodes[static_cast<std::size_t>(i)])) + " (" +
              c.reasons[static_cast<std::size_t>(i)] + ")\n";
  }
  INFO(called);
  CHECK(healthy_called_faulty == 0);
  CHECK(wrong == 0);
  CHECK(c.rounds_used <= fleet_round_bound(n, group_size));
  CHECK_FALSE(c.bound_reached);
  return c.rounds_used;
}

// Every set of at most n/2 faulty nodes among n. Returns the most rounds any needed.
int exhaustive(int n, int group_size, const std::vector<std::string>& switches) {
  int most = 0;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    const int k = __builtin_popcount(mask);
    if (k > n / 2) continue;
    SimulatedFleet fleet(n);
    for (int i = 0; i < n; ++i) fleet.faulty[static_cast<std::size_t>(i)] = (mask >> i) & 1u;
    const FleetConclusion c = play(fleet, group_size, switches);
    INFO("n=" << n << " g=" << group_size << " faulty mask=" << mask);
    if (n == 2 && k == 1) {
      // One pair, one of them faulty: nothing can tell which.
      CHECK(c.nodes == std::vector<NodeConclusion>(2, NodeConclusion::ambiguous));
      continue;
    }
    most = std::max(most, check_exact(fleet, c, group_size));
  }
  return most;
}

enum class Placement { random, adjacent, one_switch };

SimulatedFleet place(int n, int k, Placement how, int switches, unsigned seed) {
  std::mt19937 rng(seed);
  SimulatedFleet fleet(n);
  if (how == Placement::random) {
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    for (int i = 0; i < k; ++i) fleet.faulty[static_cast<std::size_t>(order[i])] = 1;
  } else if (how == Placement::adjacent) {
    const int start = static_cast<int>(rng() % static_cast<unsigned>(n - k + 1));
    for (int i = start; i < start + k; ++i) fleet.faulty[static_cast<std::size_t>(i)] = 1;
  } else {
    // The first k nodes of one switch (node i is on switch i mod switches).
    const int sw = static_cast<int>(rng() % static_cast<unsigned>(switches));
    for (int i = sw, placed = 0; i < n && placed < k; i += switches, ++placed) {
      fleet.faulty[static_cast<std::size_t>(i)] = 1;
    }
  }
  return fleet;
}

}  // namespace

TEST_CASE("fleet simulation: every placement of up to N/2 faulty nodes, N = 2..14, pairs") {
  const int largest = preflight::test::kShortSweeps ? 11 : 14;
  for (int n = 2; n <= largest; ++n) {
    const int most = exhaustive(n, 2, {});
    CHECK(most <= fleet_round_bound(n, 2));
  }
}

TEST_CASE("fleet simulation: every placement, larger first groups and topology") {
  const int less = preflight::test::kShortSweeps ? 2 : 0;
  for (int n = 3; n <= 11 - less; ++n) exhaustive(n, 3, {});
  for (int n = 4; n <= 10 - less; ++n) exhaustive(n, 4, {});
  for (int n = 4; n <= 12 - less; ++n) exhaustive(n, 2, spread_over_switches(n, 3));
}

TEST_CASE("fleet simulation: a straggler next to a faulty node, every position") {
  for (int n = 4; n <= 10; ++n) {
    for (int s = 0; s < n; ++s) {
      for (int f = 0; f < n; ++f) {
        if (f == s) continue;
        SimulatedFleet fleet(n);
        fleet.straggler[static_cast<std::size_t>(s)] = 1;
        fleet.faulty[static_cast<std::size_t>(f)] = 1;
        INFO("n=" << n << " straggler=" << s << " faulty=" << f);
        FleetConclusion c = play(fleet);
        // In a fleet of 4 or 5 with a faulty node, two healthy partners proven before it may not
        // be left for the straggler (a slow group counts only with partners proven before it
        // ran): it is then ambiguous, never healthy and never a wrong call; 12 of the 322
        // cases.
        if (n <= 5 && c.nodes[static_cast<std::size_t>(s)] == NodeConclusion::ambiguous) {
          c.nodes[static_cast<std::size_t>(s)] = NodeConclusion::straggler;
          c.bound_reached = false;
        }
        check_exact(fleet, c, 2);
      }
    }
  }
}

TEST_CASE("fleet simulation: one bad link, every position") {
  for (int n = 3; n <= 10; ++n) {
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        SimulatedFleet fleet(n);
        fleet.add_bad_link(a, b);
        INFO("n=" << n << " bad link " << a << "-" << b);
        const FleetConclusion c = play(fleet);
        check_exact(fleet, c, 2);
        // Reported when round 1 put both ends in one group; a link never used is not seen.
        REQUIRE(c.bad_pairs.size() <= 1);
        if (!c.bad_pairs.empty()) {
          const auto& m = c.bad_pairs[0].members;
          CHECK(std::count(m.begin(), m.end(), a) == 1);
          CHECK(std::count(m.begin(), m.end(), b) == 1);
        }
      }
    }
  }
}

TEST_CASE("fleet simulation: large fleets, random, adjacent and one-switch placements") {
  const std::vector<int> sizes = preflight::test::kShortSweeps
                                     ? std::vector<int>{64, 256, 1024}
                                     : std::vector<int>{64, 256, 1024, 4096};
  for (int n : sizes) {
    for (int k : {1, n / 16, n / 4, n / 2}) {
      for (unsigned seed : {1u, 2u}) {
        INFO("n=" << n << " k=" << k << " seed=" << seed);
        {
          const SimulatedFleet fleet = place(n, k, Placement::random, 0, seed);
          check_exact(fleet, play(fleet), 2);
        }
        {
          const SimulatedFleet fleet = place(n, k, Placement::adjacent, 0, seed);
          check_exact(fleet, play(fleet), 2);
        }
        for (int switches : {8, 32}) {
          // At most a whole switch is faulty.
          const SimulatedFleet fleet = place(n, k, Placement::one_switch, switches, seed);
          check_exact(fleet, play(fleet, 2, spread_over_switches(n, switches)), 2);
        }
        if (seed == 1) {
          const SimulatedFleet fleet = place(n, k, Placement::random, 0, seed + 10);
          check_exact(fleet, play(fleet, 2, spread_over_switches(n, 32)), 2);
        }
      }
    }
  }
}

TEST_CASE("fleet simulation: large fleets in groups of 4 and 8") {
  for (int g : {4, 8}) {
    for (int n : {256, 1024}) {
      for (int k : {1, n / 16, n / 4, n / 2}) {
        INFO("g=" << g << " n=" << n << " k=" << k);
        const SimulatedFleet fleet = place(n, k, Placement::random, 0, 7);
        check_exact(fleet, play(fleet, g), g);
      }
    }
  }
}

TEST_CASE("fleet simulation: faults, stragglers and a bad link together") {
  const int n = 512;
  SimulatedFleet fleet = place(n, 40, Placement::random, 0, 3);
  int stragglers = 0;
  for (int i = 0; i < n && stragglers < 10; i += 37) {
    if (!fleet.faulty[static_cast<std::size_t>(i)]) {
      fleet.straggler[static_cast<std::size_t>(i)] = 1;
      ++stragglers;
    }
  }
  // A bad link inside a round-1 pair of two healthy nodes.
  int a = 0;
  while (fleet.faulty[static_cast<std::size_t>(a)] ||
         fleet.faulty[static_cast<std::size_t>(a + 1)] ||
         fleet.straggler[static_cast<std::size_t>(a)] ||
         fleet.straggler[static_cast<std::size_t>(a + 1)]) {
    a += 2;
  }
  fleet.add_bad_link(a, a + 1);
  const FleetConclusion c = play(fleet);
  check_exact(fleet, c, 2);
  REQUIRE(c.bad_pairs.size() == 1);
  CHECK(c.bad_pairs[0].members == std::vector<int>{a, a + 1});
}

// Measured speed (SimulatedFleet::busbw_gbps): the rounds are judged by RoundSpeedJudge, as the
// fleet command judges them, rather than told which groups are slow.
namespace {

// A deterministic fluctuation in [1 - spread, 1 + spread] per (round, group), so that healthy
// groups differ as real ones do.
double wobble(int round, const std::vector<int>& members, double spread) {
  unsigned h = 2166136261u ^ static_cast<unsigned>(round);
  for (int m : members) h = (h ^ static_cast<unsigned>(m)) * 16777619u;
  return 1.0 + spread * (static_cast<double>(h % 2001) / 1000.0 - 1.0);
}

// Nodes at `base` GB/s, the ones in `slow` at `slow_fraction` of it; a group runs at its
// slowest member's pace, times the wobble.
SimulatedFleet measured_fleet(int n, std::vector<int> slow, double slow_fraction, double spread) {
  SimulatedFleet fleet(n);
  fleet.busbw_gbps = [slow, slow_fraction, spread](int round, const std::vector<int>& members) {
    double pace = 1.0;
    for (int m : members) {
      if (std::find(slow.begin(), slow.end(), m) != slow.end()) pace = slow_fraction;
    }
    return 100.0 * pace * wobble(round, members, spread);
  };
  return fleet;
}

FleetConclusion play_measured(const SimulatedFleet& fleet) {
  FleetPlanner planner(static_cast<int>(fleet.faulty.size()), FleetPlannerOptions{});
  return simulate_fleet(planner, fleet).conclusion;
}

}  // namespace

TEST_CASE("fleet simulation: issue 15, the hang scenario under srun --mpi=pmix, 4 ranks") {
  // tests/mpi/test_fleet_mpi.cpp's "a node that never completes" run for real with srun: rank 1
  // hangs (allgather-hang@node=1). Round 1: {0, 1} times out, {2, 3} passes. Round 2 pairs the
  // suspects with the proven nodes; the hung rank's spinning threads share the CPUs, so every
  // group of round 2 runs at 12 GB/s against 20 in round 1. Rank 0's round-2 group was compared
  // with the median of itself and one earlier group: 12 < 0.8 x (20 + 12) / 2, a straggler in
  // both runs. Every hung rank, the same: only the hung one is named.
  for (int hung = 0; hung < 4; ++hung) {
    INFO("hung rank " << hung);
    SimulatedFleet fleet(4);
    fleet.hung[static_cast<std::size_t>(hung)] = 1;
    fleet.busbw_gbps = [](int round, const std::vector<int>&) { return round == 1 ? 20.0 : 12.0; };
    FleetPlanner planner(4, FleetPlannerOptions{});
    const SimulationRun run = simulate_fleet(planner, fleet);
    std::vector<NodeConclusion> expected(4, NodeConclusion::healthy);
    expected[static_cast<std::size_t>(hung)] = NodeConclusion::faulty;
    CHECK(run.conclusion.nodes == expected);
    // The false alarm's group: round 2, measured, with one earlier group to compare with. It is
    // unjudged, not slow, and the verdict says on how few groups that rested.
    bool seen = false;
    for (const auto& g : planner.groups()) {
      if (g.round != 2 || g.outcome == GroupOutcome::timeout) continue;
      seen = true;
      CHECK(g.outcome == GroupOutcome::ok);
      CHECK(g.speed == SpeedJudgement::unjudged);
      CHECK(g.groups_compared == 2);
    }
    CHECK(seen);
    for (int i = 0; i < 4; ++i) {
      if (i == hung) continue;
      CHECK(run.conclusion.speed[static_cast<std::size_t>(i)].judgement ==
            SpeedJudgement::unjudged);
      CHECK(run.conclusion.speed[static_cast<std::size_t>(i)].groups_compared <= 2);
    }
    CHECK(run.conclusion.speed[static_cast<std::size_t>(hung)].judgement ==
          SpeedJudgement::not_measured);
  }
}

TEST_CASE("fleet simulation: a slow group with only two comparable groups leaves it unjudged") {
  // Four nodes, node 3 at 30 %: round 1 has two groups, {0, 1} at 100 and {2, 3} at 30. No
  // median of two: nobody is a straggler, and the speed basis says why.
  const SimulatedFleet fleet = measured_fleet(4, {3}, 0.3, 0.0);
  const FleetConclusion c = play_measured(fleet);
  CHECK(c.nodes == std::vector<NodeConclusion>(4, NodeConclusion::healthy));
  CHECK(c.rounds_used == 1);
  for (const NodeSpeed& s : c.speed) {
    CHECK(s.judgement == SpeedJudgement::unjudged);
    CHECK(s.groups_compared == 2);
  }
  // Three groups are enough: six nodes, node 4 at 30 % (tests/mpi's six-rank straggler).
  const SimulatedFleet six = measured_fleet(6, {4}, 0.3, 0.05);
  const FleetConclusion c6 = play_measured(six);
  std::vector<NodeConclusion> expected(6, NodeConclusion::healthy);
  expected[4] = NodeConclusion::straggler;
  CHECK(c6.nodes == expected);
  CHECK(c6.speed[4].judgement == SpeedJudgement::slow);
  CHECK(c6.speed[4].groups_compared >= 3);
}

TEST_CASE("fleet simulation: a real slow node is convicted after a second slow group") {
  SECTION("8 nodes, slow in round 1 with a suspect, then twice with proven partners") {
    const SimulatedFleet fleet = measured_fleet(8, {5}, 0.5, 0.05);
    FleetPlanner planner(8, FleetPlannerOptions{});
    const FleetConclusion c = simulate_fleet(planner, fleet).conclusion;
    std::vector<NodeConclusion> expected(8, NodeConclusion::healthy);
    expected[5] = NodeConclusion::straggler;
    CHECK(c.nodes == expected);
    // Round 1's group does not count (its partner was proven only afterwards): two more slow
    // groups with partners proven before, in rounds 2 and 3.
    CHECK(c.rounds_used == 3);
    CHECK(c.speed[5].judgement == SpeedJudgement::slow);
    CHECK(c.speed[5].groups_compared >= 3);
    const auto& node = planner.nodes()[5];
    REQUIRE(node.bad_groups.size() == 3);
    const auto& last = planner.groups()[static_cast<std::size_t>(node.convicted_group)];
    CHECK(last.round == 3);
    for (int m : last.members) {
      if (m != 5)
        CHECK(planner.nodes()[static_cast<std::size_t>(m)].state == FleetPlanner::State::good);
    }
    CHECK(c.reasons[5].find("in round 1") != std::string::npos);
    CHECK(c.reasons[5].find(" groups of 2 nodes") != std::string::npos);
  }
  SECTION("16 nodes, its first figure with a proven partner: measured again") {
    // Node 3 hangs, so node 2's first figure comes from round 2, already with a proven
    // partner. That alone does not convict: round 3 measures it with another proven partner.
    SimulatedFleet fleet = measured_fleet(16, {2}, 0.5, 0.05);
    fleet.hung[3] = 1;
    FleetPlanner planner(16, FleetPlannerOptions{});
    const FleetConclusion c = simulate_fleet(planner, fleet).conclusion;
    std::vector<NodeConclusion> expected(16, NodeConclusion::healthy);
    expected[2] = NodeConclusion::straggler;
    expected[3] = NodeConclusion::faulty;
    CHECK(c.nodes == expected);
    CHECK(c.rounds_used == 3);
    const auto& node = planner.nodes()[2];
    REQUIRE(node.bad_groups.size() == 3);  // the timeout, then slow twice
    int slow_with_proven = 0;
    for (int gi : node.bad_groups) {
      const auto& g = planner.groups()[static_cast<std::size_t>(gi)];
      if (g.outcome != GroupOutcome::slow) continue;
      CHECK(g.groups_compared >= 3);
      for (int m : g.members) {
        if (m != 2 &&
            planner.nodes()[static_cast<std::size_t>(m)].state == FleetPlanner::State::good) {
          ++slow_with_proven;
        }
      }
    }
    CHECK(slow_with_proven == 2);
    CHECK(c.reasons[2].find("in round 2 and ") != std::string::npos);
    CHECK(c.reasons[2].find("in round 3") != std::string::npos);
  }
}

TEST_CASE("fleet simulation: measured speed, one straggler, every position, N = 6..16") {
  // Pairs only (even N): an odd fleet's group of three has no comparable group in round 1.
  for (int n = 6; n <= 16; n += 2) {
    for (int s = 0; s < n; ++s) {
      INFO("n=" << n << " straggler=" << s);
      const SimulatedFleet fleet = measured_fleet(n, {s}, 0.5, 0.08);
      std::vector<NodeConclusion> expected(static_cast<std::size_t>(n), NodeConclusion::healthy);
      expected[static_cast<std::size_t>(s)] = NodeConclusion::straggler;
      const FleetConclusion c = play_measured(fleet);
      CHECK(c.nodes == expected);
      CHECK(c.rounds_used <= fleet_round_bound(n, 2));
    }
  }
  // Healthy fleets with noise up to +-10 %: nobody is slow below 0.8 x the median.
  for (int n = 2; n <= 32; ++n) {
    INFO("healthy n=" << n);
    const FleetConclusion c = play_measured(measured_fleet(n, {}, 1.0, 0.1));
    CHECK(c.nodes ==
          std::vector<NodeConclusion>(static_cast<std::size_t>(n), NodeConclusion::healthy));
  }
}
