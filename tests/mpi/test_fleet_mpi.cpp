// `preflight fleet --transport host` for real under mpirun, several ranks on this machine (each
// rank is one node): the planner, the rounds, the deadlines, the attribution and the verdict,
// with the all-gathers done by MPI on the CPUs. Each test asserts that the verdict names
// exactly the injected nodes.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

struct FleetRun {
  RunResult process;
  json verdict;
};

// Runs an N-rank fleet with a quick local phase (inventory only, no GPU expected; with
// `profile_checks` the whole quick profile) and returns the exit status and rank 0's verdict.
FleetRun run_fleet(int ranks, const std::vector<std::string>& extra, double timeout_s = 120,
                   bool profile_checks = false) {
  TempDir dir;
  std::vector<std::string> argv{MPIEXEC_BINARY,
                                "--allow-run-as-root",
                                "--oversubscribe",
                                "-np",
                                std::to_string(ranks),
                                preflight_binary(),
                                "fleet",
                                "--transport",
                                "host",
                                "--expect-gpus",
                                "0",
                                "--json",
                                dir.file("fleet.json")};
  if (!profile_checks) argv.insert(argv.end(), {"--checks", "inventory"});
  // Ranks share two cores here: bandwidth is noisy, so only a clear slowdown counts as slow
  // unless the test sets its own factor.
  if (std::find(extra.begin(), extra.end(), "--slow-factor") == extra.end()) {
    argv.insert(argv.end(), {"--slow-factor", "0.3"});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunOptions options = no_gpu_options(timeout_s);
  // Shared memory between ranks of one machine; no network probing in a container.
  options.env.push_back({"OMPI_MCA_btl", "self,vader"});
  options.env.push_back({"OMPI_MCA_btl_vader_single_copy_mechanism", "none"});
  options.env.push_back({"OMPI_MCA_rmaps_base_oversubscribe", "1"});
  FleetRun out;
  out.process = run_process(argv, options);
  INFO(out.process.describe() << "\nstdout:\n"
                              << out.process.out << "\nstderr:\n"
                              << out.process.err);
  REQUIRE(path_exists(dir.file("fleet.json")));
  out.verdict = parse_json(read_file(dir.file("fleet.json")), "fleet verdict");
  return out;
}

std::set<int> ranks_of(const json& list) {
  std::set<int> out;
  for (const auto& item : list) out.insert(item.at("rank").get<int>());
  return out;
}

std::string node_verdict(const json& v, int rank) {
  return v.at("nodes").at(rank).at("verdict").get<std::string>();
}

}  // namespace

TEST_CASE("fleet host: a healthy fleet of 4 passes in one round") {
  const auto r = run_fleet(4, {});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 0);
  CHECK(r.verdict.at("schema") == "preflight.fleet/1");
  CHECK(r.verdict.at("nodes").size() == 4);
  CHECK(r.verdict.at("rounds").size() == 1);
  CHECK(r.verdict.at("rounds").at(0).at("groups").size() == 2);
  for (const auto& g : r.verdict.at("rounds").at(0).at("groups")) {
    CHECK(g.at("outcome") == "ok");
    CHECK(g.at("busbw_gbps").get<double>() > 0);
  }
  CHECK(r.verdict.at("faulty").empty());
  CHECK(r.verdict.at("exclude") == "");
}

TEST_CASE("fleet host: a node whose data arrives corrupt is faulty, and only it") {
  const auto r = run_fleet(4, {"--inject-fault", "allgather-corrupt@node=2"});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 1);
  CHECK(ranks_of(r.verdict.at("faulty")) == std::set<int>{2});
  CHECK(node_verdict(r.verdict, 3) == "healthy");
  CHECK(r.verdict.at("injected_faults").size() == 1);
  CHECK(r.verdict.at("rounds").at(0).at("groups").at(1).at("outcome") == "corrupt");
}

// Issue 16: the local checks get what their model says (seconds on a node without GPUs), not
// the minutes of a GPU node's budgets, so a one-minute CI gate can use the fleet.
TEST_CASE("fleet host: --timeout 60 holds the quick profile and the rounds, 8 and 16 ranks") {
  for (int ranks : {8, 16}) {
    INFO(ranks << " ranks");
    const auto r = run_fleet(
        ranks, {"--timeout", "60", "--inject-fault", "allgather-corrupt@node=5"}, 120, true);
    INFO(r.verdict.dump(2));
    CHECK(r.process.exit_code == 1);
    CHECK(r.process.elapsed_s < 60.0 + 10.0);
    CHECK(ranks_of(r.verdict.at("faulty")) == std::set<int>{5});
    CHECK(r.verdict.at("timeout_s").get<double>() == 60.0);
    // Discovery, inventory and rdma on a node without GPUs: seconds, by the model.
    CHECK(r.verdict.at("local_timeout_s").get<double>() < 10.0);
  }
}

TEST_CASE("fleet host: a node that never completes is faulty and the run stays bounded") {
  const auto r = run_fleet(4, {"--inject-fault", "allgather-hang@node=1", "--group-timeout", "3"});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 1);
  CHECK(ranks_of(r.verdict.at("faulty")) == std::set<int>{1});
  CHECK(r.verdict.at("rounds").at(0).at("groups").at(0).at("outcome") == "timeout");
  // Issue 15: the healthy rank whose round-2 group had one earlier group to compare with was
  // called a straggler. Two comparable groups judge nobody, and the verdict says so.
  CHECK(r.verdict.at("stragglers").empty());
  for (const auto& node : r.verdict.at("nodes")) {
    CHECK(node.at("round_speed") != "slow");
    CHECK(node.at("groups_compared").get<int>() <= 2);
  }
  // Two rounds of at most 3 s each plus the report slack, local checks and MPI start-up.
  CHECK(r.process.elapsed_s < 40);
}

TEST_CASE("fleet host: a slow node is a straggler with its partners healthy") {
  const auto r = run_fleet(6, {"--inject-fault", "allgather-slow:0.1@node=4", "--slow-factor",
                               "0.4", "--sizes", "256K"});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 1);
  CHECK(ranks_of(r.verdict.at("stragglers")) == std::set<int>{4});
  CHECK(r.verdict.at("faulty").empty());
}

TEST_CASE("fleet host: a node failing its local checks is kept out of the rounds") {
  const auto r = run_fleet(4, {"--inject-fault", "local-fail@node=3"});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 1);
  CHECK(ranks_of(r.verdict.at("faulty")) == std::set<int>{3});
  for (const auto& round : r.verdict.at("rounds")) {
    for (const auto& g : round.at("groups")) {
      for (const auto& m : g.at("ranks")) CHECK(m.get<int>() != 3);
    }
  }
  // Three nodes left: one group of three.
  CHECK(r.verdict.at("rounds").at(0).at("groups").size() == 1);
}

TEST_CASE("fleet host: two faulty nodes of 8 are both found") {
  const auto r = run_fleet(8, {"--inject-fault", "allgather-corrupt@node=0", "--inject-fault",
                               "allgather-hang@node=5", "--group-timeout", "3"});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 1);
  CHECK(ranks_of(r.verdict.at("faulty")) == std::set<int>{0, 5});
  CHECK(r.verdict.at("ambiguous").empty());
}

TEST_CASE("fleet host: an odd fleet of 5 forms a group of three") {
  const auto r = run_fleet(5, {"--inject-fault", "allgather-corrupt@node=4"});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 1);
  CHECK(r.verdict.at("rounds").at(0).at("groups").size() == 2);
  CHECK(ranks_of(r.verdict.at("faulty")) == std::set<int>{4});
}

TEST_CASE("fleet host: two nodes that fail together are ambiguous") {
  const auto r = run_fleet(2, {"--inject-fault", "allgather-corrupt@node=1"});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 1);
  CHECK(r.verdict.at("faulty").empty());
  CHECK(ranks_of(r.verdict.at("ambiguous")) == std::set<int>{0, 1});
}

TEST_CASE("fleet host: bad input ends every rank with exit 2 and one line") {
  TempDir dir;
  RunOptions options = no_gpu_options(60);
  options.env.push_back({"OMPI_MCA_btl", "self,vader"});
  const auto r =
      run_process({MPIEXEC_BINARY, "--allow-run-as-root", "--oversubscribe", "-np", "3",
                   preflight_binary(), "fleet", "--transport", "host", "--checks", "inventory",
                   "--expect-gpus", "0", "--inject-fault", "allgather-hang@node=7"},
                  options);
  INFO(r.describe() << "\n" << r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("node 7 is not in this fleet of 3 ranks"));
  // Printed by rank 0 only.
  CHECK(r.err.find("node 7") == r.err.rfind("node 7"));
}

}  // namespace preflight::test
