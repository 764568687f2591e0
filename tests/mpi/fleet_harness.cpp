// The MPI tests' harness (fleet_harness.hpp).
#include "mpi/fleet_harness.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>
#include <thread>

namespace preflight::test {

using nlohmann::json;

// The processes whose command line holds `marker` (a run's own temporary folder, which every
// rank has in its --json path), this test process excluded.
std::vector<pid_t> processes_with(const std::string& marker) {
  std::vector<pid_t> out;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ignored)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == getpid()) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    // A zombie has an empty command line: it is gone but for its exit status.
    if (cmdline.find(marker) != std::string::npos) out.push_back(pid);
  }
  return out;
}

// What is left of a run once mpirun has returned: polls until no process holds the marker, up
// to `within_s`, then SIGKILLs what remains (a stopped process too) and returns it. The test
// harness kills only the process it started (mpirun) at its own timeout, never the ranks, so
// every run ends here whatever happened.
std::vector<pid_t> survivors_killed(const std::string& marker, double within_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(within_s);
  while (true) {
    const std::vector<pid_t> left = processes_with(marker);
    if (left.empty()) return left;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (pid_t pid : left) kill(pid, SIGKILL);
      return left;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Runs an N-rank fleet with a quick local phase (inventory only, no GPU expected; with
// `profile_checks` the whole quick profile) and returns the exit status, rank 0's verdict and
// the processes of the run still there after mpirun returned.
FleetRun launch_fleet(const FleetLaunch& launch) {
  TempDir dir;
  std::vector<std::string> argv{MPIEXEC_BINARY, "--allow-run-as-root", "--oversubscribe"};
  argv.insert(argv.end(), launch.mpirun_args.begin(), launch.mpirun_args.end());
  argv.insert(argv.end(),
              {"-np", std::to_string(launch.ranks), preflight_binary(), "fleet", "--transport",
               "host", "--expect-gpus", "0", "--json", dir.file("fleet.json")});
  if (!launch.profile_checks) argv.insert(argv.end(), {"--checks", "inventory"});
  // Ranks share two cores here: bandwidth is noisy, so only a clear slowdown counts as slow
  // unless the test sets its own factor.
  const auto& extra = launch.args;
  if (std::find(extra.begin(), extra.end(), "--slow-factor") == extra.end()) {
    argv.insert(argv.end(), {"--slow-factor", "0.3"});
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunOptions options = no_gpu_options(launch.timeout_s);
  // Shared memory between ranks of one machine; no network probing in a container.
  options.env.push_back({"OMPI_MCA_btl", "self,vader"});
  options.env.push_back({"OMPI_MCA_btl_vader_single_copy_mechanism", "none"});
  options.env.push_back({"OMPI_MCA_rmaps_base_oversubscribe", "1"});
  FleetRun out;
  out.process = run_process(argv, options);
  out.survivors = survivors_killed(dir.path(), 5.0);
  if (path_exists(dir.file("fleet.json"))) {
    out.verdict = parse_json(read_file(dir.file("fleet.json")), "fleet verdict");
  }
  return out;
}

std::string describe(const FleetRun& r) {
  return r.process.describe() + "\nstdout:\n" + r.process.out + "\nstderr:\n" + r.process.err +
         "\nverdict:\n" + (r.verdict ? r.verdict->dump(2) : "(none)");
}

// A run that must write its verdict and leave no process behind.
FleetVerdictRun run_fleet(int ranks, const std::vector<std::string>& extra, double timeout_s,
                          bool profile_checks) {
  const FleetRun r = launch_fleet({ranks, extra, {}, timeout_s, profile_checks});
  INFO(describe(r));
  CHECK(r.survivors.empty());
  REQUIRE(r.verdict);
  return {r.process, *r.verdict};
}

std::set<int> ranks_of(const json& list) {
  std::set<int> out;
  for (const auto& item : list) out.insert(item.at("rank").get<int>());
  return out;
}

std::string groups_of_rank(const json& v, int rank) {
  std::ostringstream line;
  line << "rank " << rank << "'s groups:";
  const auto figure = [](const json& value) {
    std::ostringstream text;
    if (value.is_number()) {
      text << std::setprecision(3) << value.get<double>();
    } else {
      text << "-";
    }
    return text.str();
  };
  // A field as text whatever its type: this line explains a failure, so it must not throw on a
  // verdict that is itself wrong.
  const auto text = [](const json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end()) return std::string("?");
    return it->is_string() ? it->get<std::string>() : it->dump();
  };
  for (const auto& round : v.value("rounds", json::array())) {
    if (!round.is_object()) continue;
    for (const auto& g : round.value("groups", json::array())) {
      if (!g.is_object()) continue;
      const json ranks = g.value("ranks", json::array());
      if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) continue;
      line << " | round " << text(round, "index") << " " << ranks.dump() << " "
           << text(g, "outcome") << "/" << text(g, "speed") << " "
           << figure(g.value("busbw_gbps", json())) << " GB/s (unpaced "
           << figure(g.value("drill_unslowed_gbps", json())) << ", median "
           << figure(g.value("median_gbps", json())) << ", gap " << figure(g.value("gap", json()))
           << ", noise " << figure(g.value("noise", json())) << ")"
           << (text(g, "detail").rfind("speed not judged", 0) == 0 ? " not judged" : "");
    }
  }
  return line.str();
}

std::string node_verdict(const json& v, int rank) {
  return v.at("nodes").at(rank).at("verdict").get<std::string>();
}

}  // namespace preflight::test
