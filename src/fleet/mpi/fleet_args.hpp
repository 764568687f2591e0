#pragma once
// `preflight fleet`: one process per node under mpirun/srun. The node options of `run` (NodeArgs)
// apply to every node's local checks; the rest shape the network rounds (docs/fleet.md).
#include <optional>
#include <string>

#include "fleet/logic/fleet_systemic.hpp"
#include "run/node_args.hpp"

namespace preflight {

struct FleetArgs : NodeArgs {
  std::optional<double> group_timeout_s;
  std::optional<int> local_timeout_s;
  std::string transport = "nccl";  // nccl | host
  int group_size = 2;
  std::string topology_path;
  std::string sizes;         // all-gather sizes per rank, e.g. "1M,64M"; empty: the transport's
  double slow_factor = 0.8;  // a group below this fraction of comparable groups' median is slow
  double min_busbw_gbps = 0;
  // More than this share of the nodes failing by one cause is systemic: exit 3, not excluded.
  double max_exclude_share = kDefaultMaxExcludeShare;
  std::string local_json_dir;  // each node's own verdict as DIR/<host>-rank<R>.json
};

}  // namespace preflight
