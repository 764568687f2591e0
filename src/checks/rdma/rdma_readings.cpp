#include "checks/rdma/rdma_readings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include "checks/common/entities.hpp"  // gpu_entity
#include "model/json_fields.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

Json port_json(const RdmaPort& p) {
  Json j = Json::object();
  j["port"] = p.port_num;
  j["state"] = p.state;
  j["phys_state"] = p.phys_state;
  const double rate = rdma_port_rate(p);
  j["rate_gbps"] = rate;
  j["link_layer"] = p.link_layer;
  j["usable_gid"] = p.usable_gid;
  // Only a rate that could not be decoded needs its encodings: the message shows them.
  if (rate <= 0 && (p.active_speed != 0 || p.active_width != 0)) {
    j["active_speed"] = p.active_speed;
    j["active_width"] = p.active_width;
  }
  return j;
}

Json device_json(const RdmaNicReading& r) {
  const RdmaDevice& d = r.device;
  Json j = Json::object();
  j["name"] = d.name;
  if (!d.pci_bus_id.empty()) j["pci_bus_id"] = d.pci_bus_id;
  if (!d.sysfs_path.empty()) j["sysfs_path"] = d.sysfs_path;
  if (d.numa_node >= 0) j["numa_node"] = d.numa_node;
  Json pcie = Json::object();
  if (d.pcie_gen) pcie["gen"] = *d.pcie_gen;
  if (d.pcie_width) pcie["width"] = *d.pcie_width;
  if (d.pcie_max_gen) pcie["max_gen"] = *d.pcie_max_gen;
  if (d.pcie_max_width) pcie["max_width"] = *d.pcie_max_width;
  if (!pcie.empty()) j["pcie"] = std::move(pcie);
  if (!d.firmware.empty()) j["firmware"] = d.firmware;
  if (!d.error.empty()) j["error"] = d.error;
  if (d.nearest_gpu >= 0) j["nearest_gpu"] = gpu_entity(d.nearest_gpu);
  if (r.gpu_affinity != GpuAffinity::unknown) {
    j["gpu_affinity"] = gpu_affinity_name(r.gpu_affinity);
  }
  j["transport"] = rdma_transport(d);
  if (!d.rdma_write || !d.rdma_read) {
    Json ops = Json::array();
    if (d.rdma_write) ops.push_back("write");
    if (d.rdma_read) ops.push_back("read");
    j["operations"] = std::move(ops);
  }
  if (!d.bond_members.empty()) j["bond_members"] = d.bond_members;
  if (!r.role.empty()) j["role"] = r.role;
  if (!r.role_reason.empty()) j["role_reason"] = r.role_reason;
  Json ports = Json::array();
  for (const RdmaPort& p : d.ports) ports.push_back(port_json(p));
  j["ports"] = std::move(ports);
  return j;
}

Json transfer_json(const RdmaTransferReading& t) {
  const PlannedTransfer& p = t.planned;
  const RdmaTransferResult& r = t.result;
  Json j = Json::object();
  j["entity"] = p.entity;
  j["kind"] = p.kind;
  j["from"] = p.from_device;
  j["from_port"] = p.from_port;
  j["to"] = p.to_device;
  j["to_port"] = p.to_port;
  j["memory"] = p.memory == RdmaMemory::gpu ? "gpu" : "host";
  if (p.memory == RdmaMemory::gpu && p.gpu_index >= 0) j["gpu"] = gpu_entity(p.gpu_index);
  if (p.memory == RdmaMemory::host && p.host_numa_node >= 0) j["numa_node"] = p.host_numa_node;
  j["op"] = p.op == RdmaOp::read ? "read" : "write";
  j["expected_gbps"] = p.expected_gbps;
  j["connected"] = r.connected;
  j["gbps"] = r.gbps;
  j["verified"] = r.verified;
  j["bad_bytes"] = r.bad_bytes;
  if (!r.registration.empty()) j["registration"] = r.registration;
  if (!r.queue_pair.empty()) j["queue_pair"] = r.queue_pair;
  if (!r.error.empty()) j["error"] = r.error;
  if (r.timed_out) j["timed_out"] = true;
  if (t.injected_slow_factor) j["injected_slow_factor"] = *t.injected_slow_factor;
  return j;
}

int gpu_index_of(const Fields& f, const char* key) {
  const std::string text = f.text(key);
  if (text.empty()) return -1;
  const bool digits = text.size() > 3 && text.size() < 8 && text.compare(0, 3, "gpu") == 0 &&
                      text.find_first_not_of("0123456789", 3) == std::string::npos;
  if (!digits) f.fail(key, "expected a GPU as findings name it (\"gpu3\"), got \"" + text + "\"");
  return std::stoi(text.substr(3));
}

double rate_field(const Fields& f, const char* key) {
  const std::optional<double> v = f.number(key);
  if (v && !(std::isfinite(*v) && *v >= 0)) f.fail(key, "expected a rate of 0 or more");
  return v.value_or(0.0);
}

std::optional<int> small_int(const Fields& f, const char* key, int min, int max) {
  const auto v = f.integer(key, min, max);
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

RdmaPort port_of(const Fields& f) {
  RdmaPort p;
  p.port_num = small_int(f, "port", 1, 255).value_or(1);
  p.state = f.text("state");
  p.phys_state = f.text("phys_state");
  p.rate_gbps = rate_field(f, "rate_gbps");
  p.link_layer = f.text("link_layer");
  p.usable_gid = f.flag("usable_gid").value_or(false);
  p.active_speed = small_int(f, "active_speed", 0, 65535).value_or(0);
  p.active_width = small_int(f, "active_width", 0, 65535).value_or(0);
  return p;
}

RdmaNicReading device_of(const Fields& f) {
  RdmaNicReading r;
  RdmaDevice& d = r.device;
  d.name = f.text("name");
  if (d.name.empty()) f.fail("name", "every device needs its name (\"mlx5_0\")");
  d.pci_bus_id = f.text("pci_bus_id");
  d.sysfs_path = f.text("sysfs_path");
  d.numa_node = small_int(f, "numa_node", -1, 4095).value_or(-1);
  if (const auto pcie = f.object("pcie")) {
    d.pcie_gen = small_int(*pcie, "gen", 1, 7);
    d.pcie_width = small_int(*pcie, "width", 1, 64);
    d.pcie_max_gen = small_int(*pcie, "max_gen", 1, 7);
    d.pcie_max_width = small_int(*pcie, "max_width", 1, 64);
  }
  d.firmware = f.text("firmware");
  d.error = f.text("error");
  d.nearest_gpu = gpu_index_of(f, "nearest_gpu");
  const std::string affinity = f.text("gpu_affinity");
  if (!affinity.empty()) {
    const auto parsed = parse_gpu_affinity(affinity);
    if (!parsed) {
      f.fail("gpu_affinity",
             "expected \"switch\", \"root\", \"numa\" or \"none\", got \"" + affinity + "\"");
    }
    r.gpu_affinity = *parsed;
  }
  d.transport = f.text("transport");
  if (!d.transport.empty() && d.transport != "ib" && d.transport != "roce" &&
      d.transport != "efa") {
    f.fail("transport", "expected \"ib\", \"roce\" or \"efa\", got \"" + d.transport + "\"");
  }
  if (f.find("operations") != nullptr) {
    const std::vector<std::string> ops = f.texts("operations");
    for (const std::string& op : ops) {
      if (op != "write" && op != "read") {
        f.fail("operations", "expected \"write\" and/or \"read\", got \"" + op + "\"");
      }
    }
    d.rdma_write = std::find(ops.begin(), ops.end(), "write") != ops.end();
    d.rdma_read = std::find(ops.begin(), ops.end(), "read") != ops.end();
  }
  d.bond_members = f.texts("bond_members");
  r.role = f.text("role");
  r.role_reason = f.text("role_reason");
  std::set<int> seen;
  for (const Fields& p : f.objects("ports")) {
    d.ports.push_back(port_of(p));
    if (!seen.insert(d.ports.back().port_num).second) {
      p.fail("port", "port " + std::to_string(d.ports.back().port_num) + " is listed twice");
    }
  }
  return r;
}

RdmaTransferReading transfer_of(const Fields& f) {
  RdmaTransferReading t;
  PlannedTransfer& p = t.planned;
  RdmaTransferResult& r = t.result;
  p.entity = f.text("entity");
  if (p.entity.empty()) f.fail("entity", "every transfer needs its entity (\"mlx5_0-mlx5_3\")");
  p.kind = f.text("kind");
  if (p.kind != "loopback" && p.kind != "pair" && p.kind != "gpudirect") {
    f.fail("kind", "expected \"loopback\", \"pair\" or \"gpudirect\", got \"" + p.kind + "\"");
  }
  p.from_device = f.text("from");
  if (p.from_device.empty()) f.fail("from", "every transfer needs the device it writes from");
  p.to_device = f.text("to");
  if (p.to_device.empty()) p.to_device = p.from_device;
  p.from_port = small_int(f, "from_port", 1, 255).value_or(1);
  p.to_port = small_int(f, "to_port", 1, 255).value_or(1);
  const std::string memory = f.text("memory");
  if (memory == "gpu" || (memory.empty() && p.kind == "gpudirect")) {
    p.memory = RdmaMemory::gpu;
  } else if (memory.empty() || memory == "host") {
    p.memory = RdmaMemory::host;
  } else {
    f.fail("memory", "expected \"host\" or \"gpu\", got \"" + memory + "\"");
  }
  p.gpu_index = gpu_index_of(f, "gpu");
  p.host_numa_node = small_int(f, "numa_node", -1, 4095).value_or(-1);
  const std::string op = f.text("op");
  if (op == "read") {
    p.op = RdmaOp::read;
  } else if (!op.empty() && op != "write") {
    f.fail("op", "expected \"write\" or \"read\", got \"" + op + "\"");
  }
  p.expected_gbps = rate_field(f, "expected_gbps");
  r.gbps = f.number("gbps").value_or(0.0);
  r.error = f.text("error");
  r.timed_out = f.flag("timed_out").value_or(false);
  const bool ok = r.error.empty() && !r.timed_out;
  r.connected = f.flag("connected").value_or(ok);
  r.verified = f.flag("verified").value_or(ok);
  r.bad_bytes = f.count("bad_bytes").value_or(0);
  r.registration = f.text("registration");
  r.queue_pair = f.text("queue_pair");
  if (const auto factor = f.number("injected_slow_factor")) {
    if (!(*factor > 0 && *factor <= 1))
      f.fail("injected_slow_factor", "expected a share in (0, 1]");
    t.injected_slow_factor = *factor;
  }
  return t;
}

}  // namespace

std::string rdma_transport(const RdmaDevice& d) {
  if (!d.transport.empty()) return d.transport;
  for (const RdmaPort& p : d.ports) {
    if (p.link_layer == "InfiniBand") return "ib";
    if (p.link_layer == "Ethernet") return "roce";
  }
  return "";
}

void to_json(Json& j, const RdmaReadings& readings) {
  j = Json::object();
  Json devices = Json::array();
  for (const RdmaNicReading& d : readings.devices) devices.push_back(device_json(d));
  j["devices"] = std::move(devices);
  Json expect = Json::object();
  if (readings.expect_rnics) expect["rnics"] = *readings.expect_rnics;
  if (readings.gpus) j["gpus"] = *readings.gpus;
  if (!readings.rdma_devices.empty()) expect["rdma_devices"] = readings.rdma_devices;
  j["expect"] = std::move(expect);
  Json transfers = Json::array();
  for (const RdmaTransferReading& t : readings.transfers) transfers.push_back(transfer_json(t));
  j["transfers"] = std::move(transfers);
  if (readings.transfers_not_run > 0) j["transfers_not_run"] = readings.transfers_not_run;
}

void from_json(const Json& j, RdmaReadings& readings) {
  const Fields f(j, "");
  RdmaReadings out;
  std::set<std::string> names;
  for (const Fields& d : f.objects("devices")) {
    out.devices.push_back(device_of(d));
    if (!names.insert(out.devices.back().device.name).second) {
      d.fail("name", "device " + out.devices.back().device.name + " is listed twice");
    }
  }
  out.gpus = small_int(f, "gpus", 0, 1024);
  if (const auto expect = f.object("expect")) {
    out.expect_rnics = small_int(*expect, "rnics", 0, 256);
    out.rdma_devices = expect->texts("rdma_devices");
  }
  for (const Fields& t : f.objects("transfers")) out.transfers.push_back(transfer_of(t));
  out.transfers_not_run = static_cast<std::size_t>(f.count("transfers_not_run").value_or(0));
  readings = std::move(out);
}

}  // namespace preflight
