#pragma once
#include <functional>

#include "fleet/mpi/fleet_args.hpp"
#include "preflight/engine/engines.hpp"

namespace preflight {

struct FleetCommandResult {
  int exit_code = 0;
  bool threads_abandoned = false;
};

// `preflight fleet`, in every rank of the MPI job. Starts and ends MPI itself; bad input is
// reported by rank 0 only and ends every rank with exit 2.
// `make_engines` assembles the node's engines (the app's make_system_engines), called once MPI
// has started.
FleetCommandResult fleet_command(const FleetArgs& args, int argc, char** argv,
                                 const std::function<OwnedEngines()>& make_engines);

}  // namespace preflight
