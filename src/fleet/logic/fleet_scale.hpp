#pragma once
// The fleet's scale curve (docs/fleet-planner.md#the-scale-curve): the real planner and speed
// judgement played against simulated fleets of 8 to 4,096 nodes with faulty nodes, bad links and
// noisy stragglers, counting rounds, wrong calls and ambiguous nodes. preflight-bench-fleet-scale
// prints the table; a unit test holds its bounds. Pure: no MPI, no clock but the planner's own.
#include <string>
#include <vector>

namespace preflight {

struct ScaleScenario {
  int nodes = 8;
  int faulty = 0;      // nodes whose groups fail
  int bad_links = 0;   // pairs of healthy nodes whose shared groups fail
  int stragglers = 0;  // nodes at straggler_pace; every group's speed then measured with noise
  double straggler_pace = 0.5;
  double noise = 0.1;     // healthy groups' bus bandwidth scatters uniformly by +-noise
  bool topology = false;  // nodes on switches of 16; round 1 crosses them
  unsigned seed = 1;
  std::string label;  // e.g. "N/8 faulty"
};

struct ScaleOutcome {
  int rounds = 0;
  int bound = 0;
  int wrong = 0;      // a definite call that is not the truth (healthy called faulty, ...)
  int ambiguous = 0;  // nodes the rounds could not settle
  int bad_pairs_found = 0;
  double planner_ms = 0;  // next_round() + record(), all rounds
  // The rounds' worst-case time by the fleet's own budget: rounds x (group timeout + report
  // slack), NCCL's default group timeout (60 s). Not a measurement: what --timeout must hold.
  double budget_s = 0;
};

ScaleOutcome run_scale_scenario(const ScaleScenario& scenario);

// The table's scenarios for one fleet size: 0 and 1 faulty, N/64, N/8 and N/2 faulty, N/64 bad
// links, 5% stragglers at half speed among nodes scattering by +-10%; each without and with
// switches.
std::vector<ScaleScenario> scale_scenarios(int nodes);

}  // namespace preflight
