#include "checks/rdma/rdma_drills.hpp"

#include <algorithm>
#include <utility>

#include "checks/common/findings.hpp"

namespace preflight {

std::map<std::string, double> rdma_path_faults(const FaultPlan& faults,
                                               const std::vector<PlannedTransfer>& all,
                                               std::vector<Finding>& findings) {
  std::map<std::string, double> slow;
  for (const InjectedFault* f : faults.of_kind(kRdmaPathSlowKind)) {
    const std::string& entity = f->target.name;
    const bool found = std::any_of(all.begin(), all.end(),
                                   [&](const PlannedTransfer& t) { return t.entity == entity; });
    if (!found) {
      Finding missing = make_finding(
          shared_findings(), "FAULT_TARGET_MISSING", entity,
          "--inject-fault " + f->spec + ": no transfer of this node's rdma check is " + entity +
              " (a path NIC-numaN or NIC-gpuN of the loopback mesh, a NIC's loopback on a host "
              "of one NUMA node, or a NIC pair NIC-NIC)");
      missing.injected = true;
      findings.push_back(std::move(missing));
      continue;
    }
    slow[entity] = f->number.value_or(1.0);
  }
  return slow;
}

void apply_rdma_faults(const FaultPlan& faults, RdmaInventory& inv,
                       std::map<std::string, double>& slow, std::vector<Finding>& findings) {
  // The counter drills (counters.hpp) are checked here too: a drill at a NIC the node lacks tests
  // nothing.
  for (const char* kind : {"rdma-down", "rdma-slow", "rnic-symbol-errors", "rnic-link-downed"}) {
    for (const InjectedFault* f : faults.of_kind(kind)) {
      auto it = std::find_if(inv.devices.begin(), inv.devices.end(),
                             [&](const RdmaDevice& d) { return d.name == f->target.name; });
      if (it == inv.devices.end()) {
        Finding missing = make_finding(
            shared_findings(), "FAULT_TARGET_MISSING", f->target.name,
            "--inject-fault " + f->spec + ": this node has no RDMA device " + f->target.name);
        missing.injected = true;
        findings.push_back(std::move(missing));
        continue;
      }
      if (std::string(kind) == "rdma-down") {
        for (auto& port : it->ports) {
          port.state = "DOWN";
          port.phys_state = "Disabled";
        }
      } else if (std::string(kind) == "rdma-slow") {
        slow[it->name] = f->number.value_or(1.0);
      }
    }
  }
}

}  // namespace preflight
