#pragma once
// The harness of the MPI tests: `preflight fleet --transport host` under mpirun with N ranks on
// this machine, its verdict, and what is left of the run afterwards.
#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {

// The processes whose command line holds `marker` (a run's own temporary folder, which every
// rank has in its --json path), this test process excluded.
std::vector<pid_t> processes_with(const std::string& marker);

// What is left of a run once mpirun has returned: polls until no process holds the marker, up
// to `within_s`, then SIGKILLs what remains (a stopped process too) and returns it. The test
// harness kills only the process it started (mpirun) at its own timeout, never the ranks, so
// every run ends here whatever happened.
std::vector<pid_t> survivors_killed(const std::string& marker, double within_s);

struct FleetLaunch {
  int ranks = 4;
  std::vector<std::string> args;         // after `preflight fleet --transport host ...`
  std::vector<std::string> mpirun_args;  // after mpirun's own
  double timeout_s = 120;                // the harness's limit on mpirun
  bool profile_checks = false;           // the whole quick profile, not inventory alone
};

struct FleetRun {
  RunResult process;
  std::optional<nlohmann::json> verdict;  // rank 0's, when it wrote one
  std::vector<pid_t> survivors;
};

// Runs an N-rank fleet with a quick local phase (inventory only, no GPU expected; with
// `profile_checks` the whole quick profile) and returns the exit status, rank 0's verdict and
// the processes of the run still there after mpirun returned. Without --slow-factor in the
// arguments it adds --slow-factor 0.3: ranks share two cores here.
FleetRun launch_fleet(const FleetLaunch& launch);

std::string describe(const FleetRun& r);

struct FleetVerdictRun {
  RunResult process;
  nlohmann::json verdict;
};

// A run that must write its verdict and leave no process behind (Catch checks).
FleetVerdictRun run_fleet(int ranks, const std::vector<std::string>& extra, double timeout_s = 120,
                          bool profile_checks = false);

// The ranks of a verdict list ("faulty", "stragglers", ...).
std::set<int> ranks_of(const nlohmann::json& list);

// nodes[rank].verdict.
std::string node_verdict(const nlohmann::json& v, int rank);

// One line on every group that held `rank`, round by round: members, outcome and speed
// judgement, bus bandwidth, the drill's unpaced figure, the median, gap and noise it was judged
// by, and "not judged" where the noise hid it. A failed check's first message, which CI's
// summary quotes (the whole verdict after it is cut from CI's log).
std::string groups_of_rank(const nlohmann::json& v, int rank);

}  // namespace preflight::test
