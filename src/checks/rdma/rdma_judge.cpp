// judge_rdma (rdma_judge.hpp): the compute fabric told apart from the other NICs, then judged.
#include "checks/rdma/rdma_judge.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "checks/common/pci_link.hpp"
#include "checks/rdma/rdma_fabric.hpp"
#include "checks/rdma/rdma_findings.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

std::string format_gbit(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f Gb/s", gbps);
  return text;
}

std::string format_rate(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%g Gb/s", gbps);
  return text;
}

// A device's fastest active port, for the fabric rule; nullptr when none is up.
const RdmaPort* fastest_up(const RdmaDevice& d) {
  const RdmaPort* best = nullptr;
  for (const RdmaPort& p : d.ports) {
    if (rdma_port_up(p) && (best == nullptr || rdma_port_rate(p) > rdma_port_rate(*best)))
      best = &p;
  }
  return best;
}

std::string layer_name(const std::string& layer) {
  return layer.empty() ? "an unknown link layer" : layer;
}

std::string affinity_phrase(const RdmaNicReading& r) {
  const bool located = r.device.nearest_gpu >= 0;
  const std::string gpu = located ? "nearest " + gpu_entity(r.device.nearest_gpu) : "nearest GPU";
  switch (r.gpu_affinity) {
    case GpuAffinity::root:
      return gpu + " shares only its host bridge";
    case GpuAffinity::numa:
      return gpu + " is on its NUMA node, under another host bridge";
    case GpuAffinity::none:
      return gpu + " is on another NUMA node";
    case GpuAffinity::pcie_switch:
    case GpuAffinity::unknown:
      break;
  }
  return located ? gpu + ", PCIe path unknown" : "no GPU located near it";
}

// The fabric rule's link layer: the one most NICs' fastest active ports run on (a tie goes to
// the layer with the faster port, then to the first by name). false when no port is up.
bool fabric_of(const std::vector<RdmaNicReading>& devices, NicSelection& s) {
  std::map<std::string, std::pair<int, double>> layers;  // layer -> (NICs, fastest port)
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (!s.compute[i]) continue;  // excluded already (a transport the node shape lacks)
    const RdmaNicReading& r = devices[i];
    const RdmaPort* p = r.device.error.empty() ? fastest_up(r.device) : nullptr;
    if (p == nullptr) continue;
    auto& entry = layers[p->link_layer];
    ++entry.first;
    entry.second = std::max(entry.second, rdma_port_rate(*p));
  }
  int best_count = 0;
  double best_rate = 0;
  for (const auto& [layer, entry] : layers) {
    if (entry.first > best_count || (entry.first == best_count && entry.second > best_rate)) {
      best_count = entry.first;
      best_rate = entry.second;
      s.fabric_link_layer = layer;
    }
  }
  return best_count > 0;
}

// Rate does not decide: a compute NIC that trained down (100 Gb/s on a 200 Gb/s HDR fabric)
// must fail RDMA_PORT_SLOW, and without the PCIe tree it cannot be told from a slower storage
// port of the same link layer (docs/checks/rdma.md, "How topology enters").
void select_by_fabric(const std::vector<RdmaNicReading>& devices, NicSelection& s) {
  s.any_port_up = fabric_of(devices, s);
  const std::string why = ", while the compute fabric is taken to be the " +
                          layer_name(s.fabric_link_layer) +
                          " NICs (no NIC shares a PCIe switch with a GPU)";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const RdmaDevice& d = devices[i].device;
    // Unknown (no port up anywhere, a device that could not be read): counted as compute, so
    // a dead NIC is judged rather than excused.
    if (!s.compute[i] || !s.any_port_up || !d.error.empty()) continue;
    if (const RdmaPort* p = fastest_up(d)) {
      if (p->link_layer == s.fabric_link_layer) continue;
      s.compute[i] = false;
      s.reason[i] = "its fastest active port is " + layer_name(p->link_layer) + why;
      continue;
    }
    // Every port down. A port of the other link layer cannot be on this fabric (InfiniBand and
    // RoCE do not connect); any other dead NIC may be a compute NIC and is judged.
    const bool foreign =
        !d.ports.empty() && std::all_of(d.ports.begin(), d.ports.end(), [&](const RdmaPort& q) {
          return !q.link_layer.empty() && q.link_layer != s.fabric_link_layer;
        });
    if (foreign) {
      s.compute[i] = false;
      s.reason[i] = "its ports are down and " + d.ports.front().link_layer + why;
    }
  }
}

// The NIC's PCIe link must carry its fastest port, and run as NIC and slot can.
void judge_pcie(const RdmaDevice& d, std::vector<Finding>& findings) {
  if (!d.pcie_gen || !d.pcie_width) return;
  double fastest = 0;
  for (const RdmaPort& p : d.ports) fastest = std::max(fastest, rdma_port_rate(p));
  const double link_gbit = pcie_link_gbps(*d.pcie_gen, *d.pcie_width) * 8.0;
  const bool below_max = (d.pcie_max_gen && *d.pcie_gen < *d.pcie_max_gen) ||
                         (d.pcie_max_width && *d.pcie_width < *d.pcie_max_width);
  const bool starved = fastest > 0 && link_gbit < fastest;
  if (!below_max && !starved) return;
  std::string text = "PCIe link " + pcie_link_name(*d.pcie_gen, *d.pcie_width);
  if (d.pcie_max_gen && d.pcie_max_width) {
    text += " (the NIC and slot can do " + pcie_link_name(*d.pcie_max_gen, *d.pcie_max_width) + ")";
  }
  text += " carries " + format_gbit(link_gbit) + " raw";
  if (fastest > 0) text += " for a " + format_gbit(fastest) + " port";
  findings.push_back(make_finding(rdma_findings(), "RDMA_PCIE_DEGRADED", d.name, text)
                         .measured(link_gbit, "Gb/s", fastest));
}

// What an other NIC is, for its info finding: why it is not compute, its ports, and a PCIe link
// below what it can do (reported, not judged: see docs/checks/rdma.md).
std::string other_nic_text(const RdmaDevice& d, const std::string& reason) {
  std::string text = "not a compute NIC: " + reason + "; ports:";
  if (d.ports.empty()) text += " none";
  for (std::size_t i = 0; i < d.ports.size(); ++i) {
    const RdmaPort& p = d.ports[i];
    text += (i == 0 ? " " : ", ") + std::to_string(p.port_num) + " " +
            (p.state.empty() ? "unknown" : p.state) + "/" +
            (p.phys_state.empty() ? "unknown" : p.phys_state);
    if (rdma_port_up(p) && rdma_port_rate(p) > 0) text += " " + format_rate(rdma_port_rate(p));
    if (!p.link_layer.empty()) text += " " + p.link_layer;
  }
  if (d.pcie_gen && d.pcie_width && d.pcie_max_gen && d.pcie_max_width &&
      (*d.pcie_gen < *d.pcie_max_gen || *d.pcie_width < *d.pcie_max_width)) {
    text += "; PCIe link " + pcie_link_name(*d.pcie_gen, *d.pcie_width) + " of " +
            pcie_link_name(*d.pcie_max_gen, *d.pcie_max_width);
  }
  return text + "; not judged, no transfers";
}

// Down, without a GID, or of unknown rate; the rates are judge_port_rates' (rdma_fabric.hpp).
// Returns the entities of the ports found down.
std::vector<std::string> judge_ports_of(const std::vector<RdmaDevice>& compute,
                                        std::vector<Finding>& findings) {
  std::vector<std::string> down;
  for (const PortJudgement& j : judge_ports(compute, RdmaExpectations{})) {
    const std::string entity = rdma_port_entity(j.device, j.port);
    switch (j.issue) {
      case PortIssue::down:
        findings.push_back(make_finding(rdma_findings(), "RDMA_PORT_DOWN", entity, j.detail));
        down.push_back(entity);
        break;
      case PortIssue::slow:
        findings.push_back(make_finding(rdma_findings(), "RDMA_PORT_SLOW", entity, j.detail));
        break;
      case PortIssue::no_gid:
        findings.push_back(make_finding(rdma_findings(), "RDMA_NO_GID", entity, j.detail));
        break;
      case PortIssue::unknown_rate:
        findings.push_back(make_finding(rdma_findings(), "RDMA_RATE_UNKNOWN", entity, j.detail));
        break;
      case PortIssue::none:
        break;
    }
  }
  return down;
}

void judge_transfer_rate(const RdmaTransferReading& t, const Thresholds& thresholds,
                         std::vector<Finding>& findings) {
  const RdmaTransferResult& r = t.result;
  // One that failed or hung is an observation the run reported; it has no rate to judge.
  if (r.timed_out || !r.error.empty()) return;
  const double fail = thresholds.get("rdma.fail_fraction");
  const double warn = thresholds.get("rdma.warn_fraction");
  const TransferClass c = classify_transfer(r.gbps, t.planned.expected_gbps, fail, warn);
  if (c == TransferClass::ok) return;
  const std::string text = describe_transfer(t.planned) + ": " + format_gbit(r.gbps) + " of a " +
                           format_gbit(t.planned.expected_gbps) + " port" +
                           (r.registration.empty() ? "" : " (" + r.registration + ")");
  Finding f = make_finding(
      rdma_findings(), c == TransferClass::fail ? "RDMA_BANDWIDTH_LOW" : "RDMA_BANDWIDTH_MARGINAL",
      t.planned.entity, text);
  f.measured(r.gbps, "Gb/s", t.planned.expected_gbps * (c == TransferClass::fail ? fail : warn));
  f.injected = t.injected_slow_factor.has_value();
  findings.push_back(std::move(f));
}

// Without a visible PCIe tree the fabric rule takes every NIC of the majority link layer, a
// storage port of the same layer included (a DGX's InfiniBand storage port at 100 Gb/s, or
// disabled). The shape says how many compute ports there are: the fastest that many are kept.
void cap_to_shape(const std::vector<RdmaNicReading>& devices, const MachineShape& shape,
                  NicSelection& s) {
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (s.compute[i]) chosen.push_back(i);
  }
  const auto ports = [&](std::size_t i) { return devices[i].device.ports.size(); };
  std::size_t total = 0;
  for (std::size_t i : chosen) total += ports(i);
  if (total <= static_cast<std::size_t>(shape.compute_ports)) return;
  std::stable_sort(chosen.begin(), chosen.end(), [&](std::size_t a, std::size_t b) {
    const RdmaPort* pa = fastest_up(devices[a].device);
    const RdmaPort* pb = fastest_up(devices[b].device);
    return (pa ? rdma_port_rate(*pa) : -1.0) > (pb ? rdma_port_rate(*pb) : -1.0);
  });
  std::size_t kept = 0;
  for (std::size_t i : chosen) {
    if (kept + ports(i) <= static_cast<std::size_t>(shape.compute_ports)) {
      kept += ports(i);
      continue;
    }
    s.compute[i] = false;
    s.reason[i] = "beyond the node shape " + shape.id + "'s " +
                  std::to_string(shape.compute_ports) +
                  " compute ports: with no NIC's place on the PCIe tree visible the fastest of "
                  "the " +
                  layer_name(s.fabric_link_layer) + " NICs are taken for compute";
  }
}

// The transports of the compute NICs, for the other NICs' roles.
std::vector<std::string> compute_transports(const std::vector<RdmaNicReading>& devices,
                                            const NicSelection& s) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const std::string t = rdma_transport(devices[i].device);
    if (s.compute[i] && !t.empty() && std::find(out.begin(), out.end(), t) == out.end()) {
      out.push_back(t);
    }
  }
  return out;
}

}  // namespace

NicSelection select_compute_nics(const std::vector<RdmaNicReading>& devices,
                                 const std::vector<std::string>& listed,
                                 const MachineShape* shape) {
  NicSelection s;
  s.compute.assign(devices.size(), true);
  s.reason.assign(devices.size(), "");
  if (!listed.empty()) {
    s.rule = NicRule::listed;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (std::find(listed.begin(), listed.end(), devices[i].device.name) == listed.end()) {
        s.compute[i] = false;
        s.reason[i] = "not in --rdma-devices";
      }
    }
    for (const std::string& name : listed) {
      const bool found = std::any_of(devices.begin(), devices.end(), [&](const RdmaNicReading& r) {
        return r.device.name == name;
      });
      if (!found) s.missing.push_back(name);
    }
    return s;
  }
  if (shape != nullptr && !shape->has_rdma_fabric()) {
    s.rule = NicRule::no_fabric;
    s.compute.assign(devices.size(), false);
    const std::string why = "the node shape " + shape->id + " has no RDMA fabric";
    s.reason.assign(devices.size(), why);
    return s;
  }
  if (shape != nullptr) {
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const std::string transport = rdma_transport(devices[i].device);
      if (transport.empty() || shape->transport_allowed(transport)) continue;
      s.compute[i] = false;
      s.reason[i] = "its transport is " + transport + ", and the node shape " + shape->id +
                    "'s compute fabric is not";
    }
  }
  bool any_switch = false;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    any_switch =
        any_switch || (s.compute[i] && devices[i].gpu_affinity == GpuAffinity::pcie_switch);
  }
  if (any_switch) {
    s.rule = NicRule::gpu_switch;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (!s.compute[i] || devices[i].gpu_affinity == GpuAffinity::pcie_switch) continue;
      s.compute[i] = false;
      s.reason[i] = "no GPU shares its PCIe switch (" + affinity_phrase(devices[i]) +
                    "), while other NICs share one with a GPU";
    }
    return s;
  }
  s.rule = NicRule::fabric;
  select_by_fabric(devices, s);
  if (shape != nullptr && s.any_port_up) cap_to_shape(devices, *shape, s);
  return s;
}

void assign_roles(RdmaReadings& readings, const Thresholds& thresholds) {
  std::string unfit;
  const NicSelection s = select_compute_nics(readings.devices, readings.rdma_devices,
                                             fabric_shape(readings, thresholds, unfit));
  const std::vector<std::string> fabric = compute_transports(readings.devices, s);
  for (std::size_t i = 0; i < readings.devices.size(); ++i) {
    RdmaNicReading& r = readings.devices[i];
    r.role = nic_role(r.device, s.compute[i], fabric);
    r.role_reason = s.compute[i] ? describe_rule(s) : s.reason[i];
  }
}

std::string describe_rule(const NicSelection& s) {
  switch (s.rule) {
    case NicRule::listed:
      return "listed in --rdma-devices";
    case NicRule::gpu_switch:
      return "sharing a PCIe switch with a GPU";
    case NicRule::no_fabric:
      return "none: the node shape has no RDMA fabric";
    case NicRule::fabric:
      break;
  }
  if (!s.any_port_up) return "no port up anywhere: every NIC counted";
  return "on the " + layer_name(s.fabric_link_layer) + " fabric";
}

std::string describe_transfer(const PlannedTransfer& t) {
  std::string text =
      t.kind + " " + t.from_device + (t.kind == "pair" ? " -> " + t.to_device : std::string()) +
      (t.memory == RdmaMemory::gpu ? " with " + gpu_entity(t.gpu_index) : std::string());
  if (t.memory == RdmaMemory::host && t.host_numa_node >= 0) {
    text += " with NUMA node " + std::to_string(t.host_numa_node) + " memory";
  }
  if (t.op == RdmaOp::read) text += " (RDMA read)";
  return text;
}

std::optional<Finding> rdma_device_observation(const RdmaDevice& d) {
  if (d.error.empty()) return std::nullopt;
  return make_finding(rdma_findings(), "RDMA_DEVICE_ERROR", d.name, d.error);
}

std::optional<Finding> rdma_transfer_observation(const PlannedTransfer& t,
                                                 const RdmaTransferResult& r) {
  const std::string what = describe_transfer(t);
  if (r.timed_out) {
    return make_finding(rdma_findings(), "RDMA_TIMEOUT", t.entity,
                        what + ": did not complete before the deadline");
  }
  if (!r.error.empty()) {
    if (t.memory == RdmaMemory::gpu && r.registration.empty()) {
      return make_finding(rdma_findings(), "RDMA_GPUDIRECT_UNAVAILABLE", t.entity,
                          what + ": " + r.error);
    }
    return make_finding(rdma_findings(),
                        r.connected ? "RDMA_TRANSFER_ERROR" : "RDMA_CONNECT_FAILED", t.entity,
                        what + ": " + r.error);
  }
  if (r.bad_bytes > 0) {
    return make_finding(rdma_findings(), "RDMA_DATA_MISMATCH", t.entity,
                        what + ": " + std::to_string(r.bad_bytes) + " bytes arrived changed")
        .measured(static_cast<double>(r.bad_bytes), "bytes");
  }
  return std::nullopt;
}

std::vector<Finding> rdma_observations(const RdmaReadings& readings) {
  std::vector<Finding> findings;
  for (const RdmaNicReading& d : readings.devices) {
    if (auto f = rdma_device_observation(d.device)) findings.push_back(std::move(*f));
  }
  for (const RdmaTransferReading& t : readings.transfers) {
    if (auto f = rdma_transfer_observation(t.planned, t.result)) findings.push_back(std::move(*f));
  }
  return findings;
}

std::vector<Finding> judge_rdma(const RdmaReadings& readings, const Thresholds& thresholds) {
  std::vector<Finding> findings;
  std::string unfit;
  const MachineShape* shape = fabric_shape(readings, thresholds, unfit);
  if (!unfit.empty()) {
    findings.push_back(make_finding(rdma_findings(), "RDMA_NOT_JUDGED", "node", unfit));
  }
  const NicSelection s = select_compute_nics(readings.devices, readings.rdma_devices, shape);
  const std::vector<std::string> fabric = compute_transports(readings.devices, s);
  std::string names;
  for (const RdmaNicReading& r : readings.devices) {
    names += (names.empty() ? "" : ", ") + r.device.name;
  }
  for (const std::string& name : s.missing) {
    findings.push_back(make_finding(rdma_findings(), "RDMA_DEVICE_MISSING", name,
                                    "--rdma-devices names " + name +
                                        ", which this node does not have (its RDMA devices: " +
                                        (names.empty() ? "none" : names) + ")"));
  }
  std::vector<RdmaDevice> compute;
  std::vector<const RdmaNicReading*> compute_readings;
  for (std::size_t i = 0; i < readings.devices.size(); ++i) {
    const RdmaDevice& d = readings.devices[i].device;
    if (!s.compute[i]) {
      findings.push_back(make_finding(
          rdma_findings(), "RDMA_NIC_NOT_COMPUTE", d.name,
          "role " + nic_role(d, false, fabric) + ", " + other_nic_text(d, s.reason[i])));
      continue;
    }
    compute.push_back(d);
    compute_readings.push_back(&readings.devices[i]);
    // A device that could not be read is the run's observation (RDMA_DEVICE_ERROR).
    if (d.error.empty()) judge_pcie(d, findings);
    if (d.error.empty() && !d.rdma_write && !d.rdma_read) {
      findings.push_back(make_finding(
          rdma_findings(), "RDMA_NO_ONE_SIDED", d.name,
          d.name + " (" + (rdma_transport(d).empty() ? "unknown transport" : rdma_transport(d)) +
              ") offers neither RDMA write nor RDMA read: inventoried, its ports judged, no "
              "transfers"));
    }
  }
  std::vector<std::string> explained = judge_ports_of(compute, findings);
  for (std::string& slow : judge_port_rates(compute, thresholds, shape, findings)) {
    explained.push_back(std::move(slow));
  }
  judge_gpu_reach(readings, compute_readings, shape, explained, findings);
  if (readings.expect_rnics) {
    const auto usable = usable_ports(compute);
    const int expected = *readings.expect_rnics;
    if (static_cast<int>(usable.size()) != expected) {
      findings.push_back(make_finding(rdma_findings(), "RDMA_COUNT_MISMATCH", "node",
                                      std::to_string(usable.size()) +
                                          " usable RDMA ports (active, link up) on " +
                                          std::to_string(compute.size()) +
                                          " compute NICs, expected " + std::to_string(expected))
                             .measured(static_cast<double>(usable.size()), "ports", expected));
    }
  }
  for (const RdmaTransferReading& t : readings.transfers) {
    judge_transfer_rate(t, thresholds, findings);
  }
  return findings;
}

}  // namespace preflight
