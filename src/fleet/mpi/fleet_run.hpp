#pragma once
// What every rank of `preflight fleet` shares while it runs: the link, the parsed command line,
// its own faults, the time budget and the data transport. Rank 0 additionally coordinates
// (fleet_coordinator.cpp); every rank runs its local checks (fleet_local.cpp) and serves its
// groups (fleet_command.cpp).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fleet/logic/fleet_setup.hpp"
#include "fleet/logic/fleet_verdict.hpp"
#include "fleet/mpi/fleet_args.hpp"
#include "fleet/mpi/fleet_protocol.hpp"
#include "fleet/mpi/mpi_link.hpp"
#include "fleet/mpi/transport.hpp"
#include "preflight/engine/engines.hpp"

namespace preflight {

struct FleetExit {
  int code = 0;
  bool threads_abandoned = false;
  bool abort_job = false;  // end the MPI job with MPI_Abort (after the verdict is written)
};

struct FleetRun {
  MpiLink* link = nullptr;
  const FleetArgs* args = nullptr;
  std::vector<std::string> argv;
  std::vector<InjectedFault> faults;
  NodeFaults mine;
  std::vector<std::size_t> sizes;
  int iterations = 8;
  FleetTiming timing;
  // The process's start, and the fleet's clock: MPI up (timing.launch_s after). Every budget
  // counts from `start`, so a slow launch never eats a step's time.
  SteadyClock::time_point process_start;
  SteadyClock::time_point start;
  std::string started_at;
  std::string host;
  std::map<std::string, std::string> topology;  // rank 0: --topology, read once, bounded
  // Outlive the local checks: the NCCL transport uses the collective engine, and a check thread
  // left behind may still use any of them.
  OwnedEngines engines;
  std::unique_ptr<GroupTransport> transport;
  bool threads_abandoned = false;

  SteadyClock::time_point at(double seconds_from_start) const {
    return start + std::chrono::duration_cast<SteadyClock::duration>(
                       std::chrono::duration<double>(seconds_from_start));
  }
};

// This node's local checks, condensed for rank 0; also writes --local-json when asked.
struct LocalOutcome {
  LocalReport report;
  std::vector<int> cuda_ordinals;
};
LocalOutcome run_local_checks(FleetRun& run);

// The task a rank runs for its assignment.
GroupTask task_for(const FleetRun& run, const Assignment& a);

// Rank 0: collects the local results, runs the rounds, writes the fleet verdict, releases the
// other ranks. Returns how the process should end.
FleetExit coordinate(FleetRun& run, const LocalReport& own);

// Rank 0, when the launch left too little of --timeout (plan_after_launch): writes a verdict
// that judges no node, exit 3 with `why` as its reason; the job is then ended by MPI_Abort.
FleetExit refuse_after_launch(FleetRun& run, const std::string& why);

}  // namespace preflight
