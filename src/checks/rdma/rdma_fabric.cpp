// The compute fabric by what each GPU gets (rdma_fabric.hpp).
#include "checks/rdma/rdma_fabric.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "checks/rdma/rdma_findings.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

// Below this a NIC that is not compute is taken for management (BMC-side and in-band 1-40 GbE
// links); at or above it for storage (the DGX's 100-400 Gb/s storage and in-band cards).
constexpr double kStorageMinGbps = 100;

std::string gbit(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%g Gb/s", gbps);
  return text;
}

double fastest_up_rate(const RdmaDevice& d) {
  double best = 0;
  for (const RdmaPort& p : d.ports) {
    if (rdma_port_up(p)) best = std::max(best, rdma_port_rate(p));
  }
  return best;
}

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct RatedPort {
  std::string device;
  int port = 1;
  std::string transport;
  double rate = 0;
};

std::vector<RatedPort> rated_compute_ports(const std::vector<RdmaDevice>& compute) {
  std::vector<RatedPort> out;
  for (const RdmaDevice& d : compute) {
    if (!d.error.empty()) continue;
    for (const RdmaPort& p : d.ports) {
      const double rate = rdma_port_rate(p);
      if (rdma_port_up(p) && rate > 0) out.push_back({d.name, p.port_num, rdma_transport(d), rate});
    }
  }
  return out;
}

// The sum of the usable compute ports' rates of one device (a down port adds nothing).
double device_gbps(const RdmaDevice& d) {
  if (!d.error.empty()) return 0;
  double sum = 0;
  for (const RdmaPort& p : d.ports) {
    if (rdma_port_up(p)) sum += rdma_port_rate(p);
  }
  return sum;
}

bool explained_by(const std::vector<std::string>& explained, const RdmaDevice& d) {
  return std::any_of(explained.begin(), explained.end(), [&](const std::string& e) {
    return e == d.name || e.rfind(d.name + ":", 0) == 0;
  });
}

}  // namespace

std::string nic_role(const RdmaDevice& device, bool compute,
                     const std::vector<std::string>& fabric) {
  if (compute) return "compute";
  if (!device.bond_members.empty()) return "storage";  // DGX BasePOD: bonded in-band/storage
  const double rate = fastest_up_rate(device);
  if (rate <= 0) return "unknown";
  const bool on_fabric =
      std::find(fabric.begin(), fabric.end(), rdma_transport(device)) != fabric.end();
  return on_fabric && rate >= kStorageMinGbps ? "storage" : "management";
}

std::vector<std::string> judge_port_rates(const std::vector<RdmaDevice>& compute,
                                          const Thresholds& thresholds, const MachineShape* shape,
                                          std::vector<Finding>& findings) {
  const double minimum = thresholds.get("rdma.min_port_gbps");
  const double fraction = thresholds.get("rdma.sibling_fraction");
  const std::vector<RatedPort> ports = rated_compute_ports(compute);
  std::vector<std::string> slow;
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const RatedPort& p = ports[i];
    std::string detail;
    double limit = 0;
    if (minimum > 0 && p.rate < minimum) {
      detail = gbit(p.rate) + ", below the minimum of " + gbit(minimum) + " (rdma.min_port_gbps)";
      limit = minimum;
    } else if (shape != nullptr && shape->port_gbps > 0 && shape->transport_allowed(p.transport) &&
               p.rate < shape->port_gbps) {
      detail = gbit(p.rate) + ", below the " + gbit(shape->port_gbps) + " of the node shape " +
               shape->id + "'s compute ports";
      limit = shape->port_gbps;
    } else {
      // Siblings: the other compute ports of the same transport. A trained-down link drops a
      // whole speed grade or half its lanes (400 -> 200, 200 -> 100), so a share between the
      // two tells it from its siblings without a SKU, a shape or a thresholds file.
      std::vector<double> others;
      for (std::size_t j = 0; j < ports.size(); ++j) {
        if (j != i && ports[j].transport == p.transport) others.push_back(ports[j].rate);
      }
      const double median = median_of(others);
      if (!others.empty() && p.rate < fraction * median) {
        detail = gbit(p.rate) + ", below its " + std::to_string(others.size()) +
                 " sibling compute port" + (others.size() == 1 ? "" : "s") + " (median " +
                 gbit(median) + ", rdma.sibling_fraction " + gbit(fraction * median) + ")";
        limit = fraction * median;
      }
    }
    if (detail.empty()) continue;
    const std::string entity = rdma_port_entity(p.device, p.port);
    findings.push_back(make_finding(rdma_findings(), "RDMA_PORT_SLOW", entity, detail)
                           .measured(p.rate, "Gb/s", limit));
    slow.push_back(entity);
  }
  return slow;
}

void judge_gpu_reach(const RdmaReadings& readings,
                     const std::vector<const RdmaNicReading*>& compute, const MachineShape* shape,
                     const std::vector<std::string>& explained, std::vector<Finding>& findings) {
  if (shape == nullptr || !shape->has_rdma_fabric()) return;
  const double reach = shape->gpu_reach_gbps();
  const int gpus = readings.gpus.value_or(shape->gpus);
  if (reach <= 0 || gpus <= 0) return;

  // Each GPU's own compute NICs: those behind its PCIe switch. A NIC nearer no GPU, or whose
  // place is unknown, counts for the node only.
  std::map<int, std::vector<const RdmaDevice*>> own;
  double total = 0;
  bool any_explained = false;
  for (const RdmaNicReading* r : compute) {
    total += device_gbps(r->device);
    any_explained = any_explained || explained_by(explained, r->device);
    if (r->gpu_affinity == GpuAffinity::pcie_switch && r->device.nearest_gpu >= 0) {
      own[r->device.nearest_gpu].push_back(&r->device);
    }
  }
  bool gpu_found = false;
  for (const auto& [gpu, nics] : own) {
    double sum = 0;
    std::string names;
    bool known_cause = false;
    for (const RdmaDevice* d : nics) {
      sum += device_gbps(*d);
      names += (names.empty() ? "" : ", ") + d->name;
      known_cause = known_cause || explained_by(explained, *d);
    }
    if (sum >= reach || known_cause) continue;
    gpu_found = true;
    findings.push_back(make_finding(rdma_findings(), "RDMA_GPU_BANDWIDTH_LOW", gpu_entity(gpu),
                                    gpu_entity(gpu) + " reaches " + gbit(sum) +
                                        " over its own compute NICs (" + names +
                                        "); the node shape " + shape->id + " gives each GPU " +
                                        gbit(reach) + ": one of its NICs is missing or slow")
                           .measured(sum, "Gb/s", reach));
  }
  const double expected = reach * gpus;
  if (total < expected && !gpu_found && !any_explained) {
    findings.push_back(make_finding(rdma_findings(), "RDMA_FABRIC_BANDWIDTH_LOW", "node",
                                    "the compute NICs carry " + gbit(total) + " in all (" +
                                        std::to_string(compute.size()) + " NICs), the node shape " +
                                        shape->id + " expects " + gbit(expected) + " (" +
                                        std::to_string(gpus) + " GPUs x " + gbit(reach) +
                                        "): a compute NIC is missing or slow")
                           .measured(total, "Gb/s", expected));
  }
  if (own.empty()) {
    findings.push_back(make_finding(
        rdma_findings(), "RDMA_NOT_JUDGED", "node",
        "what each GPU reaches was not judged: no compute NIC's place on the PCIe tree is "
        "visible (a VM, or a container without /sys/bus/pci); the compute fabric was judged for "
        "the node as a whole (" +
            gbit(total) + " of " + gbit(expected) + ")"));
  }
}

const MachineShape* fabric_shape(const RdmaReadings& readings, const Thresholds& thresholds,
                                 std::string& why) {
  const MachineShape* shape = thresholds.node_shape();
  why.clear();
  if (shape == nullptr || !shape->has_rdma_fabric()) return shape;
  if (thresholds.node_shape_by().rfind("assumed", 0) != 0 || readings.devices.empty()) return shape;
  std::set<std::string> seen;
  for (const RdmaNicReading& r : readings.devices) {
    const std::string transport = rdma_transport(r.device);
    if (transport.empty() || shape->transport_allowed(transport)) return shape;
    seen.insert(transport);
  }
  std::string list;
  for (const std::string& t : seen) list += (list.empty() ? "" : ", ") + t;
  why = "the assumed node shape " + shape->id + " does not fit: its compute fabric is not " + list +
        ", which is all this node's RDMA devices are; judged without a node shape (name "
        "it with --node-shape)";
  return nullptr;
}

}  // namespace preflight
