#include "checks/rdma/rdma_host.hpp"

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include "checks/common/pci_link.hpp"
#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

// /sys/devices/system/node/online is one line of node ranges; a page is the most sysfs gives.
constexpr std::size_t kMaxNodeListBytes = 4096;

// A node list under devices/system/node/ of `sysfs_root`; nullopt where it cannot be read.
std::optional<std::vector<int>> node_list(const std::string& sysfs_root, const char* name) {
  try {
    return parse_numa_node_list(
        read_bounded_file(sysfs_root + "/devices/system/node/" + name, kMaxNodeListBytes));
  } catch (const InvalidInput&) {
    return std::nullopt;
  }
}

}  // namespace

std::vector<GpuLocation> rdma_gpu_locations(const NodeReading& node) {
  std::vector<GpuLocation> out;
  for (const auto& g : node.gpus) {
    // NVML spells bus ids "00000000:1B:00.0"; sysfs "0000:1b:00.0".
    const std::string name = pci_sysfs_name(g.pci_bus_id);
    if (name.empty()) continue;
    const std::string link = "/sys/bus/pci/devices/" + name;
    char resolved[PATH_MAX];
    if (realpath(link.c_str(), resolved) == nullptr) continue;
    GpuLocation loc;
    loc.index = g.index;
    loc.sysfs_path = resolved;
    std::ifstream numa(link + "/numa_node");
    if (!(numa >> loc.numa_node)) loc.numa_node = -1;
    out.push_back(loc);
  }
  return out;
}

std::vector<int> host_numa_nodes(const std::string& sysfs_root) {
  std::vector<int> nodes = node_list(sysfs_root, "online").value_or(std::vector<int>{});
  if (const auto with_memory = node_list(sysfs_root, "has_memory")) {
    nodes.erase(std::remove_if(nodes.begin(), nodes.end(),
                               [&](int node) {
                                 return std::find(with_memory->begin(), with_memory->end(), node) ==
                                        with_memory->end();
                               }),
                nodes.end());
  }
  return nodes;
}

int cuda_ordinal_of(const NodeReading& node, int gpu_index) {
  for (const auto& g : node.gpus) {
    if (g.index == gpu_index) return g.cuda_ordinal;
  }
  return -1;
}

std::vector<RdmaNicReading> locate_rdma_devices(const std::vector<RdmaDevice>& devices,
                                                const std::vector<GpuLocation>& gpus) {
  std::vector<RdmaNicReading> out;
  for (const RdmaDevice& d : devices) {
    RdmaNicReading r;
    r.device = d;
    if (r.device.nearest_gpu < 0 && !d.sysfs_path.empty()) {
      r.device.nearest_gpu = nearest_gpu(d.sysfs_path, d.numa_node, gpus);
    }
    for (const GpuLocation& g : gpus) {
      if (g.index == r.device.nearest_gpu && !d.sysfs_path.empty()) {
        r.gpu_affinity = gpu_affinity(d.sysfs_path, d.numa_node, g);
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace preflight
