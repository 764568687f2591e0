// The one place that knows which checks this binary has. The checks (inventory, events, gemm,
// pcie, nvlink, hbm, nccl, rdma) register here, in the order they run.
#include "checks/events/events_check.hpp"
#include "checks/gemm/gemm_check.hpp"
#include "checks/hbm/hbm_check.hpp"
#include "checks/inventory/inventory_check.hpp"
#include "checks/nccl/nccl_check.hpp"
#include "checks/nvlink/nvlink_check.hpp"
#include "checks/pcie/pcie_check.hpp"
#include "checks/rdma/rdma_check.hpp"
#include "preflight/check.hpp"

namespace preflight {

void register_builtin_checks(CheckRegistry& registry) {
  registry.add(std::make_unique<InventoryCheck>());
  registry.add(std::make_unique<EventsCheck>());
  registry.add(std::make_unique<GemmCheck>());
  registry.add(std::make_unique<PcieCheck>());
  registry.add(std::make_unique<NvlinkCheck>());
  registry.add(std::make_unique<HbmCheck>());
  registry.add(std::make_unique<NcclCheck>());
  registry.add(std::make_unique<RdmaCheck>());
}

}  // namespace preflight
