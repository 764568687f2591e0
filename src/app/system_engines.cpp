#include "app/system_engines.hpp"

namespace preflight {

OwnedEngines make_system_engines() {
  OwnedEngines engines;
  engines.node = make_system_node_backend();
  engines.gemm = make_system_gemm_engine();
  engines.bandwidth = make_system_bandwidth_engine();
  engines.collective = make_system_collective_engine();
  // RDMA needs no GPU: every build has the engine (without GPUDirect where CUDA is missing).
  engines.rdma = make_system_rdma_engine();
  return engines;
}

}  // namespace preflight
