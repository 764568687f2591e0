// The RDMA engine of a build without libibverbs: the rdma check then skips with this reason.
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

namespace {

class NoRdmaEngine final : public RdmaEngine {
 public:
  RdmaInventory inventory() override {
    RdmaInventory inv;
    inv.error = "built without libibverbs (-DPREFLIGHT_WITH_IBVERBS=OFF)";
    return inv;
  }
  RdmaTransferResult transfer(const RdmaTransferJob&) override {
    RdmaTransferResult r;
    r.error = "built without libibverbs (-DPREFLIGHT_WITH_IBVERBS=OFF)";
    return r;
  }
};

}  // namespace

std::unique_ptr<RdmaEngine> make_system_rdma_engine() {
  return std::make_unique<NoRdmaEngine>();
}

}  // namespace preflight
