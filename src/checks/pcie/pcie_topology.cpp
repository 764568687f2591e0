// The PCIe topology of the GPUs from sysfs (pcie_topology.hpp). Only plain file reads and
// realpath: the layout is the kernel's (Documentation/ABI/testing/sysfs-bus-pci), so tests
// build the same layout in a temporary folder.
#include "checks/pcie/pcie_topology.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace preflight {
namespace {

std::optional<std::string> first_line(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  const auto first = line.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return std::string();
  const auto last = line.find_last_not_of(" \t\r\n");
  return line.substr(first, last - first + 1);
}

std::optional<long> leading_integer(const std::string& text, int base) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, base);
  if (end == text.c_str()) return std::nullopt;
  return value;
}

std::optional<int> read_width(const std::string& path) {
  const auto text = first_line(path);
  if (!text) return std::nullopt;
  const auto width = leading_integer(*text, 10);
  // 0 is what some kernels print for a link that is down, 255 for "unknown".
  if (!width || *width <= 0 || *width > 32) return std::nullopt;
  return static_cast<int>(*width);
}

std::optional<int> read_gen(const std::string& path) {
  const auto text = first_line(path);
  return text ? pcie_gen_from_sysfs_speed(*text) : std::nullopt;
}

std::string realpath_of(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : std::string();
}

// "0000:1b:00.0", and the longer domains of VMD or Hyper-V ("10000:00:00.0").
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream in(path);
  std::string part;
  while (std::getline(in, part, '/')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::string devices_dir(const std::string& sysfs_root) {
  return sysfs_root + "/bus/pci/devices/";
}

PcieLinkState read_link(const std::string& dir) {
  PcieLinkState link;
  link.gen_current = read_gen(dir + "/current_link_speed");
  link.width_current = read_width(dir + "/current_link_width");
  link.gen_max = read_gen(dir + "/max_link_speed");
  link.width_max = read_width(dir + "/max_link_width");
  return link;
}

std::optional<int> lower(std::optional<int> a, std::optional<int> b) {
  if (a && b) return std::min(*a, *b);
  return a ? a : b;
}

// The GPU and every bridge above it.
std::vector<std::string> parts_of(std::vector<std::string> bridges, const std::string& gpu) {
  bridges.push_back(gpu);
  return bridges;
}

// The uplink of a located GPU: the link of the device directly below its root port, its most
// the lower of both ends' maxima (a Gen5 switch in a Gen4 root port trains to Gen4).
PcieUplink uplink_of(const std::string& sysfs_root, const PcieGpuLocation& gpu) {
  PcieUplink up;
  const std::string dir = devices_dir(sysfs_root);
  if (gpu.root_port.empty()) {
    up.id = gpu.bdf;
    up.device = gpu.bdf;
    up.link = read_link(dir + gpu.bdf);
    return up;
  }
  up.id = gpu.root_port;
  up.device = gpu.bridges.size() >= 2 ? gpu.bridges[1] : gpu.bdf;
  up.link = read_link(dir + up.device);
  const PcieLinkState port = read_link(dir + gpu.root_port);
  up.link.gen_max = lower(up.link.gen_max, port.gen_max);
  up.link.width_max = lower(up.link.width_max, port.width_max);
  return up;
}

}  // namespace

std::optional<int> pcie_gen_from_sysfs_speed(const std::string& text) {
  char* end = nullptr;
  const double rate = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return std::nullopt;
  // The kernel prints "2.5", "5.0", "8.0", "16.0", "32.0", "64.0" GT/s (pci_speed_string).
  constexpr double kRates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
  for (int gen = 1; gen <= 6; ++gen) {
    const double expected = kRates[gen - 1];
    if (rate > expected * 0.95 && rate < expected * 1.05) return gen;
  }
  return std::nullopt;
}

std::optional<PcieGpuLocation> locate_pcie_gpu(const std::string& sysfs_root,
                                               const std::string& bdf) {
  if (bdf.empty()) return std::nullopt;
  const std::string link = devices_dir(sysfs_root) + bdf;
  // A bus id that names another device (a made-up id that happens to exist) is not this GPU.
  const auto vendor = first_line(link + "/vendor");
  if (!vendor || leading_integer(*vendor, 16).value_or(0) != 0x10de) return std::nullopt;
  const std::vector<std::string> parts = split_path(realpath_of(link));
  if (parts.empty() || parts.back() != bdf) return std::nullopt;
  // /sys/devices/pci0000:00/<root port>/<switch up>/<switch down>/<gpu>: the trailing run of
  // PCI names is the chain from the root port down; what precedes it is the host bridge.
  std::size_t first = parts.size() - 1;
  while (first > 0 && is_pci_name(parts[first - 1])) --first;
  PcieGpuLocation gpu;
  gpu.bdf = bdf;
  gpu.bridges.assign(parts.begin() + static_cast<long>(first), parts.end() - 1);
  if (!gpu.bridges.empty()) gpu.root_port = gpu.bridges.front();
  const std::string dir = devices_dir(sysfs_root);
  for (const std::string& device : parts_of(gpu.bridges, bdf)) {
    gpu.path_gen_max = lower(gpu.path_gen_max, read_gen(dir + device + "/max_link_speed"));
    gpu.path_width_max = lower(gpu.path_width_max, read_width(dir + device + "/max_link_width"));
  }
  if (const auto numa = first_line(link + "/numa_node")) {
    const auto node = leading_integer(*numa, 10);
    if (node && *node >= 0) gpu.numa_node = static_cast<int>(*node);  // -1: no NUMA affinity
  }
  return gpu;
}

PcieTopology read_pcie_topology(const std::string& sysfs_root,
                                const std::vector<std::pair<int, std::string>>& gpus) {
  PcieTopology topology;
  std::map<std::string, PcieUplink> uplinks;
  for (const auto& [index, bus_id] : gpus) {
    auto location = locate_pcie_gpu(sysfs_root, pci_sysfs_name(bus_id));
    if (!location) continue;
    PcieUplink up = uplink_of(sysfs_root, *location);
    auto it = uplinks.find(up.id);
    if (it == uplinks.end()) it = uplinks.emplace(up.id, std::move(up)).first;
    it->second.gpus.push_back(index);
    topology.gpus.emplace_back(index, std::move(*location));
  }
  for (auto& [id, up] : uplinks) {
    std::sort(up.gpus.begin(), up.gpus.end());
    topology.uplinks.push_back(std::move(up));
  }
  return topology;
}

}  // namespace preflight
