// The backend of a build without CUDA (-DPREFLIGHT_WITH_CUDA=OFF): the tool still runs its
// host checks and reports every GPU reading as unavailable.
#include <memory>

#include "preflight/gpu_backend.hpp"

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
};

}  // namespace

std::unique_ptr<GpuBackend> make_system_gpu_backend() {
  return std::make_unique<NullGpuBackend>();
}

}  // namespace preflight
