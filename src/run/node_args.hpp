#pragma once
// What `preflight run` and `preflight fleet` share: how a node's checks are chosen and judged,
// where the verdict goes and how long the command may take. The CLI fills it (src/app/cli.cpp);
// RunArgs and FleetArgs add what only their command has.
#include <optional>
#include <string>
#include <vector>

#include "preflight/check.hpp"

namespace preflight {

struct NodeArgs {
  Profile profile = Profile::quick;  // run: --profile; fleet: --local-profile
  std::vector<std::string> checks;   // --checks: instead of the profile's
  std::optional<int> expect_gpus;
  std::string thresholds_path;
  std::string node_shape;      // --node-shape NAME (node_shape.hpp)
  CheckOptions check_options;  // options the checks add (--gemm-dtypes ...), as text
  std::vector<std::string> inject_faults;
  std::string json_path;  // run: the node verdict; fleet: the fleet verdict; "-": stdout
  std::optional<int> timeout_s;
  bool colour = true;  // --no-color turns it off; it is only used on a terminal anyway
};

}  // namespace preflight
