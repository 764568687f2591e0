// preflight-bench-fleet-scale: the fleet's scale curve (docs/fleet-planner.md#the-scale-curve).
// For N = 8 .. 4,096 (or --nodes) it plays the real planner and speed judgement against simulated
// fleets (fleet_scale.hpp) and prints a Markdown table: rounds, the bound, wrong calls, ambiguous
// nodes, bad pairs found, the planner's milliseconds and the rounds' budget. Host only, no GPU.
// Exit codes: 0 the bounds hold (rounds <= 3 and no wrong call up to N/8 faulty nodes and for
// bad links), 1 otherwise, 2 bad usage.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <vector>

#include "fleet/logic/fleet_scale.hpp"

int main(int argc, char** argv) {
  using namespace preflight;
  std::vector<int> sizes = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  CLI::App app{
      "preflight-bench-fleet-scale: the fleet planner's rounds and calls from 8 to 4,096 "
      "nodes"};
  app.add_option("--nodes", sizes, "fleet sizes (default 8,16,...,4096)")
      ->delimiter(',')
      ->check(CLI::Range(2, 100000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  bool held = true;
  std::printf(
      "| N | scenario | switches | rounds | bound | wrong | ambiguous | bad pairs | "
      "planner ms | budget s |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (int n : sizes) {
    for (const ScaleScenario& s : scale_scenarios(n)) {
      const ScaleOutcome o = run_scale_scenario(s);
      std::printf("| %d | %s | %s | %d | %d | %d | %d | %d | %.1f | %.0f |\n", n, s.label.c_str(),
                  s.topology ? "16 per switch" : "none", o.rounds, o.bound, o.wrong, o.ambiguous,
                  o.bad_pairs_found, o.planner_ms, o.budget_s);
      const bool bounded = s.faulty <= n / 8 && s.stragglers == 0;
      if (bounded && (o.rounds > 3 || o.wrong > 0)) held = false;
    }
  }
  return held ? 0 : 1;
}
