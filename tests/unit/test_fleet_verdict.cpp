#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "checks/inventory/inventory_findings.hpp"
#include "fleet/logic/fleet_stats.hpp"
#include "fleet/logic/fleet_verdict.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "support/builtin_figures.hpp"

using namespace preflight;
using Json = nlohmann::ordered_json;

namespace {

FleetNode node(int rank, std::string host, std::string verdict = "healthy",
               std::vector<std::string> reasons = {}) {
  FleetNode n;
  n.rank = rank;
  n.host = std::move(host);
  n.verdict = std::move(verdict);
  n.reasons = std::move(reasons);
  n.local.verdict = "pass";
  n.local.figures = {{"gemm_bf16_tflops", 771.2}};
  return n;
}

FleetVerdict sample_fleet_verdict() {
  FleetVerdict v;
  v.tool.version = "0.1.0";
  v.tool.git = "abc";
  v.started_at = "2026-11-22T03:00:00Z";
  v.duration_s = 12.34567;
  v.argv = {"preflight", "fleet"};
  v.transport = "nccl";
  v.local_profile = "quick";
  v.round_bound = 6;
  v.timeout_s = 600;
  v.group_timeout_s = 30;
  // Out of rank order on purpose: finalize sorts.
  v.nodes = {node(7, "node-b", "faulty", {"round 1: all-gather timed out"}), node(0, "node-0"),
             node(3, "node-a", "faulty", {"local checks: fail"}),
             node(1, "node-c", "straggler", {"gemm_tflops 6.2% below the fleet median"}),
             node(2, "node-2")};
  FleetRound r;
  r.index = 1;
  r.groups = {{{0, 1}, "ok", 180.5, 0.4, "", "unjudged", 2, 170.25},
              {{3, 7}, "timeout", 0, 30.0, "no answer"}};
  v.rounds.push_back(r);
  v.nodes[1].round_speed = "unjudged";  // rank 0 (finalize sorts)
  v.nodes[1].groups_compared = 2;
  finalize_fleet_verdict(v);
  return v;
}

std::vector<std::string> keys_of(const Json& j) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  return keys;
}

}  // namespace

TEST_CASE("fleet: a healthy fleet passes with exit 0 and nothing to exclude") {
  FleetVerdict v;
  v.nodes = {node(0, "a"), node(1, "b"), node(2, "c")};
  finalize_fleet_verdict(v);
  CHECK(v.verdict == "pass");
  CHECK(v.exit_code == 0);
  CHECK(v.reason.empty());
  CHECK(v.exclude.empty());
  CHECK(v.faulty.empty());
  CHECK(v.stragglers.empty());
  CHECK(v.ambiguous.empty());
  CHECK(v.notes.empty());
}

TEST_CASE("fleet: faulty and straggler nodes are listed, excluded and named in the reason") {
  const FleetVerdict v = sample_fleet_verdict();
  REQUIRE(v.nodes.size() == 5);
  for (std::size_t i = 1; i < v.nodes.size(); ++i) CHECK(v.nodes[i - 1].rank < v.nodes[i].rank);
  REQUIRE(v.faulty.size() == 2);
  CHECK(v.faulty[0].rank == 3);
  CHECK(v.faulty[0].host == "node-a");
  CHECK(v.faulty[0].reason == "local checks: fail");
  CHECK(v.faulty[1].rank == 7);
  REQUIRE(v.stragglers.size() == 1);
  CHECK(v.stragglers[0].rank == 1);
  CHECK(v.ambiguous.empty());
  CHECK(v.verdict == "fail");
  CHECK(v.exit_code == 1);
  CHECK(v.exclude == "node-c,node-a,node-b");  // rank order
  CHECK(v.reason ==
        "2 faulty: node-a (rank 3), node-b (rank 7); 1 straggler: node-c (rank 1, gemm_tflops "
        "6.2% below the fleet median)");
}

TEST_CASE("fleet: exclude names a host shared by several ranks once, ambiguous ones included") {
  FleetVerdict v;
  v.nodes = {node(4, "h2", "ambiguous"), node(0, "h1"), node(1, "h1", "faulty"),
             node(2, "h2", "faulty"), node(3, "h1", "straggler")};
  finalize_fleet_verdict(v);
  CHECK(v.exclude == "h1,h2");
  REQUIRE(v.ambiguous.size() == 1);
  CHECK(v.ambiguous[0].rank == 4);
  CHECK(v.ambiguous[0].reason == "ambiguous");  // no reason given anywhere: the class
  CHECK(v.exit_code == 1);
  CHECK(v.reason.find("1 ambiguous: h2 (rank 4)") != std::string::npos);
  CHECK(v.reason.find("1 straggler: h1 (rank 3)") != std::string::npos);

  SECTION("finalize is idempotent") {
    const std::string first = fleet_verdict_to_json_text(v);
    finalize_fleet_verdict(v);
    CHECK(fleet_verdict_to_json_text(v) == first);
  }
}

TEST_CASE("fleet: reasons fall back on the node's own verdict; long lists are counted") {
  FleetVerdict v;
  for (int r = 0; r < 6; ++r) v.nodes.push_back(node(r, "n" + std::to_string(r), "faulty"));
  v.nodes[0].local.verdict = "fail";
  v.nodes[0].local.reason = "inventory: gpu3 ECC_UNCORRECTABLE_VOLATILE 2 errors";
  v.injected_faults = {"node-down@rank=1"};
  finalize_fleet_verdict(v);
  CHECK(v.faulty[0].reason ==
        "local verdict fail: inventory: gpu3 ECC_UNCORRECTABLE_VOLATILE 2 "
        "errors");
  CHECK(v.reason == "injected fault: 6 faulty: n0 (rank 0), n1 (rank 1), n2 (rank 2), +3 more");
}

TEST_CASE("fleet: unknown node verdicts, bad host names and bad pairs fail safe") {
  FleetVerdict v;
  v.nodes = {node(0, "ok-0"), node(1, "bad,host", "faulty"), node(2, "", "straggler"),
             node(3, "x", "weird")};
  finalize_fleet_verdict(v);
  CHECK(v.nodes[3].verdict == "ambiguous");
  CHECK(v.nodes[3].reasons.back().find("weird") != std::string::npos);
  CHECK(v.exclude == "x");  // a comma would name two nodes; no host, nothing to name
  CHECK(v.notes.size() == 2);
  CHECK(v.reason.find("1 straggler: rank 2") != std::string::npos);
  finalize_fleet_verdict(v);
  CHECK(v.notes.size() == 2);

  FleetVerdict pairs;
  pairs.nodes = {node(0, "a"), node(1, "b"), node(2, "c")};
  pairs.bad_pairs.push_back({{0, 2}, {"a", "c"}, "fails only together"});
  finalize_fleet_verdict(pairs);
  CHECK(pairs.verdict == "fail");
  CHECK(pairs.exit_code == 1);
  CHECK(pairs.exclude.empty());
  CHECK(pairs.reason == "1 bad pair: a (rank 0) - c (rank 2)");

  FleetVerdict empty;
  finalize_fleet_verdict(empty);
  CHECK(empty.verdict == "fail");
  CHECK(empty.exit_code == 3);

  FleetVerdict broken = sample_fleet_verdict();
  mark_fleet_internal_error(broken, "round 2 could not be planned");
  CHECK(broken.exit_code == 3);
  CHECK(broken.verdict == "fail");
  CHECK(broken.reason.rfind("internal error: round 2 could not be planned; 2 faulty", 0) == 0);
  CHECK(broken.notes.back() == "internal error: round 2 could not be planned");

  // A launch that ate the time judges no node: nothing to exclude, exit 3, and finalizing it
  // again keeps it a tool problem.
  FleetVerdict late = sample_fleet_verdict();
  late.injected_faults = {"launch-slow:12@node=1"};
  mark_fleet_launch_problem(late, "launch took 12.0 s of the --timeout 20.0 s");
  CHECK(late.exit_code == 3);
  CHECK(late.verdict == "fail");
  CHECK(late.nodes.empty());
  CHECK(late.faulty.empty());
  CHECK(late.exclude.empty());
  CHECK(late.reason == "injected fault: launch took 12.0 s of the --timeout 20.0 s");
  finalize_fleet_verdict(late);
  CHECK(late.exit_code == 3);
  CHECK(late.exclude.empty());
}

TEST_CASE("fleet json: required fields in order, numbers as numbers") {
  const Json j = Json::parse(fleet_verdict_to_json_text(sample_fleet_verdict()));
  const std::vector<std::string> expected = {"schema",          "tool",       "started_at",
                                             "duration_s",      "argv",       "transport",
                                             "local_profile",   "group_size", "round_bound",
                                             "bound_reached",   "timeout_s",  "group_timeout_s",
                                             "local_timeout_s", "launch_s",   "max_exclude_share",
                                             "nodes",           "rounds",     "faulty",
                                             "stragglers",      "ambiguous",  "bad_pairs",
                                             "exclude",         "systemic",   "injected_faults",
                                             "notes",           "verdict",    "reason",
                                             "exit_code"};
  CHECK(keys_of(j) == expected);
  CHECK(j["schema"] == "preflight.fleet/1");
  CHECK(keys_of(j["tool"]) == std::vector<std::string>{"name", "version", "git"});
  CHECK(j["duration_s"].is_number_float());
  CHECK(j["duration_s"].get<double>() == Approx(12.346));
  CHECK(j["group_size"].is_number_integer());
  CHECK(j["round_bound"] == 6);
  CHECK(j["bound_reached"] == false);
  CHECK(j["timeout_s"].is_number());
  CHECK(j["exit_code"] == 1);
  CHECK(j["verdict"] == "fail");

  const Json& n = j["nodes"][1];
  CHECK(keys_of(n) == std::vector<std::string>{"rank", "host", "verdict", "reasons", "local",
                                               "round_speed", "groups_compared"});
  // The speed basis: what the rounds' judgement of the node rested on.
  CHECK(n["round_speed"] == "not_measured");
  CHECK(n["groups_compared"] == 0);
  CHECK(j["nodes"][0]["round_speed"] == "unjudged");
  CHECK(j["nodes"][0]["groups_compared"] == 2);
  CHECK(n["rank"] == 1);
  CHECK(n["verdict"] == "straggler");
  CHECK(keys_of(n["local"]) == std::vector<std::string>{"verdict", "exit_code", "reason",
                                                        "duration_s", "findings", "figures"});
  CHECK(n["local"]["figures"]["gemm_bf16_tflops"].is_number());

  const Json& g = j["rounds"][0]["groups"][0];
  CHECK(j["rounds"][0]["index"] == 1);
  CHECK(keys_of(g) == std::vector<std::string>{"ranks", "reference", "outcome", "busbw_gbps",
                                               "duration_s", "detail", "speed", "groups_compared",
                                               "median_gbps", "gap", "noise", "iteration_se",
                                               "drill_unslowed_gbps"});
  CHECK(g["drill_unslowed_gbps"].is_null());  // no drill paced it
  CHECK(g["speed"] == "unjudged");
  CHECK(g["groups_compared"].is_number_integer());
  CHECK(g["groups_compared"] == 2);
  CHECK(g["median_gbps"].get<double>() == Approx(170.25));
  CHECK(j["rounds"][0]["groups"][1]["speed"] == "not_measured");
  CHECK(j["rounds"][0]["groups"][1]["groups_compared"] == 0);
  CHECK(g["ranks"] == Json::array({0, 1}));
  CHECK(g["busbw_gbps"].is_number());
  CHECK(g["busbw_gbps"].get<double>() == Approx(180.5));
  CHECK(keys_of(j["faulty"][0]) == std::vector<std::string>{"rank", "host", "reason"});
  CHECK(j["exclude"] == "node-c,node-a,node-b");
  CHECK(j["ambiguous"].is_array());
  CHECK(j["bad_pairs"].is_array());
  CHECK(j["injected_faults"].is_array());
  CHECK(j["notes"].is_array());
}

TEST_CASE("fleet json: a non-finite figure is null and a hostile host name round-trips") {
  FleetVerdict v = sample_fleet_verdict();
  const std::string hostile = "evil\"host\n\t\\ \xc3\xbc\xe2\x9c\x93 \xf0\x9f\x94\xa5";
  v.nodes[2].host = hostile;  // rank 2, healthy
  v.nodes[3].host = hostile;  // rank 3, faulty
  v.rounds[0].groups[0].busbw_gbps = std::numeric_limits<double>::quiet_NaN();
  finalize_fleet_verdict(v);
  const std::string text = fleet_verdict_to_json_text(v);
  CHECK(text.back() == '\n');
  const Json j = Json::parse(text);
  CHECK(j["nodes"][2]["host"] == hostile);
  CHECK(j["faulty"][0]["host"] == hostile);
  CHECK(j["exclude"] == "node-c,node-b");
  CHECK(j["notes"].size() == 1);
  CHECK(j["rounds"][0]["groups"][0]["busbw_gbps"].is_null());
  // The reason stays one drain-safe line.
  const std::string reason = j["reason"];
  CHECK(reason.find('\n') == std::string::npos);
  CHECK(reason.find('"') == std::string::npos);

  const std::string table = fleet_verdict_to_text(v);
  CHECK(table.find("evil\"host??") != std::string::npos);  // no newline or tab in a row
}

TEST_CASE("fleet text: non-healthy nodes, rounds, exclude and the verdict line") {
  const FleetVerdict v = sample_fleet_verdict();
  const std::string t = fleet_verdict_to_text(v);
  CHECK(t.find("Fleet verdict: FAIL (exit 1): " + v.reason + "\n") != std::string::npos);
  CHECK(t.find("Exclude: node-c,node-a,node-b") != std::string::npos);
  CHECK(t.find("round 1: 2 groups: 1 ok, 1 timeout") != std::string::npos);
  CHECK(t.find("STRAGGLER") != std::string::npos);
  CHECK(t.find("node-0") == std::string::npos);  // healthy nodes have no line
  CHECK(t.find('\033') == std::string::npos);
  CHECK(fleet_verdict_to_text(v, TextStyle{true}).find('\033') != std::string::npos);

  FleetVerdict ok;
  ok.nodes = {node(0, "a"), node(1, "b")};
  finalize_fleet_verdict(ok);
  const std::string ok_text = fleet_verdict_to_text(ok);
  CHECK(ok_text.find("All 2 nodes healthy.") != std::string::npos);
  CHECK(ok_text.find("Exclude: (none)") != std::string::npos);
  CHECK(ok_text.find("Fleet verdict: PASS (exit 0)\n") != std::string::npos);
}

TEST_CASE("local summary: condensed from a node verdict") {
  Verdict v;
  v.duration_s = 41.5;
  v.findings.push_back(
      make_finding(runner_findings(), "RUN_INCOMPLETE", "node", "1 check not run"));
  CheckResult gemm;
  gemm.name = "gemm";
  gemm.add_metric("gpu0", "bf16.tflops_median", 771.2, "TFLOP/s");
  gemm.add_metric("gpu0", "bf16.tflops_min", 700, "TFLOP/s");
  gemm.add_metric("gpu1", "bf16.tflops_median", 760.5, "TFLOP/s");
  gemm.add_metric("gpu10", "bf16.tflops_median", 765, "TFLOP/s");
  gemm.add_metric("gpu0", "fp64.tflops_median", 60, "TFLOP/s");
  gemm.add_metric("gpu1", "fp64.tflops_median", std::nan(""), "TFLOP/s");
  gemm.add_metric("", "bf16.node_median_tflops", 765, "TFLOP/s");
  gemm.findings.push_back(make_finding(inventory_findings(), "TEMPERATURE_HIGH", "gpu1", "hot"));
  gemm.findings.push_back(
      make_finding(inventory_findings(), "NO_GPU_EXPECTED", "node", "info only"));
  CheckResult pcie;
  pcie.name = "pcie";
  pcie.add_metric("gpu0", "h2d_gbps", 53.1, "GB/s");
  pcie.add_metric("gpu1", "h2d_gbps", 51, "GB/s");
  pcie.add_metric("gpu0", "h2d_all_gbps", 20, "GB/s");
  pcie.add_metric("", "all.h2d_gbps", 100, "GB/s");
  pcie.add_metric("gpu0", "d2h_gbps", 50, "GB/s");
  pcie.add_metric("gpu0", "bidir_gbps", 90, "GB/s");
  CheckResult hbm;
  hbm.name = "hbm";
  hbm.add_metric("gpu0", "hbm_copy_gbps", 1405, "GB/s");
  hbm.add_metric("gpu0", "hbm_traffic_gbps", 2810, "GB/s");
  hbm.add_metric("gpu1", "hbm_traffic_gbps", 2790, "GB/s");
  CheckResult inventory;
  inventory.name = "inventory";
  inventory.add_metric("gpu0", "h2d_gbps", 1, "GB/s");  // another check's key: not a pcie figure
  v.checks = {inventory, gemm, pcie, hbm};
  aggregate(v, false);

  const LocalSummary s = summarize_local(v, test::builtin_figures());
  CHECK(s.verdict == "fail");
  CHECK(s.exit_code == 1);
  CHECK(s.reason == v.reason);
  CHECK(s.duration_s == 41.5);
  const std::vector<std::string> findings = {"RUN_INCOMPLETE@node", "TEMPERATURE_HIGH@gpu1"};
  CHECK(s.findings == findings);
  const std::vector<std::pair<std::string, double>> figures = {{"gemm_bf16_tflops", 760.5},
                                                               {"gemm_fp64_tflops", 60},
                                                               {"pcie_h2d_gbps", 51},
                                                               {"pcie_d2h_gbps", 50},
                                                               {"hbm_gbps", 2790}};
  CHECK(s.figures == figures);
}

TEST_CASE("local summary: JSON round trip") {
  LocalSummary s;
  s.verdict = "warn";
  s.exit_code = 0;
  s.reason = "gemm: gpu1 TEMPERATURE_HIGH \"hot\"\n\xc3\xbc";
  s.duration_s = 3.25;
  s.findings = {"TEMPERATURE_HIGH@gpu1"};
  s.figures = {{"gemm_bf16_tflops", 771.2}, {"hbm_gbps", 2810}};
  const Json j = local_summary_to_json(s);
  CHECK(j["figures"]["hbm_gbps"].is_number());
  CHECK(j["exit_code"].is_number_integer());
  const LocalSummary back = local_summary_from_json_text(j.dump());
  CHECK(back.verdict == s.verdict);
  CHECK(back.exit_code == s.exit_code);
  CHECK(back.reason == s.reason);
  CHECK(back.duration_s == s.duration_s);
  CHECK(back.findings == s.findings);
  CHECK(back.figures == s.figures);

  LocalSummary missing;
  missing.verdict = "missing";
  missing.figures = {{"gemm_bf16_tflops", std::nan("")}};
  const LocalSummary m = local_summary_from_json(local_summary_to_json(missing));
  CHECK(m.verdict == "missing");
  CHECK(m.figures.empty());  // null: not measured

  // Unknown keys from a newer node are ignored; optional fields may be absent.
  const LocalSummary minimal =
      local_summary_from_json_text(R"({"verdict":"pass","exit_code":0,"extra":[1]})");
  CHECK(minimal.verdict == "pass");
  CHECK(minimal.findings.empty());
}

TEST_CASE("local summary: malformed input is InvalidInput") {
  const char* bad[] = {
      "",
      "not json",
      "[1,2]",
      R"({"exit_code":0})",
      R"({"verdict":1,"exit_code":0})",
      R"({"verdict":"great","exit_code":0})",
      R"({"verdict":"pass"})",
      R"({"verdict":"pass","exit_code":"0"})",
      R"({"verdict":"pass","exit_code":0.5})",
      R"({"verdict":"pass","exit_code":-1})",
      R"({"verdict":"pass","exit_code":0,"reason":7})",
      R"({"verdict":"pass","exit_code":0,"duration_s":"1"})",
      R"({"verdict":"pass","exit_code":0,"duration_s":-1})",
      R"({"verdict":"pass","exit_code":0,"findings":"X@gpu0"})",
      R"({"verdict":"pass","exit_code":0,"findings":[1]})",
      R"({"verdict":"pass","exit_code":0,"figures":[1]})",
      R"({"verdict":"pass","exit_code":0,"figures":{"hbm_gbps":"2810"}})",
      R"({"verdict":"pass","exit_code":0,"figures":{"hbm_gbps":1e999}})",
  };
  for (const char* text : bad) {
    INFO(text);
    CHECK_THROWS_AS(local_summary_from_json_text(text), InvalidInput);
  }
}

TEST_CASE("figure stragglers: an identical fleet names none") {
  const std::vector<std::vector<std::pair<std::string, double>>> fleet(
      8, {{"gemm_bf16_tflops", 771.2}, {"hbm_gbps", 2810}});
  CHECK(figure_stragglers(fleet).empty());
}

TEST_CASE("figure stragglers: one node 6% slow is named") {
  std::vector<std::vector<std::pair<std::string, double>>> fleet;
  for (int i = 0; i < 8; ++i) {
    fleet.push_back({{"gemm_bf16_tflops", 771.2 + 0.5 * (i % 3)}, {"hbm_gbps", 2810.0 + i}});
  }
  fleet[5][0].second = 771.2 * 0.94;
  const auto s = figure_stragglers(fleet);
  REQUIRE(s.size() == 1);
  CHECK(s[0].node == 5);
  CHECK(s[0].figure == "gemm_bf16_tflops");
  CHECK(s[0].median == Approx(771.45));
  CHECK(s[0].percent_below == Approx(6.0).margin(0.1));
  CHECK(describe_straggler(s[0]).rfind("gemm_bf16_tflops 6.", 0) == 0);
}

TEST_CASE("figure stragglers: 40% of the fleet slow are still named") {
  std::vector<std::vector<std::pair<std::string, double>>> fleet;
  for (int i = 0; i < 10; ++i) fleet.push_back({{"pcie_h2d_gbps", 53.0 + 0.1 * (i % 2)}});
  for (int i : {1, 4, 6, 9}) fleet[i][0].second = 40.0;
  const auto s = figure_stragglers(fleet);
  REQUIRE(s.size() == 4);
  CHECK(s[0].node == 1);
  CHECK(s[3].node == 9);
  for (const auto& f : s) CHECK(f.median == Approx(53.0).margin(0.1));
}

TEST_CASE("figure stragglers: too few nodes or too much noise name none") {
  const std::vector<std::vector<std::pair<std::string, double>>> two = {{{"hbm_gbps", 2810}},
                                                                        {{"hbm_gbps", 1000}}};
  CHECK(figure_stragglers(two).empty());
  // Three nodes, but only two report the figure.
  const std::vector<std::vector<std::pair<std::string, double>>> sparse = {
      {{"hbm_gbps", 2810}}, {{"hbm_gbps", 1000}}, {{"pcie_h2d_gbps", 50}}};
  CHECK(figure_stragglers(sparse).empty());

  // A spread of +-15%: the lowest, 13% below the median, is within the fleet's own noise.
  std::vector<std::vector<std::pair<std::string, double>>> noisy;
  for (double v : {100.0, 90.0, 110.0, 85.0, 115.0, 95.0, 105.0, 93.0}) {
    noisy.push_back({{"gemm_fp64_tflops", v}});
  }
  CHECK(figure_stragglers(noisy).empty());
}

TEST_CASE("figure stragglers: NaN is not measured; duplicates count low; sorted by node") {
  std::vector<std::vector<std::pair<std::string, double>>> fleet(
      5, {{"hbm_gbps", 2800}, {"gemm_bf16_tflops", 770}});
  fleet[0].push_back({"hbm_gbps", 2000});  // the lower of a node's two values counts
  fleet[0][1].second = 600;
  fleet[3][0].second = std::nan("");
  const auto s = figure_stragglers(fleet);
  REQUIRE(s.size() == 2);
  CHECK(s[0].node == 0);
  CHECK(s[0].figure == "gemm_bf16_tflops");
  CHECK(s[1].figure == "hbm_gbps");
  CHECK(s[1].value == 2000);
  const auto floor25 = figure_stragglers(fleet, 25.0);  // gemm 22% below: under the floor
  REQUIRE(floor25.size() == 1);
  CHECK(floor25[0].figure == "hbm_gbps");
}

TEST_CASE("figure stragglers: the worked example of docs/fleet-verdict.md") {
  std::vector<std::vector<std::pair<std::string, double>>> fleet;
  for (double v : {771.0, 772.4, 770.1, 723.9, 771.8, 769.5, 772.0, 770.6}) {
    fleet.push_back({{"gemm_bf16_tflops", v}});
  }
  const auto s = figure_stragglers(fleet);
  REQUIRE(s.size() == 1);
  CHECK(s[0].node == 3);
  CHECK(s[0].median == Approx(770.8));
  CHECK(describe_straggler(s[0]) ==
        "gemm_bf16_tflops 6.1% below the fleet median (723.9 vs 770.8)");
  // Three of eight slow: the median barely moves and all three are named.
  fleet[2][0].second = 720.1;
  fleet[6][0].second = 722.0;
  const auto three = figure_stragglers(fleet);
  REQUIRE(three.size() == 3);
  CHECK(three[0].median == Approx(770.05));
}
