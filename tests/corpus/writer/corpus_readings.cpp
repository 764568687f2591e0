#include "corpus/writer/corpus_readings.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "checks/common/entities.hpp"
#include "preflight/errors.hpp"

namespace preflight::corpus {

namespace {

// The gemm check's shape and count on a quick run: what a healthy node records.
constexpr int kGemmSize = 8192;
constexpr std::size_t kGemmProducts = 20;
constexpr int kCopySamples = 3;
constexpr std::uint64_t kPatternBytes = std::uint64_t{2} << 30;
constexpr std::size_t kNcclBytes = 268435456;  // 256 MiB
constexpr int kNcclIterations = 10;

std::uint16_t device_id(const NodeFacts& node) {
  char* end = nullptr;
  const unsigned long id = std::strtoul(node.pci_device_id.c_str(), &end, 16);
  if (node.pci_device_id.compare(0, 2, "0x") != 0 || *end != '\0' || id > 0xffff) {
    throw InvalidInput("pci_device_id: expected a PCI device id such as \"0x2330\", got \"" +
                       node.pci_device_id + "\"");
  }
  return static_cast<std::uint16_t>(id);
}

std::size_t position_of(const NodeFacts& node, const std::string& peer) {
  char* end = nullptr;
  const unsigned long position = std::strtoul(peer.c_str(), &end, 10);
  if (peer.empty() || *end != '\0' || position >= node.gpus.size()) {
    throw InvalidInput("nvlink.peers: \"" + peer + "\" is not the position of a GPU");
  }
  return position;
}

PcieStats stats(double gbps) {
  return PcieStats{gbps, gbps, kCopySamples};
}

}  // namespace

InventoryReadings inventory_readings(const NodeFacts& node) {
  InventoryReadings r;
  r.expect.gpus = static_cast<int>(node.gpus.size());
  NodeReading& n = r.node;
  n.driver_version = kDriverVersion;
  n.cuda_driver_version = kCudaVersion;
  n.cuda_runtime_version = kCudaVersion;
  n.nvml_loaded = true;
  n.cuda_device_count = static_cast<int>(node.gpus.size());
  n.pci_gpu_count = static_cast<int>(node.gpus.size());
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuFacts& f = node.gpus[i];
    GpuReading g;
    g.index = f.index;
    g.name = node.gpu_name;
    g.uuid = "GPU-corpus-" + node.node + "-" + std::to_string(i);
    g.pci_bus_id = f.bus_id;
    g.pci_device_id = device_id(node);
    g.cuda_ordinal = f.index;
    g.mig_enabled = false;
    g.ecc_enabled = true;
    g.persistence_enabled = true;
    g.ecc_uncorrected_volatile = 0;
    g.ecc_uncorrected_aggregate = 0;
    g.ecc_corrected_volatile = 0;
    g.retired_pages_pending = false;
    g.row_remap_pending = false;
    g.row_remap_failed = false;
    g.clock_event_reasons = clock_event::kGpuIdle;
    g.temperature_c = kIdleTemperatureC;
    // An idle link may train down; a healthy one reads its maximum here, as the sources give it.
    g.pcie_gen_current = f.pcie_gen_max;
    g.pcie_gen_max_link = f.pcie_gen_max;
    g.pcie_gen_max_gpu = f.pcie_gen_max;
    g.pcie_width_current = f.pcie_width_max;
    g.pcie_width_max = f.pcie_width_max;
    if (f.nvlink_links) {
      g.nvlink_active = f.nvlink_links;
      g.nvlink_supported = f.nvlink_links;
      g.nvlink_switch_links = f.nvlink_to_switch ? *f.nvlink_links : 0;
      for (const auto& [peer, links] : f.nvlink_peers) {
        const std::string& peer_bus_id = node.gpus[position_of(node, peer)].bus_id;
        g.nvlink_peer_bus_ids.insert(g.nvlink_peer_bus_ids.end(), links, peer_bus_id);
      }
    }
    g.foreign_processes = 0;
    g.foreign_memory_mib = 0;
    g.responsive = true;
    g.probe_ms = kProbeMs;
    n.gpus.push_back(std::move(g));
  }
  return r;
}

GemmReadings gemm_readings(const NodeFacts& node, double tflops) {
  GemmReadings r;
  for (const GpuFacts& f : node.gpus) {
    GemmGpuReading g;
    g.gpu_index = f.index;
    g.model = node.gpu_name;
    g.dtype = GemmDtype::bf16;
    g.status = GemmRunStatus::completed;
    g.m = g.n = g.k = kGemmSize;
    g.products = kGemmProducts;
    g.tflops = GemmTflops{tflops, tflops, tflops};
    r.gpus.push_back(std::move(g));
  }
  return r;
}

PcieReadings pcie_readings(const NodeFacts& node, double h2d_gbps, double d2h_gbps,
                           const std::vector<std::pair<double, double>>& all_at_once) {
  if (!all_at_once.empty() && all_at_once.size() != node.gpus.size()) {
    throw InvalidInput("pcie_all_at_once: expected one (h2d, d2h) pair per GPU");
  }
  PcieReadings r;
  // The uplinks in the order their first GPU appears, with that GPU's uplink link.
  struct Uplink {
    PcieUplinkReadings readings;
    std::optional<LinkFacts> link;
  };
  std::vector<Uplink> uplinks;
  std::map<std::string, std::size_t> uplink_of_switch;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    const GpuFacts& f = node.gpus[i];
    PcieGpuReadings g;
    g.index = f.index;
    g.bus_id = f.bus_id;
    g.numa_node = f.numa_node;
    g.link.gen_current = g.link.gen_max_link = g.link.gen_max_gpu = f.pcie_gen_max;
    g.link.width_current = g.link.width_max = f.pcie_width_max;
    g.alone.h2d = stats(h2d_gbps);
    g.alone.d2h = stats(d2h_gbps);
    if (!f.pcie_switch.empty()) {
      auto found = uplink_of_switch.find(f.pcie_switch);
      if (found == uplink_of_switch.end()) {
        // Root port and the switch's upstream port below it: placeholders where the source
        // names the switch but not its bus numbers.
        const int bus = 0x10 + 0x10 * static_cast<int>(uplinks.size());
        char root[16];
        char device[16];
        std::snprintf(root, sizeof root, "0000:%02x:01.0", static_cast<unsigned>(bus));
        std::snprintf(device, sizeof device, "0000:%02x:00.0", static_cast<unsigned>(bus + 1));
        Uplink u;
        u.readings.id = f.root_port.empty() ? std::string(root) : f.root_port;
        u.readings.device = device;
        u.link = f.uplink;
        found = uplink_of_switch.emplace(f.pcie_switch, uplinks.size()).first;
        uplinks.push_back(std::move(u));
      }
      Uplink& u = uplinks[found->second];
      u.readings.gpus.push_back(node.entity(i));
      g.root_port = u.readings.id;
      if (u.link) {
        // The slowest link on the way up to the root port: a Gen5 GPU behind a Gen4 switch
        // cannot copy faster than Gen4.
        g.path_gen_max = std::min(u.link->gen, f.pcie_gen_max);
        g.path_width_max = std::min(u.link->width, f.pcie_width_max);
      }
    }
    if (!all_at_once.empty()) {
      g.all_at_once.h2d = stats(all_at_once[i].first);
      g.all_at_once.d2h = stats(all_at_once[i].second);
    }
    r.gpus.push_back(std::move(g));
  }
  for (Uplink& u : uplinks) {
    // Without a published uplink, the link the GPUs themselves train to, x16.
    const LinkFacts link = u.link.value_or(LinkFacts{node.gpus.front().pcie_gen_max, 16});
    u.readings.gen_current = u.readings.gen_max = link.gen;
    u.readings.width_current = u.readings.width_max = link.width;
    r.uplinks.push_back(std::move(u.readings));
  }
  r.topology = r.uplinks.empty() ? "unknown" : "sysfs";
  return r;
}

NvlinkReadings nvlink_readings(const NodeFacts& node, double pair_gbps) {
  NvlinkReadings r;
  // The topology as the inventory check reads it.
  for (const GpuReading& g : inventory_readings(node).node.gpus) {
    NvlinkGpu e;
    e.index = g.index;
    e.pci_bus_id = g.pci_bus_id;
    e.nvlink_active = g.nvlink_active;
    e.nvlink_supported = g.nvlink_supported;
    e.nvlink_switch_links = g.nvlink_switch_links;
    e.nvlink_peer_bus_ids = g.nvlink_peer_bus_ids;
    r.gpus.push_back(std::move(e));
  }
  const std::size_t size = r.gpus.size();
  // Every pair has peer access and was copied at the one figure; the bidirectional copies
  // were not measured.
  r.peer_access.assign(size, std::vector<bool>(size, true));
  r.unidirectional_gbps.assign(size, std::vector<std::optional<double>>(size, pair_gbps));
  r.bidirectional_gbps.assign(size, std::vector<std::optional<double>>(size));
  for (std::size_t i = 0; i < size; ++i) {
    r.peer_access[i][i] = false;
    r.unidirectional_gbps[i][i] = std::nullopt;
  }
  return r;
}

HbmReadings hbm_readings(const NodeFacts& node, double traffic_gbps) {
  HbmReadings r;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    HbmGpuReading g;
    g.gpu = node.entity(i);
    // A copy reads and writes every byte: the traffic is twice the copy rate.
    g.copy = HbmCopyReading{traffic_gbps / 2, traffic_gbps, kCopySamples};
    HbmPatternReading pattern;
    pattern.bytes = kPatternBytes;
    pattern.passes = 1;
    g.pattern = pattern;
    r.gpus.push_back(std::move(g));
  }
  return r;
}

NcclReadings nccl_readings(const NodeFacts& node, std::optional<double> allgather_busbw_gbps,
                           std::optional<double> allreduce_busbw_gbps) {
  NcclReadings r;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) r.gpus.push_back(node.entity(i));
  r.sizes_planned = {kNcclBytes};
  r.iterations = kNcclIterations;
  const std::pair<CollectiveOp, std::optional<double>> figures[] = {
      {CollectiveOp::all_gather, allgather_busbw_gbps},
      {CollectiveOp::all_reduce, allreduce_busbw_gbps}};
  for (const auto& [op, busbw] : figures) {
    if (!busbw) continue;
    NcclCollectiveReading c;
    c.op = op;
    c.initialized = true;
    NcclSizeReading size;
    size.bytes = kNcclBytes;
    size.busbw_gbps = *busbw;
    c.sizes.push_back(size);
    c.corrupt_elements = 0;
    c.verified = true;
    r.collectives.push_back(std::move(c));
  }
  return r;
}

RdmaReadings rdma_readings(const NodeFacts& node) {
  RdmaReadings r;
  r.gpus = static_cast<int>(node.gpus.size());
  for (const NicFacts& nic : node.nics) {
    if (nic.ports.empty() || nic.name.empty()) continue;
    RdmaNicReading reading;
    RdmaDevice& d = reading.device;
    d.name = nic.name;
    d.pci_bus_id = nic.pci_bus_id;
    d.numa_node = nic.numa_node.value_or(-1);
    if (nic.pcie) {
      d.pcie_gen = d.pcie_max_gen = nic.pcie->gen;
      d.pcie_width = d.pcie_max_width = nic.pcie->width;
    }
    for (const PortFacts& p : nic.ports) {
      RdmaPort port;
      port.port_num = p.port;
      port.state = p.state;
      port.phys_state = p.phys_state;
      port.rate_gbps = p.rate_gbps;
      port.link_layer = p.link_layer;
      port.usable_gid = p.state == "ACTIVE";
      d.ports.push_back(std::move(port));
    }
    d.transport = nic.transport;
    d.bond_members = nic.bond_members;
    // From a container without /sys/bus/pci, or in a VM whose NICs are virtual functions, the
    // run cannot see where a NIC sits among the GPUs: no nearest GPU, affinity unknown.
    if (node.view != NodeView::host) {
      r.devices.push_back(std::move(reading));
      continue;
    }
    // The nearest GPU: the first behind the same PCIe switch; otherwise the affinity given.
    const auto near = std::find_if(node.gpus.begin(), node.gpus.end(), [&](const GpuFacts& g) {
      return !nic.pcie_switch.empty() && g.pcie_switch == nic.pcie_switch;
    });
    if (near != node.gpus.end()) {
      d.nearest_gpu = near->index;
      reading.gpu_affinity = GpuAffinity::pcie_switch;
    } else if (!nic.affinity.empty()) {
      const auto affinity = parse_gpu_affinity(nic.affinity);
      if (!affinity) {
        throw InvalidInput("nics: " + nic.name + ": affinity: expected \"switch\", \"root\", " +
                           "\"numa\" or \"none\", got \"" + nic.affinity + "\"");
      }
      reading.gpu_affinity = *affinity;
    }
    r.devices.push_back(std::move(reading));
  }
  return r;
}

}  // namespace preflight::corpus
