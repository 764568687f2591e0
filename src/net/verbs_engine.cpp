// The RDMA engine of a build with libibverbs: the library is loaded at the first use, so a run
// without the rdma check never touches it; libefa likewise, at the first EFA device.
#include <exception>
#include <memory>
#include <mutex>
#include <new>

#include "net/verbs_engine.hpp"

namespace preflight {
namespace {

class VerbsEngine final : public RdmaEngine {
 public:
  RdmaInventory inventory() override {
    RdmaInventory inventory;
    try {
      return read_rdma_inventory(library(), efa_);
    } catch (const std::exception& e) {
      inventory.error = e.what();
    } catch (...) {
      inventory.error = "unexpected error while reading RDMA devices";
    }
    return inventory;
  }

  RdmaTransferResult transfer(const RdmaTransferJob& job) override {
    RdmaTransferResult result;
    try {
      return run_rdma_transfer(library(), efa_, job);
    } catch (const std::exception& e) {
      result.error = e.what();
    } catch (...) {
      result.error = "unexpected error in the RDMA transfer";
    }
    return result;
  }

 private:
  const VerbsLibrary& library() {
    std::call_once(loaded_, [this] {
      library_ = std::make_unique<VerbsLibrary>(VerbsLibrary::library_name_from_env());
    });
    return *library_;
  }

  std::once_flag loaded_;
  std::unique_ptr<VerbsLibrary> library_;
  LazyEfaLibrary efa_;  // loaded only where a device is an EFA device
};

}  // namespace

std::unique_ptr<RdmaEngine> make_system_rdma_engine() {
  return std::make_unique<VerbsEngine>();
}

}  // namespace preflight
