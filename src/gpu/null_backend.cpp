// The backend of a build without CUDA (-DPREFLIGHT_WITH_CUDA=OFF): the tool still runs its
// host checks and reports every GPU reading as unavailable.
#include <memory>

#include "preflight/engine/gpu_backend.hpp"

namespace preflight {
namespace {

constexpr const char* kNoCuda = "built without CUDA support";

class NullGpuBackend final : public GpuBackend {
 public:
  NodeReading discover() override {
    NodeReading node;
    node.nvml_error = kNoCuda;
    node.cuda_error = kNoCuda;
    return node;
  }
  void read_health(NodeReading& /*node*/) override {}
  void probe(GpuReading& gpu, SteadyClock::time_point /*deadline*/) override {
    gpu.responsive = false;
    gpu.probe_error = kNoCuda;
  }
  // RDMA needs no GPU: the rdma check runs in this build too (without GPUDirect).
  RdmaEngine* rdma_engine() override { return rdma_engine_.get(); }

 private:
  std::unique_ptr<RdmaEngine> rdma_engine_ = make_system_rdma_engine();
};

}  // namespace

std::unique_ptr<GpuBackend> make_system_gpu_backend() {
  return std::make_unique<NullGpuBackend>();
}

}  // namespace preflight
