// Host-side logic of the rdma check (rdma_math.hpp). Everything here is pure so that the check's
// judgements can be tested with made-up devices, without rdma-core or a NIC.
#include "checks/rdma/rdma_math.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <utility>

namespace preflight {
namespace {

// One ibv_port_attr speed encoding. The signalling rate is what the lane carries on the wire;
// the nominal rate is the round figure the tools print and that port rates are quoted in.
struct SpeedInfo {
  int encoding;
  const char* name;
  double signalling_gbps;
  double nominal_gbps;
};

// Encodings from rdma-core's enum ibv_port_speed; 256 (XDR) only fits the wider active_speed_ex.
constexpr SpeedInfo kSpeeds[] = {
    {1, "SDR", 2.5, 2.5},      {2, "DDR", 5.0, 5.0},        {4, "QDR", 10.0, 10.0},
    {8, "FDR10", 10.0, 10.0},  {16, "FDR", 14.0625, 14.0},  {32, "EDR", 25.78125, 25.0},
    {64, "HDR", 53.125, 50.0}, {128, "NDR", 106.25, 100.0}, {256, "XDR", 212.5, 200.0},
};

const SpeedInfo* find_speed(int active_speed) {
  for (const SpeedInfo& speed : kSpeeds) {
    if (speed.encoding == active_speed) return &speed;
  }
  return nullptr;
}

std::string link_rate_text(double gbps) {
  // %g: whole rates print without decimals ("400"), SDR keeps its half ("2.5").
  char text[32];
  std::snprintf(text, sizeof text, "%g Gb/s", gbps);
  return text;
}

std::string hex(int value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", static_cast<unsigned>(value));
  return text;
}

bool is_ethernet(const RdmaPort& port) {
  return port.link_layer == "Ethernet";
}

// RoCE traffic is addressed by GID, so an Ethernet port without one cannot carry a transfer.
bool port_usable(const RdmaPort& port) {
  return rdma_port_up(port) && (!is_ethernet(port) || port.usable_gid);
}

std::string or_unknown(const std::string& text) {
  return text.empty() ? "unknown" : text;
}

std::vector<std::string> path_components(const std::string& path) {
  // Empty components (a leading, doubled or trailing '/') are not part of the tree.
  std::vector<std::string> components;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) components.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return components;
}

std::size_t common_prefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

}  // namespace

double rdma_port_rate(const RdmaPort& port) {
  if (port.rate_gbps > 0) return port.rate_gbps;
  return rdma_port_rate_gbps(port.active_speed, port.active_width);
}

bool rdma_port_up(const RdmaPort& port) {
  return port.state == "ACTIVE" && port.phys_state == "LinkUp";
}

int rdma_width_lanes(int active_width) {
  switch (active_width) {
    case 1:
      return 1;
    case 2:
      return 4;
    case 4:
      return 8;
    case 8:
      return 12;
    case 16:
      return 2;
    default:
      return 0;
  }
}

double rdma_lane_gbps(int active_speed) {
  const SpeedInfo* speed = find_speed(active_speed);
  return speed != nullptr ? speed->signalling_gbps : 0.0;
}

double rdma_port_rate_gbps(int active_speed, int active_width) {
  const SpeedInfo* speed = find_speed(active_speed);
  const int lanes = rdma_width_lanes(active_width);
  if (speed == nullptr || lanes == 0) return 0.0;
  return speed->nominal_gbps * lanes;
}

std::string rdma_port_rate_name(int active_speed, int active_width) {
  const SpeedInfo* speed = find_speed(active_speed);
  const int lanes = rdma_width_lanes(active_width);
  std::string name = speed != nullptr ? speed->name : "speed " + hex(active_speed);
  name += lanes != 0 ? " " + std::to_string(lanes) + "x" : " width " + hex(active_width);
  if (speed != nullptr && lanes != 0) {
    name += " (" + link_rate_text(rdma_port_rate_gbps(active_speed, active_width)) + ")";
  }
  return name;
}

std::vector<PortJudgement> judge_ports(const std::vector<RdmaDevice>& devices,
                                       const RdmaExpectations& expect) {
  std::vector<PortJudgement> issues;
  for (const RdmaDevice& device : devices) {
    if (!device.error.empty()) continue;
    for (const RdmaPort& port : device.ports) {
      auto add = [&](PortIssue issue, std::string detail) {
        issues.push_back({device.name, port.port_num, issue, std::move(detail)});
      };
      if (!rdma_port_up(port)) {
        add(PortIssue::down,
            "state " + or_unknown(port.state) + ", physical " + or_unknown(port.phys_state));
        continue;
      }
      const double rate = rdma_port_rate(port);
      if (rate <= 0) {
        add(PortIssue::unknown_rate,
            "rate unknown (" + rdma_port_rate_name(port.active_speed, port.active_width) + ")");
      } else if (expect.min_port_gbps > 0 && rate < expect.min_port_gbps) {
        add(PortIssue::slow, link_rate_text(rate) + ", below the minimum of " +
                                 link_rate_text(expect.min_port_gbps));
      }
      if (is_ethernet(port) && !port.usable_gid) {
        add(PortIssue::no_gid, "no RoCE v2 GID with an IP address");
      }
    }
  }
  return issues;
}

std::vector<std::pair<std::string, int>> usable_ports(const std::vector<RdmaDevice>& devices) {
  std::vector<std::pair<std::string, int>> ports;
  for (const RdmaDevice& device : devices) {
    if (!device.error.empty()) continue;
    for (const RdmaPort& port : device.ports) {
      if (port_usable(port)) ports.emplace_back(device.name, port.port_num);
    }
  }
  return ports;
}

namespace {

// A device's first usable port: the endpoint of its NIC pairs and the row of its mesh cells.
struct Endpoint {
  const RdmaDevice* device;
  const RdmaPort* port;
};

// A one-sided operation the device can start and take: with neither (some EFA devices) it can
// move no verified bytes, so it gets no transfer.
bool moves_bytes(const RdmaDevice& device) {
  return device.rdma_write || device.rdma_read;
}

std::vector<Endpoint> endpoints_of(const std::vector<RdmaDevice>& devices) {
  std::vector<Endpoint> firsts;
  for (const RdmaDevice& device : devices) {
    if (!device.error.empty() || !moves_bytes(device)) continue;
    for (const RdmaPort& port : device.ports) {
      if (!port_usable(port)) continue;
      firsts.push_back({&device, &port});
      break;
    }
  }
  return firsts;
}

// A transfer between two ports of the same device (a loopback, a mesh cell).
PlannedTransfer loopback_on(const RdmaDevice& device, const RdmaPort& port, std::string entity,
                            const char* kind) {
  PlannedTransfer t;
  t.from_device = t.to_device = device.name;
  t.from_port = t.to_port = port.port_num;
  t.op = device.rdma_write ? RdmaOp::write : RdmaOp::read;
  t.expected_gbps = rdma_port_rate(port);
  t.entity = std::move(entity);
  t.kind = kind;
  return t;
}

// The pair from -> to, or nothing when the two cannot connect (InfiniBand and RoCE) or share no
// one-sided operation (the sender starts it, the receiver's memory is its target).
void add_pair(const Endpoint& from, const Endpoint& to, std::vector<PlannedTransfer>& plan) {
  if (from.device == to.device || is_ethernet(*from.port) != is_ethernet(*to.port)) return;
  const bool write = from.device->rdma_write && to.device->rdma_write;
  const bool read = from.device->rdma_read && to.device->rdma_read;
  if (!write && !read) return;
  PlannedTransfer t;
  t.from_device = from.device->name;
  t.from_port = from.port->port_num;
  t.to_device = to.device->name;
  t.to_port = to.port->port_num;
  t.op = write ? RdmaOp::write : RdmaOp::read;
  // An unknown rate (0) on either side leaves the pair unjudged, as min() keeps the 0.
  t.expected_gbps = std::min(rdma_port_rate(*from.port), rdma_port_rate(*to.port));
  t.entity = rdma_pair_entity(from.device->name, to.device->name);
  t.kind = "pair";
  plan.push_back(std::move(t));
}

// Where NIC `row` starts counting a part's cells: the position of its own cell (`own`) among
// `cells`, else its row, so that NICs of unknown place still spread over the cells.
int home_of(const std::vector<int>& cells, int own, int row) {
  const auto at = std::find(cells.begin(), cells.end(), own);
  if (own >= 0 && at != cells.end()) return static_cast<int>(at - cells.begin());
  return row % static_cast<int>(cells.size());
}

// The shifts of a part of `count` shifts that a run covers: `wanted`, or every one.
std::vector<int> shifts_of(const std::optional<std::vector<int>>& wanted, int count) {
  std::vector<int> out;
  if (!wanted) {
    for (int k = 0; k < count; ++k) out.push_back(k);
    return out;
  }
  for (int k : *wanted) {
    if (k >= 0 && k < count) out.push_back(k);
  }
  return out;
}

}  // namespace

std::string rdma_pair_entity(const std::string& from_device, const std::string& to_device) {
  return from_device + "-" + to_device;
}

std::string rdma_numa_entity(const std::string& device, int numa_node) {
  return device + "-numa" + std::to_string(numa_node);
}

std::string rdma_gpu_entity(const std::string& device, int gpu_index) {
  return device + "-gpu" + std::to_string(gpu_index);
}

int rdma_extra_loopbacks(const std::vector<RdmaDevice>& devices) {
  int extra = 0;
  for (const Endpoint& e : endpoints_of(devices)) {
    for (const RdmaPort& port : e.device->ports) {
      if (&port != e.port && port_usable(port)) ++extra;
    }
  }
  return extra;
}

std::vector<std::string> rdma_pair_endpoints(const std::vector<RdmaDevice>& devices) {
  std::vector<std::string> names;
  for (const Endpoint& e : endpoints_of(devices)) names.push_back(e.device->name);
  return names;
}

std::vector<PlannedTransfer> plan_transfers(const std::vector<RdmaDevice>& devices,
                                            const RdmaMesh& mesh, const RdmaCoverage& coverage) {
  std::vector<PlannedTransfer> plan;
  const std::vector<Endpoint> firsts = endpoints_of(devices);
  const bool numa_mesh = mesh.numa_nodes.size() >= 2;
  const std::vector<int> numa_shifts = shifts_of(coverage.numa_shifts, mesh.host_cells());
  const std::vector<int> gpu_shifts = shifts_of(coverage.gpu_shifts, mesh.gpu_cells());

  for (std::size_t row = 0; row < firsts.size(); ++row) {
    const RdmaDevice& device = *firsts[row].device;
    const RdmaPort& first = *firsts[row].port;
    for (int k : numa_shifts) {
      if (!numa_mesh) {
        plan.push_back(
            loopback_on(device, first, rdma_port_entity(device.name, first.port_num), "loopback"));
        continue;
      }
      const int home = home_of(mesh.numa_nodes, device.numa_node, static_cast<int>(row));
      const int node = mesh.numa_nodes[static_cast<std::size_t>((home + k) % mesh.host_cells())];
      PlannedTransfer t =
          loopback_on(device, first, rdma_numa_entity(device.name, node), "loopback");
      t.host_numa_node = node;
      plan.push_back(std::move(t));
    }
    // A further port has no mesh of its own: its loopback shows the port, every run.
    for (const RdmaPort& port : device.ports) {
      if (&port == &first || !port_usable(port)) continue;
      plan.push_back(
          loopback_on(device, port, rdma_port_entity(device.name, port.port_num), "loopback"));
    }
  }

  if (!coverage.pairs) {
    for (const Endpoint& from : firsts) {
      for (const Endpoint& to : firsts) add_pair(from, to, plan);
    }
  } else {
    const auto n = static_cast<int>(firsts.size());
    for (const auto& [a, b] : *coverage.pairs) {
      if (a < 0 || b < 0 || a >= n || b >= n) continue;
      add_pair(firsts[static_cast<std::size_t>(a)], firsts[static_cast<std::size_t>(b)], plan);
    }
  }

  for (std::size_t row = 0; row < firsts.size() && mesh.gpu_cells() > 0; ++row) {
    const RdmaDevice& device = *firsts[row].device;
    const int home = home_of(mesh.gpus, device.nearest_gpu, static_cast<int>(row));
    for (int k : gpu_shifts) {
      const int gpu = mesh.gpus[static_cast<std::size_t>((home + k) % mesh.gpu_cells())];
      PlannedTransfer t =
          loopback_on(device, *firsts[row].port, rdma_gpu_entity(device.name, gpu), "gpudirect");
      t.memory = RdmaMemory::gpu;
      t.gpu_index = gpu;
      plan.push_back(std::move(t));
    }
  }
  return plan;
}

std::vector<int> parse_numa_node_list(const std::string& text) {
  // The kernel's list format (Documentation/admin-guide/cputopology.rst): ranges "a-b" and
  // single numbers, separated by commas, one line.
  constexpr int kMostNodes = 256;
  constexpr int kHighestNode = 4095;  // what the readings accept (rdma_readings.cpp)
  std::vector<int> nodes;
  std::size_t at = 0;
  const std::size_t last_char = text.find_last_not_of(" \n");
  const std::size_t end = last_char == std::string::npos ? 0 : last_char + 1;
  const auto number = [&](int& out) {
    const std::size_t from = at;
    long value = 0;
    while (at < end && text[at] >= '0' && text[at] <= '9' && value <= kHighestNode) {
      value = value * 10 + (text[at++] - '0');
    }
    out = static_cast<int>(value);
    return at > from && value <= kHighestNode;
  };
  while (at < end) {
    int first = 0;
    if (!number(first)) return {};
    int last = first;
    if (at < end && text[at] == '-') {
      ++at;
      if (!number(last) || last < first) return {};
    }
    if (last - first >= kMostNodes) return {};
    for (int node = first; node <= last; ++node) {
      if (!nodes.empty() && node <= nodes.back()) return {};  // listed in order, once
      nodes.push_back(node);
    }
    if (static_cast<int>(nodes.size()) > kMostNodes) return {};
    if (at < end && text[at++] != ',') return {};
    if (at == end && text[end - 1] == ',') return {};
  }
  return nodes;
}

TransferClass classify_transfer(double gbps, double expected_gbps, double fail_fraction,
                                double warn_fraction) {
  if (!(expected_gbps > 0)) return TransferClass::ok;
  // Written as !(a >= b) so that a NaN measurement fails rather than passes.
  if (!(gbps >= fail_fraction * expected_gbps)) return TransferClass::fail;
  if (!(gbps >= warn_fraction * expected_gbps)) return TransferClass::warn;
  return TransferClass::ok;
}

int nearest_gpu(const std::string& nic_sysfs_path, int nic_numa_node,
                const std::vector<GpuLocation>& gpus) {
  const std::vector<std::string> nic = path_components(nic_sysfs_path);
  const GpuLocation* best = nullptr;
  std::size_t best_prefix = 0;
  bool best_same_numa = false;
  for (const GpuLocation& gpu : gpus) {
    const std::size_t prefix = common_prefix(nic, path_components(gpu.sysfs_path));
    // An unknown NUMA node (-1) matches nothing, not another unknown one.
    const bool same_numa = nic_numa_node >= 0 && gpu.numa_node == nic_numa_node;
    const bool better =
        best == nullptr || prefix > best_prefix ||
        (prefix == best_prefix &&
         (same_numa > best_same_numa || (same_numa == best_same_numa && gpu.index < best->index)));
    if (better) {
      best = &gpu;
      best_prefix = prefix;
      best_same_numa = same_numa;
    }
  }
  return best != nullptr ? best->index : -1;
}

std::string gpu_affinity_name(GpuAffinity affinity) {
  switch (affinity) {
    case GpuAffinity::pcie_switch:
      return "switch";
    case GpuAffinity::root:
      return "root";
    case GpuAffinity::numa:
      return "numa";
    case GpuAffinity::none:
      return "none";
    case GpuAffinity::unknown:
      break;
  }
  return "";
}

std::optional<GpuAffinity> parse_gpu_affinity(const std::string& text) {
  for (GpuAffinity a :
       {GpuAffinity::pcie_switch, GpuAffinity::root, GpuAffinity::numa, GpuAffinity::none}) {
    if (text == gpu_affinity_name(a)) return a;
  }
  return std::nullopt;
}

GpuAffinity gpu_affinity(const std::string& nic_sysfs_path, int nic_numa_node,
                         const GpuLocation& gpu) {
  const std::vector<std::string> nic = path_components(nic_sysfs_path);
  const std::vector<std::string> other = path_components(gpu.sysfs_path);
  // Where the PCI tree starts: the host bridge, "pci0000:15". Anything before it is the sysfs
  // mount ("/sys/devices"), which both must share for the comparison to mean anything.
  const auto host_bridge = [](const std::vector<std::string>& c) {
    for (std::size_t i = 0; i < c.size(); ++i) {
      if (c[i].rfind("pci", 0) == 0) return i;
    }
    return c.size();
  };
  const std::size_t start = host_bridge(nic);
  if (start == nic.size() || host_bridge(other) != start) return GpuAffinity::unknown;
  const std::size_t shared = common_prefix(nic, other);
  if (shared < start) return GpuAffinity::unknown;  // different sysfs roots
  const std::size_t shared_pci = shared - start;
  if (shared_pci >= 2) return GpuAffinity::pcie_switch;  // host bridge and root port
  if (shared_pci == 1) return GpuAffinity::root;
  const bool same_numa = nic_numa_node >= 0 && nic_numa_node == gpu.numa_node;
  return same_numa ? GpuAffinity::numa : GpuAffinity::none;
}

}  // namespace preflight
