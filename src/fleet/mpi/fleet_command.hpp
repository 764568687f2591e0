#pragma once
#include "fleet/mpi/fleet_args.hpp"

namespace preflight {

struct FleetCommandResult {
  int exit_code = 0;
  bool threads_abandoned = false;
};

// `preflight fleet`, in every rank of the MPI job. Starts and ends MPI itself; bad input is
// reported by rank 0 only and ends every rank with exit 2.
FleetCommandResult fleet_command(const FleetArgs& args, int argc, char** argv);

}  // namespace preflight
