#pragma once
// Host-only pieces of `preflight fleet` that every rank computes the same way from the same
// command line: fault kinds, sizes, the topology file and the time budget. Kept out of the MPI
// code so they are unit-tested like the rest of the core.
#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "preflight/faults.hpp"

namespace preflight {

// allgather-corrupt, allgather-hang, allgather-slow:FACTOR, local-fail, the hostile peers
// peer-malformed:local|report, peer-oversized:local|report, peer-freeze and peer-die, and
// launch-slow:SECONDS, all @node=R.
std::vector<FaultKindSpec> fleet_fault_kinds();

// What a hostile peer sends rank 0 in place of an honest message.
enum class PeerMessage { honest, malformed, oversized };

// The faults aimed at one rank.
struct NodeFaults {
  bool corrupt = false;
  bool hang = false;
  double slow_factor = 1.0;
  bool local_fail = false;
  PeerMessage local_message = PeerMessage::honest;   // instead of its local report
  PeerMessage report_message = PeerMessage::honest;  // instead of each round report
  bool freeze = false;                               // SIGSTOP when its first round starts
  bool die = false;                                  // SIGKILL when its first round starts
  double launch_delay_s = 0;                         // paused before MPI_Init
  std::vector<std::string> specs;                    // as given, for the local verdict
};
// Parses every spec against fleet_fault_kinds(); a node index outside the fleet is bad input.
// Throws InvalidInput.
std::vector<InjectedFault> parse_fleet_faults(const std::vector<std::string>& specs,
                                              int world_size);
NodeFaults faults_for_rank(const std::vector<InjectedFault>& faults, int rank);

// "64K,1M" -> bytes (K, M, G are powers of 1024). At most 8 sizes of 8 bytes .. 4 GiB, each a
// multiple of 8. Throws InvalidInput naming the bad item.
std::vector<std::size_t> parse_fleet_sizes(const std::string& text);

// The topology file: one "HOST SWITCH" pair per line; '#' starts a comment; blank lines are
// ignored. Throws InvalidInput naming the line.
std::map<std::string, std::string> parse_topology(const std::string& text);
// The --topology file read with bounds (regular file, non-blocking open, kMaxTopologyBytes) and
// parsed: a FIFO, /dev/zero or a directory is InvalidInput naming the file, never a hang.
inline constexpr std::size_t kMaxTopologyBytes = std::size_t{4} << 20;
std::map<std::string, std::string> read_topology_file(const std::string& path);
// Switch of every rank; a host missing from the map gets a switch of its own.
std::vector<std::string> switches_of(const std::vector<std::string>& hosts,
                                     const std::map<std::string, std::string>& topology);

// A group's default timeout per transport (--group-timeout not given and no --timeout to size it).
inline constexpr double kDefaultGroupSecondsNccl = 60.0;
inline constexpr double kDefaultGroupSecondsHost = 20.0;

// How the fleet's --timeout is spent: the local checks, then up to `round_bound` rounds, each
// with its group timeout and the slack for the reports to reach rank 0, then the verdict.
struct FleetTiming {
  double local_s = 0;           // each node's local checks
  double local_collect_s = 0;   // rank 0 waits this long (from start) for local results
  double group_s = 0;           // a group's all-gathers (--group-timeout)
  double report_slack_s = 0;    // per round, beyond group_s, for reports to arrive
  double verdict_margin_s = 0;  // kept free at the end to write the verdict and stop
  double total_s = 0;           // --timeout (less the launch, after plan_after_launch)
  bool timeout_given = false;   // total_s is the user's --timeout, not the plan's own sum
  double launch_s = 0;          // MPI start-up, before the plan's clock starts
  int round_bound = 0;
};
// timeout_s / group_timeout_s: as given (nullopt: default). default_group_s: the transport's
// default group timeout. Throws InvalidInput when a given --timeout cannot hold the local
// checks and at least one round.
FleetTiming plan_fleet_timing(double local_s, int round_bound, std::optional<double> timeout_s,
                              std::optional<double> group_timeout_s, double default_group_s);

// The least --timeout plan_fleet_timing accepts, rounded up to a whole second: local checks of
// `local_s`, and one round of a given group timeout, or `round_bound` rounds of a sized one.
double least_fleet_timeout_s(double local_s, int round_bound,
                             std::optional<double> group_timeout_s);

// The plan once MPI has started, `launch_s` after the process did. The fleet's clock (each
// rank's local checks, rank 0's rounds) starts now, so a slow launch never eats a step's time;
// with a given --timeout what the launch left is divided instead. When that cannot hold the
// local checks and one round, `launch_problem` says so in one line ("launch took N s ...") and
// `timing` is the plan as given: the launch's problem, never the nodes'.
struct LaunchedTiming {
  FleetTiming timing;
  std::string launch_problem;
};
LaunchedTiming plan_after_launch(const FleetTiming& planned, double launch_s,
                                 std::optional<double> group_timeout_s, double default_group_s);

}  // namespace preflight
