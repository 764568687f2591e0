// The fleet's scale curve (docs/fleet-planner.md#the-scale-curve): the bounds its table shows,
// held for 8 to 4,096 nodes with the real planner and speed judgement.
#include <catch2/catch.hpp>
#include <map>

#include "fleet/logic/fleet_planner.hpp"
#include "fleet/logic/fleet_scale.hpp"

using namespace preflight;

TEST_CASE("fleet scale: up to N/8 faulty, bad links and noisy stragglers, 3 rounds at most") {
  std::map<std::string, double> budget_at_8;
  for (int n : {8, 64, 512, 4096}) {
    for (const ScaleScenario& s : scale_scenarios(n)) {
      INFO(n << " nodes, " << s.label << (s.topology ? ", switches" : ""));
      const ScaleOutcome o = run_scale_scenario(s);
      CHECK(o.rounds <= o.bound);
      CHECK(o.wrong == 0);
      if (s.faulty > n / 8) continue;  // N/2 faulty: within the bound, no wrong call
      CHECK(o.rounds <= 3);
      CHECK(o.ambiguous == 0);
      CHECK(o.bad_pairs_found == s.bad_links);
      // Flat in N: the rounds, and so the time the rounds may take, do not grow with the fleet.
      const std::string key = s.label + (s.topology ? " switches" : "");
      if (n == 8) {
        budget_at_8[key] = o.budget_s;
      } else if (budget_at_8.count(key) > 0) {
        CHECK(o.budget_s <= budget_at_8[key] + 68.0);
      }
    }
  }
}

TEST_CASE("fleet scale: the scenarios of one size") {
  const auto s = scale_scenarios(4096);
  REQUIRE(s.size() == 14);  // 7 scenarios, without and with switches
  CHECK(s[0].label == "0 faulty");
  CHECK(s[4].faulty == 64);    // N/64
  CHECK(s[6].faulty == 512);   // N/8
  CHECK(s[8].faulty == 2048);  // N/2
  CHECK(s[10].bad_links == 64);
  CHECK(s[12].stragglers == 205);  // 5%
  CHECK(s[13].topology);
  // Below 128 nodes N/64 is one node: the "1 faulty" row covers it.
  CHECK(scale_scenarios(64).size() == 12);
}
