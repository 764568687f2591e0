// preflight-bench-fleet-planner: how long the fleet planner takes on a large simulated fleet
// (docs/fleet-planner.md). For each number of faulty nodes (placed at random, fixed seed) it
// plays the planner against a SimulatedFleet and prints one JSON line: rounds used, the bound,
// the planner's milliseconds in all and in its slowest round (next_round() + record(), the
// median of --repeat runs), and whether the faulty set came out exact. Host only, no GPU.
// Exit codes: 0 every scenario exact, 1 otherwise, 2 bad usage.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "fleet/logic/fleet_planner.hpp"

namespace {

using namespace preflight;

struct Options {
  int nodes = 10000;
  int group_size = 2;
  int switches = 0;  // 0: no topology
  unsigned seed = 1;
  int repeat = 3;
  std::vector<int> faulty = {0, 10, 1000, 5000};
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

// One scenario: the JSON line, and whether every run was exact.
bool run_scenario(const Options& o, int k, nlohmann::json& line) {
  std::mt19937 rng(o.seed + static_cast<unsigned>(k));
  SimulatedFleet fleet(o.nodes);
  std::vector<int> order(static_cast<std::size_t>(o.nodes));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (int i = 0; i < k; ++i) fleet.faulty[static_cast<std::size_t>(order[i])] = 1;

  FleetPlannerOptions options;
  options.group_size = o.group_size;
  for (int i = 0; o.switches > 0 && i < o.nodes; ++i) {
    options.switch_of.push_back("leaf" + std::to_string(i % o.switches));
  }
  std::vector<double> totals;
  std::vector<double> worsts;
  bool exact = true;
  FleetConclusion last;
  for (int r = 0; r < o.repeat; ++r) {
    FleetPlanner planner(o.nodes, options);
    const SimulationRun run = simulate_fleet(planner, fleet);
    totals.push_back(std::accumulate(run.round_ms.begin(), run.round_ms.end(), 0.0));
    worsts.push_back(
        run.round_ms.empty() ? 0.0 : *std::max_element(run.round_ms.begin(), run.round_ms.end()));
    for (int i = 0; i < o.nodes; ++i) {
      const bool said_faulty =
          run.conclusion.nodes[static_cast<std::size_t>(i)] == NodeConclusion::faulty;
      if (said_faulty != static_cast<bool>(fleet.faulty[static_cast<std::size_t>(i)])) {
        exact = false;
      }
    }
    last = run.conclusion;
  }
  line = {{"bench", "fleet_planner"},
          {"nodes", o.nodes},
          {"faulty", k},
          {"group_size", o.group_size},
          {"switches", o.switches},
          {"rounds", last.rounds_used},
          {"bound", fleet_round_bound(o.nodes, o.group_size)},
          {"planner_ms_total", std::round(median(totals) * 1000.0) / 1000.0},
          {"planner_ms_worst_round", std::round(median(worsts) * 1000.0) / 1000.0},
          {"repeat", o.repeat},
          {"exact", exact}};
  return exact;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"The fleet planner on a simulated fleet: rounds and planner time per scenario."};
  app.add_option("--nodes", o.nodes, "fleet size")->check(CLI::Range(2, 1000000));
  app.add_option("--group-size", o.group_size, "first-round group size")
      ->check(CLI::Range(2, 1000));
  app.add_option("--switches", o.switches, "spread the nodes over this many switches (0: none)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--seed", o.seed, "seed of the random placement");
  app.add_option("--repeat", o.repeat, "runs per scenario (the median time is printed)")
      ->check(CLI::Range(1, 100));
  app.add_option("--faulty", o.faulty, "numbers of faulty nodes, one scenario each")
      ->delimiter(',');
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  for (int k : o.faulty) {
    if (k < 0 || k > o.nodes) {
      std::fprintf(stderr, "--faulty %d is outside [0, %d]\n", k, o.nodes);
      return 2;
    }
  }
  bool all_exact = true;
  for (int k : o.faulty) {
    nlohmann::json line;
    all_exact = run_scenario(o, k, line) && all_exact;
    std::printf("%s\n", line.dump().c_str());
  }
  return all_exact ? 0 : 1;
}
