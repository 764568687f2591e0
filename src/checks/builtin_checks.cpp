// The one place that knows which checks this binary has. Later checks (gemm, pcie, nvlink,
// hbm, rdma, nccl) register here, in the order they run.
#include "checks/gemm/gemm_check.hpp"
#include "checks/inventory/inventory_check.hpp"
#include "preflight/check.hpp"

namespace preflight {

void register_builtin_checks(CheckRegistry& registry) {
  registry.add(std::make_unique<InventoryCheck>());
  registry.add(std::make_unique<GemmCheck>());
}

}  // namespace preflight
