#pragma once
// What the host shows the rdma check of where things are: the GPUs' places in the PCIe tree, the
// NUMA nodes that hold memory, and each RDMA device's nearest GPU. Read from sysfs; what cannot
// be read leaves a place unknown, never fails the check.
#include <string>
#include <vector>

#include "checks/rdma/rdma_math.hpp"
#include "checks/rdma/rdma_readings.hpp"
#include "preflight/engine/node_backend.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

// Each GPU of the node that sysfs shows, with its resolved device path and NUMA node.
std::vector<GpuLocation> rdma_gpu_locations(const NodeReading& node);

// The host's NUMA nodes under `sysfs_root` that hold memory: `online`, less the nodes
// `has_memory` leaves out (a CPU-only node, the memoryless nodes Grace Hopper lists), which have
// no page to bind a buffer to. Empty where `online` cannot be read (a kernel without NUMA, a
// container without sysfs), which plans one loopback per NIC as on a one-node host.
std::vector<int> host_numa_nodes(const std::string& sysfs_root);

// The CUDA ordinal of the GPU with this NVML index; -1 when CUDA cannot use it.
int cuda_ordinal_of(const NodeReading& node, int gpu_index);

// The nearest GPU of each device (unless the engine knew it) and how close it is: what tells
// the compute NICs from the others (rdma_judge.hpp).
std::vector<RdmaNicReading> locate_rdma_devices(const std::vector<RdmaDevice>& devices,
                                                const std::vector<GpuLocation>& gpus);

}  // namespace preflight
