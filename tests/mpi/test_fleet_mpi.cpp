// `preflight fleet --transport host` for real under mpirun, several ranks on this machine (each
// rank is one node): the planner, the rounds, the deadlines, the attribution and the verdict,
// with the all-gathers done by MPI on the CPUs. Each test asserts that the verdict names
// exactly the injected nodes, and that no process of the run is left behind.
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mpi/fleet_harness.hpp"
#include "support/subprocess.hpp"

namespace preflight::test {
using nlohmann::json;

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

// Issue 32: a launch that eats the time (a resolver outage makes every rank's MPI start-up
// wait) is the launch's problem: the budgets count from MPI up, and where too little of the
// --timeout is left no node is judged, exit 3, naming the time the launch took.
TEST_CASE("fleet host: a slow launch neither starves the nodes nor convicts them") {
  SECTION("the time left holds the rounds: the corrupting node alone is found") {
    const auto r = run_fleet(4, {"--timeout", "60", "--inject-fault", "launch-slow:4@node=2",
                                 "--inject-fault", "allgather-corrupt@node=3"});
    INFO(r.verdict.dump(2));
    CHECK(r.process.exit_code == 1);
    CHECK(ranks_of(r.verdict.at("faulty")) == std::set<int>{3});
    CHECK(r.verdict.at("launch_s").get<double>() >= 3.5);
    CHECK(r.verdict.at("timeout_s").get<double>() == 60.0);
    for (const auto& node : r.verdict.at("nodes")) CHECK(node.at("local").at("verdict") == "pass");
    CHECK(r.process.elapsed_s < 60.0 + 10.0);
  }
  SECTION("too little left: exit 3, the launch named, no node judged or excluded") {
    // 4 ranks: 5 rounds at most, 26 s at least; 5 s of 26 gone.
    const auto r = run_fleet(4, {"--timeout", "26", "--inject-fault", "launch-slow:5@node=1"});
    INFO(r.verdict.dump(2));
    CHECK(r.process.exit_code == 3);
    CHECK_THAT(r.verdict.at("reason").get<std::string>(),
               Catch::StartsWith("injected fault: launch took ") &&
                   Catch::EndsWith("(slow MPI start-up: launcher or name resolution)"));
    CHECK_THAT(r.process.err, Catch::Contains("preflight fleet: launch took "));
    CHECK(r.verdict.at("launch_s").get<double>() >= 4.5);
    CHECK(r.verdict.at("nodes").empty());
    CHECK(r.verdict.at("faulty").empty());
    CHECK(r.verdict.at("exclude") == "");
    CHECK(r.process.elapsed_s < 26.0 + 10.0);
  }
}

// Issue 32: every node failing the same way (here a thresholds file missing on all of them) is a
// common cause, not a fleet to exclude: exit 3, "systemic", nothing excluded, unless lifted.
TEST_CASE("fleet host: every node failing alike is systemic, not an exclude list of all") {
  const auto r = run_fleet(4, {"--thresholds", "/nonexistent/thresholds.toml"});
  INFO(r.verdict.dump(2));
  CHECK(r.process.exit_code == 3);
  CHECK_THAT(r.verdict.at("reason").get<std::string>(),
             Catch::StartsWith("systemic: 4 of 4 nodes (100%) failed by local error"));
  CHECK(r.verdict.at("systemic").at(0).at("nodes") == 4);
  CHECK(r.verdict.at("exclude") == "");
  CHECK(ranks_of(r.verdict.at("faulty")) == std::set<int>{0, 1, 2, 3});
  const auto lifted =
      run_fleet(4, {"--thresholds", "/nonexistent/thresholds.toml", "--max-exclude-share", "1.0"});
  CHECK(lifted.process.exit_code == 1);
  CHECK(lifted.verdict.at("systemic").empty());
  CHECK(lifted.verdict.at("exclude") != "");
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
  struct Case {
    std::vector<std::string> args;
    std::string line;
  };
  // Issue 32: a --local-timeout below the floor (3 s for discovery and inventory without GPUs)
  // would starve every node alike; refused as `run` refuses such a --timeout.
  const Case cases[] = {
      {{"--inject-fault", "allgather-hang@node=7"}, "node 7 is not in this fleet of 3 ranks"},
      {{"--local-timeout", "2"}, "--local-timeout 2.0 s is below the 3.0 s each node needs"},
  };
  for (const Case& c : cases) {
    RunOptions options = no_gpu_options(60);
    options.env.push_back({"OMPI_MCA_btl", "self,vader"});
    std::vector<std::string> argv{MPIEXEC_BINARY,
                                  "--allow-run-as-root",
                                  "--oversubscribe",
                                  "-np",
                                  "3",
                                  preflight_binary(),
                                  "fleet",
                                  "--transport",
                                  "host",
                                  "--checks",
                                  "inventory",
                                  "--expect-gpus",
                                  "0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const auto r = run_process(argv, options);
    INFO(r.describe() << "\n" << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.line));
    // Printed by rank 0 only.
    CHECK(r.err.find(c.line) == r.err.rfind(c.line));
  }
}

// Hostile and broken peers (docs/fleet.md#hostile-and-broken-peers): rank 0 names exactly the
// rank that misbehaved, within the run's --timeout, and no process of the run survives it.
namespace {

constexpr double kHostileTimeout = 40;
// Beyond --timeout: mpirun's start and its end after MPI_Abort, on a loaded machine.
constexpr double kMargin = 10;

struct HostileCase {
  int ranks;
  std::string spec;
  int rank;            // the rank the spec names
  std::string reason;  // in its node reasons
  int exit_code;       // mpirun's
  std::vector<std::string> mpirun_args;
};

void check_hostile(const HostileCase& c) {
  const FleetRun r = launch_fleet(
      {c.ranks,
       {"--inject-fault", c.spec, "--timeout", std::to_string(static_cast<int>(kHostileTimeout))},
       c.mpirun_args,
       kHostileTimeout + 60});
  INFO(describe(r));
  CHECK(r.process.exit_code == c.exit_code);
  CHECK(r.process.elapsed_s < kHostileTimeout + kMargin);
  CHECK(r.survivors.empty());
  REQUIRE(r.verdict);
  const json& v = *r.verdict;
  CHECK(v.at("exit_code") == 1);
  CHECK(ranks_of(v.at("faulty")) == std::set<int>{c.rank});
  CHECK(v.at("ambiguous").empty());
  CHECK(v.at("bad_pairs").empty());
  CHECK(v.at("injected_faults") == json::array({c.spec}));
  const json& node = v.at("nodes").at(c.rank);
  CHECK(node.at("verdict") == "faulty");
  CHECK_THAT(node.at("reasons").dump(), Catch::Contains(c.reason));
  // The job ends by MPI_Abort after the verdict: a misbehaving rank cannot hold MPI_Finalize.
  CHECK_THAT(v.at("notes").dump(), Catch::Contains("MPI_Abort"));
  for (int rank = 0; rank < c.ranks; ++rank) {
    if (rank != c.rank) CHECK(node_verdict(v, rank) == "healthy");
  }
}

}  // namespace

TEST_CASE("fleet hostile: a local report claiming the number of another rank") {
  check_hostile(
      {4, "peer-malformed:local@node=2", 2, "sent a local report that claims to be rank 0", 1, {}});
}

TEST_CASE("fleet hostile: a round report that is not JSON") {
  check_hostile(
      {4, "peer-malformed:report@node=1", 1, "sent a malformed report in round 1", 1, {}});
}

TEST_CASE("fleet hostile: an oversized local report is dropped unread") {
  check_hostile({5,
                 "peer-oversized:local@node=3",
                 3,
                 "sent an oversized message as its local report (16777216 bytes; the limit is "
                 "1048576)",
                 1,
                 {}});
}

TEST_CASE("fleet hostile: an oversized round report is dropped unread") {
  check_hostile({6,
                 "peer-oversized:report@node=4",
                 4,
                 "sent an oversized message as its report in round 1",
                 1,
                 {}});
}

TEST_CASE("fleet hostile: a rank stopped by SIGSTOP mid-round is unresponsive and killed") {
  check_hostile({4, "peer-freeze@node=1", 1, "did not report in round 1 (unresponsive)", 1, {}});
}

// mpirun ends the whole job when a rank dies, unless told not to (docs/fleet.md#launching); then
// rank 0 names the dead rank, and mpirun's status is the dead rank's (SIGKILL: 137).
TEST_CASE("fleet hostile: a rank killed mid-round is unresponsive") {
  check_hostile({6,
                 "peer-die@node=2",
                 2,
                 "did not report in round 1 (unresponsive)",
                 137,
                 {"--mca", "orte_abort_on_non_zero_status", "0"}});
}

TEST_CASE("fleet hostile: without that setting mpirun ends the job at once, leaving nothing") {
  const FleetRun r =
      launch_fleet({4, {"--inject-fault", "peer-die@node=2", "--timeout", "40"}, {}, 100});
  INFO(describe(r));
  CHECK(r.process.exit_code == 137);
  CHECK(r.process.elapsed_s < 20);
  CHECK(r.survivors.empty());
  // Rank 0 is killed with the others before its round ends: no verdict.
  CHECK_FALSE(r.verdict);
}

// read_topology_file reads with bounds: a FIFO or an endless file is bad input on rank 0, which
// ends every rank at once (MPI_Abort with exit 2), not a hang of the whole fleet.
TEST_CASE("fleet: --topology naming a FIFO or /dev/zero ends every rank with exit 2") {
  TempDir fifo_dir;
  const std::string fifo = fifo_dir.file("topology.fifo");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    INFO("--topology " << path);
    const FleetRun r = launch_fleet({4, {"--topology", path}, {}, 60});
    INFO(describe(r));
    CHECK(r.process.exit_code == 2);
    CHECK(r.process.elapsed_s < 15);
    CHECK(r.survivors.empty());
    CHECK_FALSE(r.verdict);
    CHECK_THAT(r.process.err, Catch::Contains("preflight: --topology: " + path));
  }
}

}  // namespace preflight::test
