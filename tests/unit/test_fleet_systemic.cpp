// The guard against mass exclusion (docs/fleet.md#systemic-failures): many nodes failing the
// same way are a common cause to find, not nodes to exclude; nodes with faults of their own
// are still excluded apart.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fleet/logic/fleet_systemic.hpp"
#include "fleet/logic/fleet_verdict.hpp"

using namespace preflight;

namespace {

FleetNode healthy(int rank) {
  FleetNode n;
  n.rank = rank;
  n.host = "n" + std::to_string(rank);
  n.local.verdict = "pass";
  return n;
}

// Failed its local checks with these findings ("CODE@entity").
FleetNode local_failure(int rank, std::vector<std::string> findings) {
  FleetNode n = healthy(rank);
  n.verdict = "faulty";
  n.local.verdict = "fail";
  n.local.findings = std::move(findings);
  n.reasons = {"local checks fail"};
  return n;
}

FleetGroupRecord group(std::vector<int> ranks, std::string outcome) {
  FleetGroupRecord g;
  g.ranks = std::move(ranks);
  g.outcome = std::move(outcome);
  return g;
}

FleetVerdict fleet(int size) {
  FleetVerdict v;
  for (int r = 0; r < size; ++r) v.nodes.push_back(healthy(r));
  return v;
}

}  // namespace

TEST_CASE("fleet systemic: what a node failed by") {
  FleetNode n = local_failure(1, {"GEMM_CORRUPT@gpu0", "GEMM_CORRUPT@gpu1", "ECC_DBE@gpu1"});
  CHECK(node_causes(n, {}) == std::vector<std::string>{"GEMM_CORRUPT", "ECC_DBE"});
  n.local.findings.clear();
  CHECK(node_causes(n, {}) == std::vector<std::string>{"local fail"});
  n.local.verdict = "missing";
  CHECK(node_causes(n, {}) == std::vector<std::string>{"no local result"});

  FleetRound round;
  round.index = 1;
  round.groups = {group({0, 1}, "timeout"), group({2, 3}, "ok"), group({1, 4}, "corrupt")};
  FleetNode convicted = healthy(1);
  convicted.verdict = "faulty";
  CHECK(node_causes(convicted, {round}) ==
        std::vector<std::string>{"all-gather timeout", "all-gather corrupt"});
  FleetNode slow = healthy(2);
  slow.verdict = "straggler";
  CHECK(node_causes(slow, {round}) == std::vector<std::string>{"straggler"});
  // A healthy partner of a failed group failed by nothing.
  CHECK(node_causes(healthy(0), {round}).empty());
}

TEST_CASE("fleet systemic: more than 20% failing alike is exit 3 with nothing excluded") {
  FleetVerdict v = fleet(10);
  for (int r : {2, 5, 8}) v.nodes[r] = local_failure(r, {"DISCOVERY_TIMEOUT@node"});
  finalize_fleet_verdict(v);
  REQUIRE(v.systemic.size() == 1);
  CHECK(v.systemic[0].cause == "DISCOVERY_TIMEOUT");
  CHECK(v.systemic[0].nodes == 3);
  CHECK(v.systemic[0].share == Approx(0.3));
  CHECK(v.exit_code == 3);
  CHECK(v.verdict == "fail");
  CHECK(v.exclude.empty());
  // Still listed as the rounds saw them: the operator sees which nodes.
  CHECK(v.faulty.size() == 3);
  CHECK(v.reason ==
        "systemic: 3 of 10 nodes (30%) failed by DISCOVERY_TIMEOUT, over the 20% limit: a common "
        "cause (environment, driver, thresholds, time), not excluded");
  // Idempotent.
  const std::string reason = v.reason;
  finalize_fleet_verdict(v);
  CHECK(v.reason == reason);
  CHECK(v.systemic.size() == 1);
  const auto j = nlohmann::json::parse(fleet_verdict_to_json_text(v));
  CHECK(j.at("systemic").at(0).at("cause") == "DISCOVERY_TIMEOUT");
  CHECK(j.at("systemic").at(0).at("nodes") == 3);
  CHECK(j.at("max_exclude_share") == 0.2);
  CHECK_THAT(fleet_verdict_to_text(v), Catch::Contains("Systemic: 3 of 10 nodes failed by "
                                                       "DISCOVERY_TIMEOUT"));
}

TEST_CASE("fleet systemic: a node with a fault of its own is still excluded") {
  FleetVerdict v = fleet(10);
  for (int r : {1, 2, 3, 4}) v.nodes[r] = local_failure(r, {"CHECK_TIMEOUT@gpu0"});
  v.nodes[7] = local_failure(7, {"GEMM_CORRUPT@gpu3"});
  finalize_fleet_verdict(v);
  CHECK(v.exit_code == 3);
  CHECK(v.exclude == "n7");
  CHECK_THAT(v.reason, Catch::StartsWith("systemic: 4 of 10 nodes (40%) failed by CHECK_TIMEOUT") &&
                           Catch::EndsWith("not excluded; 1 other excluded: n7 (rank 7)"));
  // A node that failed by the common cause and by another is not told apart.
  v.nodes[3].local.findings.push_back("GEMM_CORRUPT@gpu1");
  finalize_fleet_verdict(v);
  CHECK(v.exclude == "n7");
}

TEST_CASE("fleet systemic: below the share, or fewer than three nodes, the nodes are excluded") {
  SECTION("two of four failing alike may be two bad nodes") {
    FleetVerdict v = fleet(4);
    for (int r : {1, 3}) v.nodes[r] = local_failure(r, {"ECC_DBE@gpu0"});
    finalize_fleet_verdict(v);
    CHECK(v.systemic.empty());
    CHECK(v.exit_code == 1);
    CHECK(v.exclude == "n1,n3");
  }
  SECTION("three of sixteen is 19%") {
    FleetVerdict v = fleet(16);
    for (int r : {1, 5, 9}) v.nodes[r] = local_failure(r, {"ECC_DBE@gpu0"});
    finalize_fleet_verdict(v);
    CHECK(v.systemic.empty());
    CHECK(v.exit_code == 1);
    CHECK(v.exclude == "n1,n5,n9");
  }
  SECTION("--max-exclude-share 1.0 lifts the guard") {
    FleetVerdict v = fleet(6);
    for (int r = 0; r < 6; ++r) v.nodes[r] = local_failure(r, {"DISCOVERY_TIMEOUT@node"});
    v.max_exclude_share = 1.0;
    finalize_fleet_verdict(v);
    CHECK(v.systemic.empty());
    CHECK(v.exit_code == 1);
    CHECK(v.exclude == "n0,n1,n2,n3,n4,n5");
  }
}

TEST_CASE("fleet systemic: the rounds' causes and the stragglers count too") {
  SECTION("half the fleet timing out in the rounds") {
    FleetVerdict v = fleet(8);
    FleetRound round;
    round.index = 1;
    for (int r = 0; r < 8; r += 2) {
      round.groups.push_back(group({r, r + 1}, r < 4 ? "timeout" : "ok"));
    }
    v.rounds = {round};
    for (int r : {0, 1, 2, 3}) v.nodes[r].verdict = "faulty";
    finalize_fleet_verdict(v);
    REQUIRE(v.systemic.size() == 1);
    CHECK(v.systemic[0].cause == "all-gather timeout");
    CHECK(v.exit_code == 3);
    CHECK(v.exclude.empty());
  }
  SECTION("a third of the fleet called slow is noise or a shared cause, not three slow nodes") {
    FleetVerdict v = fleet(9);
    for (int r : {0, 4, 8}) v.nodes[r].verdict = "straggler";
    v.injected_faults = {"allgather-slow:0.5@node=4"};
    finalize_fleet_verdict(v);
    REQUIRE(v.systemic.size() == 1);
    CHECK(v.systemic[0].cause == "straggler");
    CHECK(v.exit_code == 3);
    CHECK_THAT(v.reason, Catch::StartsWith("injected fault: systemic: 3 of 9 nodes (33%)"));
  }
}
