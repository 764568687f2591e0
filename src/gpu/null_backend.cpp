// The backend of a build without CUDA (-DPREFLIGHT_WITH_CUDA=OFF): the tool still runs its
// host checks and reports every GPU reading as unavailable.
#include <memory>

#include "preflight/engine/engines.hpp"

namespace preflight {
namespace {

constexpr const char* kNoCuda = "built without CUDA support";

class NullNodeBackend final : public NodeBackend {
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

std::unique_ptr<NodeBackend> make_system_node_backend() {
  return std::make_unique<NullNodeBackend>();
}

// No GPU engines: the checks that need them skip. RDMA needs no GPU: the app assembles the rdma
// engine in this build too (without GPUDirect).
std::unique_ptr<GemmEngine> make_system_gemm_engine() {
  return nullptr;
}
std::unique_ptr<BandwidthEngine> make_system_bandwidth_engine() {
  return nullptr;
}
std::unique_ptr<CollectiveEngine> make_system_collective_engine() {
  return nullptr;
}

std::string describe_gpu_runtime() {
  return "built without CUDA (-DPREFLIGHT_WITH_CUDA=OFF): no GPU checks\n";
}

}  // namespace preflight
