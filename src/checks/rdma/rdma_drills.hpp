#pragma once
// The rdma check's drills (docs/fault-injection.md): rdma-down and rdma-slow at a NIC,
// rdma-path-slow at one transfer, and the counter drills' NIC checked. A drill naming something
// the node does not have is a FAULT_TARGET_MISSING finding, so a drill cannot pass by testing
// nothing.
#include <map>
#include <string>
#include <vector>

#include "checks/rdma/rdma_math.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/engine/rdma_engine.hpp"
#include "preflight/faults.hpp"

namespace preflight {

// The drill that slows one transfer, named by its entity (a mesh cell, a NIC pair).
inline constexpr const char* kRdmaPathSlowKind = "rdma-path-slow";

// rdma-path-slow names one transfer by its entity, among every transfer the node's mesh and pairs
// have (`all`, whatever this run's rotation step covers): the factor per entity.
std::map<std::string, double> rdma_path_faults(const FaultPlan& faults,
                                               const std::vector<PlannedTransfer>& all,
                                               std::vector<Finding>& findings);

// rdma-down takes a NIC's ports down in `inv`; rdma-slow sets its factor in `slow`.
void apply_rdma_faults(const FaultPlan& faults, RdmaInventory& inv,
                       std::map<std::string, double>& slow, std::vector<Finding>& findings);

}  // namespace preflight
