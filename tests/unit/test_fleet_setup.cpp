// The host-only parts of `preflight fleet` every rank derives from its command line: fault
// kinds, sizes, the topology file, the time budget; and the fleet's command-line parsing.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "app/cli.hpp"
#include "fleet/logic/fleet_setup.hpp"
#include "preflight/errors.hpp"
#include "support/command_line.hpp"

namespace preflight {
TEST_CASE("fleet setup: fault specs name a rank of the fleet") {
  const auto faults = parse_fleet_faults({"allgather-corrupt@node=2", "allgather-slow:0.5@node=3",
                                          "allgather-hang@node=3", "local-fail@node=0"},
                                         4);
  REQUIRE(faults.size() == 4);
  const NodeFaults three = faults_for_rank(faults, 3);
  CHECK(three.hang);
  CHECK_FALSE(three.corrupt);
  CHECK(three.slow_factor == Approx(0.5));
  CHECK(three.specs.size() == 2);
  CHECK(faults_for_rank(faults, 2).corrupt);
  CHECK(faults_for_rank(faults, 0).local_fail);
  CHECK(faults_for_rank(faults, 1).specs.empty());

  CHECK_THROWS_WITH(parse_fleet_faults({"allgather-hang@node=4"}, 4),
                    Catch::Contains("node 4 is not in this fleet of 4 ranks (0..3)"));
  CHECK_THROWS_AS(parse_fleet_faults({"allgather-hang@gpu=1"}, 4), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_faults({"allgather-slow@node=1"}, 4), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_faults({"allgather-slow:1.5@node=1"}, 4), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_faults({"gemm-nan@node=1"}, 4), InvalidInput);

  // The slow launch: seconds, not a fraction.
  CHECK(faults_for_rank(parse_fleet_faults({"launch-slow:12@node=1"}, 4), 1).launch_delay_s == 12);
  CHECK(faults_for_rank(parse_fleet_faults({"launch-slow:12@node=1"}, 4), 0).launch_delay_s == 0);
  CHECK_THROWS_AS(parse_fleet_faults({"launch-slow:0.5@node=1"}, 4), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_faults({"launch-slow:601@node=1"}, 4), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_faults({"launch-slow@node=1"}, 4), InvalidInput);
}

TEST_CASE("fleet setup: sizes") {
  CHECK(parse_fleet_sizes("64K,1M") == std::vector<std::size_t>{65536, 1048576});
  CHECK(parse_fleet_sizes(" 8 , 1G") == std::vector<std::size_t>{8, 1073741824});
  CHECK_THROWS_WITH(parse_fleet_sizes("64X"), Catch::Contains("'64X' has an unknown unit"));
  CHECK_THROWS_WITH(parse_fleet_sizes("12"), Catch::Contains("not a multiple of 8"));
  CHECK_THROWS_WITH(parse_fleet_sizes("8G"), Catch::Contains("outside 8 bytes .. 4G"));
  CHECK_THROWS_AS(parse_fleet_sizes(""), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_sizes("1M,,2M"), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_sizes("-8"), InvalidInput);
  CHECK_THROWS_WITH(parse_fleet_sizes("8,16,24,32,40,48,56,64,72"), Catch::Contains("at most 8"));
}

TEST_CASE("fleet setup: the topology file") {
  const auto topology = parse_topology(
      "# rack A\n"
      "node-a1 leaf1\n"
      "node-a2   leaf1   # trailing comment\n"
      "\n"
      "node-b1\tleaf2\n");
  CHECK(topology.size() == 3);
  CHECK(topology.at("node-a2") == "leaf1");
  CHECK(switches_of({"node-b1", "node-x"}, topology) ==
        std::vector<std::string>{"leaf2", "(unlisted) node-x"});
  CHECK_THROWS_WITH(parse_topology("a leaf1\nb\n"), Catch::Contains("line 2"));
  CHECK_THROWS_WITH(parse_topology("a leaf1 extra\n"), Catch::Contains("expected 'HOST SWITCH'"));
  CHECK_THROWS_WITH(parse_topology("a leaf1\na leaf2\n"),
                    Catch::Contains("already on switch 'leaf1'"));
  CHECK_THROWS_AS(parse_topology("# nothing\n"), InvalidInput);
}

TEST_CASE("fleet setup: the time budget fits every round into --timeout") {
  SECTION("defaults") {
    const FleetTiming t = plan_fleet_timing(30, 5, std::nullopt, std::nullopt, 20);
    CHECK(t.group_s == 20);
    CHECK(t.report_slack_s == Approx(4));
    CHECK(t.total_s >= t.local_collect_s + 5 * (t.group_s + t.report_slack_s) + t.verdict_margin_s);
  }
  SECTION("a given --timeout sizes the group timeout") {
    const FleetTiming t = plan_fleet_timing(30, 5, 300.0, std::nullopt, 20);
    CHECK(t.total_s == 300);
    CHECK(t.local_collect_s + 5 * (t.group_s + t.report_slack_s) + t.verdict_margin_s <= 300);
    CHECK(t.group_s > 40);
  }
  SECTION("both given") {
    const FleetTiming t = plan_fleet_timing(10, 3, 100.0, 5.0, 20);
    CHECK(t.group_s == 5);
    CHECK(t.total_s == 100);
  }
  SECTION("a --timeout too short for one round is bad input") {
    CHECK_THROWS_WITH(plan_fleet_timing(30, 5, 36.0, std::nullopt, 20),
                      Catch::Contains("--timeout 36 s cannot hold the local checks (30 s)"));
    CHECK_THROWS_AS(plan_fleet_timing(30, 5, 40.0, 10.0, 20), InvalidInput);
  }
}

TEST_CASE("fleet setup: the budgets count from MPI up, and a launch that ate them is named") {
  SECTION("without --timeout the launch only adds to the run") {
    const FleetTiming planned = plan_fleet_timing(3, 3, std::nullopt, std::nullopt, 20);
    const LaunchedTiming t = plan_after_launch(planned, 40, std::nullopt, 20);
    CHECK(t.launch_problem.empty());
    CHECK(t.timing.launch_s == 40);
    CHECK(t.timing.total_s == planned.total_s);
    CHECK(t.timing.group_s == planned.group_s);
  }
  SECTION("with --timeout the rounds share what the launch left") {
    const FleetTiming planned = plan_fleet_timing(3, 3, 60.0, std::nullopt, 20);
    REQUIRE(planned.timeout_given);
    const LaunchedTiming t = plan_after_launch(planned, 10.5, std::nullopt, 20);
    CHECK(t.launch_problem.empty());
    CHECK(t.timing.launch_s == 10.5);
    CHECK(t.timing.total_s == Approx(49.5));
    CHECK(t.timing.local_s == 3);
    CHECK(t.timing.group_s < planned.group_s);
    CHECK(t.timing.local_collect_s + 3 * (t.timing.group_s + t.timing.report_slack_s) +
              t.timing.verdict_margin_s <=
          49.5);
  }
  SECTION("a launch that left too little is the launch's problem, in one line") {
    // 3 s local + 5 + 3 rounds x (0.5 + 2.05) + 5: 21 s is the least --timeout.
    CHECK(least_fleet_timeout_s(3, 3, std::nullopt) == 21);
    CHECK(least_fleet_timeout_s(3, 1, std::nullopt) == 16);
    CHECK_NOTHROW(plan_fleet_timing(3, 3, 21.0, std::nullopt, 20));
    CHECK_THROWS_WITH(plan_fleet_timing(3, 3, 20.0, std::nullopt, 20),
                      Catch::Contains("give at least 21 s"));
    const FleetTiming planned = plan_fleet_timing(3, 3, 30.0, std::nullopt, 20);
    const LaunchedTiming t = plan_after_launch(planned, 12.34, std::nullopt, 20);
    CHECK(t.launch_problem ==
          "launch took 12.3 s of --timeout 30.0 s; the 17.7 s left is below the 21 s the local "
          "checks and rounds need; no node judged (slow MPI start-up: launcher or name "
          "resolution)");
    CHECK(t.launch_problem.size() + std::string("injected fault: ").size() <= 200);
    CHECK(t.timing.total_s == 30);
    // Never a negative time, however long the launch.
    CHECK_THAT(plan_after_launch(planned, 41, std::nullopt, 20).launch_problem,
               Catch::Contains("the 0.0 s left"));
    // A given --group-timeout is part of the least time.
    const FleetTiming fixed = plan_fleet_timing(3, 3, 40.0, 10.0, 20);
    CHECK_THAT(plan_after_launch(fixed, 20, 10.0, 20).launch_problem,
               Catch::Contains("below the 26 s"));
    CHECK(plan_after_launch(fixed, 10, 10.0, 20).launch_problem.empty());
  }
}

TEST_CASE("fleet cli: options") {
  const Invocation inv = test::parse_args(
      {"fleet", "--transport", "host", "--local-profile", "standard", "--group-size", "3",
       "--timeout", "600", "--group-timeout", "2.5", "--inject-fault", "local-fail@node=1",
       "--json", "-", "--expect-gpus", "8"});
  REQUIRE(inv.command == Command::fleet);
  CHECK(inv.fleet.transport == "host");
  CHECK(inv.fleet.profile == Profile::standard);
  CHECK(inv.fleet.group_size == 3);
  CHECK(inv.fleet.timeout_s == 600);
  CHECK(inv.fleet.group_timeout_s == Approx(2.5));
  CHECK(inv.fleet.inject_faults == std::vector<std::string>{"local-fail@node=1"});
  CHECK(inv.fleet.json_path == "-");
  CHECK(inv.fleet.expect_gpus == 8);

  CHECK(test::parse_args({"fleet"}).fleet.transport == "nccl");
  CHECK(test::parse_args({"fleet", "--transport", "tcp"}).exit_code == 2);
  CHECK(test::parse_args({"fleet", "--group-size", "1"}).exit_code == 2);
  CHECK(test::parse_args({"fleet", "--slow-factor", "0"}).exit_code == 2);
  CHECK(test::parse_args({"fleet", "--json", ""}).exit_code == 2);
  CHECK(test::parse_args({"fleet", "--profile", "quick"}).exit_code == 2);  // it is --local-profile
  CHECK(test::parse_args({"flet"}).message.find("known: run, fleet, plan, list, thresholds") !=
        std::string::npos);
}

}  // namespace preflight

namespace preflight {
namespace {

// Issue 17: the file was read whole with a blocking ifstream, so a FIFO hung every rank past
// every fleet timeout and /dev/zero grew to gigabytes.
TEST_CASE("fleet setup: the topology file is read with bounds") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("preflight-topology-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto file = [&](const std::string& name, const std::string& text) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  };
  SECTION("a regular file is read and parsed") {
    const std::string path = file("topology", "node-a1 leaf1\nnode-b1 leaf2\n");
    CHECK(read_topology_file(path).at("node-b1") == "leaf2");
  }
  SECTION("a FIFO is refused without blocking") {
    const std::string path = (dir / "fifo").string();
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(read_topology_file(path), "--topology: " + path + ": not a regular file");
  }
  SECTION("/dev/zero is refused") {
    CHECK_THROWS_WITH(read_topology_file("/dev/zero"), "--topology: /dev/zero: not a regular file");
  }
  SECTION("a directory is named as one") {
    CHECK_THROWS_WITH(read_topology_file(dir.string()),
                      Catch::Contains("is a directory, not a regular file"));
  }
  SECTION("a file over the cap") {
    const std::string path = file("big", std::string(kMaxTopologyBytes + 1, '#'));
    CHECK_THROWS_WITH(read_topology_file(path), Catch::Contains("larger than 4 MiB"));
  }
  SECTION("a parse error keeps its line") {
    const std::string path = file("bad", "a leaf1\nb\n");
    CHECK_THROWS_WITH(read_topology_file(path), Catch::StartsWith("--topology: line 2"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace preflight
