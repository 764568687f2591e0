// The one place that knows which checks this binary has. Later checks (gemm, pcie, nvlink,
// hbm, rdma, nccl) register here.
#include "checks/inventory/inventory_check.hpp"
#include "preflight/check.hpp"

namespace preflight {

void register_builtin_checks(CheckRegistry& registry) {
  registry.add(std::make_unique<InventoryCheck>());
}

}  // namespace preflight
