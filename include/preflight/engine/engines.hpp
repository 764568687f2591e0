#pragma once
// The engines a run works with: the node backend (discovery, health, probes, telemetry) and the
// four measurement engines. The app assembles them in one place (src/app/system_engines.cpp) from
// the implementations this binary was built with; checks reach them through CheckContext::engines,
// tests hand in fakes.
#include <memory>
#include <string>

#include "preflight/engine/bandwidth_engine.hpp"
#include "preflight/engine/collective_engine.hpp"
#include "preflight/engine/gemm_engine.hpp"
#include "preflight/engine/node_backend.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

// Non-owning; nullptr where this binary has no such engine (the check that needs it skips).
struct Engines {
  NodeBackend* node = nullptr;
  GemmEngine* gemm = nullptr;              // gemm check
  BandwidthEngine* bandwidth = nullptr;    // pcie, nvlink, hbm checks
  CollectiveEngine* collective = nullptr;  // nccl check, the fleet's NCCL transport
  RdmaEngine* rdma = nullptr;              // rdma check
};

// The engines, owned. A thread abandoned inside one of them (stuck in the driver) may still use
// it, so a process that abandoned one calls release() and never destroys them.
struct OwnedEngines {
  std::unique_ptr<NodeBackend> node;
  std::unique_ptr<GemmEngine> gemm;
  std::unique_ptr<BandwidthEngine> bandwidth;
  std::unique_ptr<CollectiveEngine> collective;
  std::unique_ptr<RdmaEngine> rdma;

  Engines view() const {
    return {node.get(), gemm.get(), bandwidth.get(), collective.get(), rdma.get()};
  }
  void release() noexcept {
    (void)node.release();
    (void)gemm.release();
    (void)bandwidth.release();
    (void)collective.release();
    (void)rdma.release();
  }
};

// The GPU engines this binary was built with (src/gpu): cuBLAS products, CUDA copies and memory
// patterns, NCCL collectives. nullptr in a build without CUDA (-DPREFLIGHT_WITH_CUDA=OFF).
std::unique_ptr<GemmEngine> make_system_gemm_engine();
std::unique_ptr<BandwidthEngine> make_system_bandwidth_engine();
std::unique_ptr<CollectiveEngine> make_system_collective_engine();

// For `preflight --version`, one line each: the CUDA toolkit this binary was built with and the
// oldest driver it runs on, the driver found, and the cuBLAS and NCCL found now (or "not
// found"). A build without CUDA says so.
std::string describe_gpu_runtime();

}  // namespace preflight
