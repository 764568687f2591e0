// The rdma check's readings and judgement without any engine (rdma_readings.hpp,
// rdma_judge.hpp): published node layouts written as readings, judged with the SKU's thresholds.
// The false alarm of the issue: a healthy DGX H200 (8 compute NICs at 400 Gb/s, two dual-port
// storage cards with one port at 200 and three down) failed RDMA_PORT_DOWN and RDMA_PORT_SLOW
// because every port of every verbs device was judged.
//
// Sources of the layouts: the DGX H100/H200 User Guide ("Network Modules": the compute ports
// mlx5_0, 3, 4, 5, 6, 9, 10, 11 on ibp24s0 ... ibp220s0, one per GPU), the DGX BasePOD deployment
// guide (slot 1 and slot 2 are dual-port ConnectX-7 cards: port 2 Ethernet for in-band and
// storage, port 1 InfiniBand storage when used), dsx-ai-factory/infra-controller issue #3624 ("DGX
// H100 Host with Alert: IB port(s) down: 1 of 9 ports are not active", the storage card at 29:00.0)
// and NVSentinel's NIC health monitor design (compute NICs share a PCIe switch with a GPU:
// PIX/PXB; storage NICs on DGX H100 sit on the CPU board: NODE). Paths are sysfs-shaped with
// those bus numbers; what each test relies on is named in it.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checks/rdma/rdma_judge.hpp"
#include "checks/rdma/rdma_readings.hpp"
#include "preflight/errors.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;
using Json = nlohmann::ordered_json;

namespace {

std::string hex2(int v) {
  char text[8];
  std::snprintf(text, sizeof text, "%02x", v);
  return text;
}

RdmaPort rdma_port(std::string state, std::string phys, double rate, std::string layer, int n = 1) {
  RdmaPort p;
  p.port_num = n;
  p.state = std::move(state);
  p.phys_state = std::move(phys);
  p.rate_gbps = rate;
  p.link_layer = std::move(layer);
  p.usable_gid = p.state == "ACTIVE";
  return p;
}

RdmaPort ib400() {
  return rdma_port("ACTIVE", "LinkUp", 400, "InfiniBand");
}

// The GPU and compute NIC pairs of a DGX H100/H200: NIC bus (from the ibpNNs0 names of the User
// Guide), GPU bus, NUMA node. Each pair hangs off one PCIe switch under root port hb:01.0.
struct Pair {
  const char* nic;
  int nic_bus;
  int gpu_bus;
  int numa;
};
constexpr Pair kDgxPairs[] = {
    {"mlx5_0", 0x18, 0x1b, 0},  {"mlx5_3", 0x40, 0x43, 0},  {"mlx5_4", 0x4f, 0x52, 0},
    {"mlx5_5", 0x5e, 0x61, 0},  {"mlx5_6", 0x9a, 0x9d, 1},  {"mlx5_9", 0xc0, 0xc3, 1},
    {"mlx5_10", 0xce, 0xd1, 1}, {"mlx5_11", 0xdc, 0xdf, 1},
};

std::string switch_path(int hb, int down_fn, int bus) {
  return "/sys/devices/pci0000:" + hex2(hb) + "/0000:" + hex2(hb) + ":01.0/0000:" + hex2(hb + 1) +
         ":00.0/0000:" + hex2(hb + 2) + ":0" + std::to_string(down_fn) + ".0/0000:" + hex2(bus) +
         ":00.0";
}

std::vector<GpuLocation> dgx_gpus() {
  std::vector<GpuLocation> gpus;
  int i = 0;
  for (const Pair& p : kDgxPairs) {
    gpus.push_back({i++, switch_path(p.nic_bus - 3, 1, p.gpu_bus), p.numa});
  }
  return gpus;
}

RdmaNicReading nic(const std::string& name, const std::string& bus, std::string path, int numa,
                   int nearest, GpuAffinity affinity, std::vector<RdmaPort> ports) {
  RdmaNicReading r;
  r.device.name = name;
  r.device.pci_bus_id = bus;
  r.device.sysfs_path = std::move(path);
  r.device.numa_node = numa;
  r.device.pcie_gen = 5;
  r.device.pcie_width = 16;
  r.device.pcie_max_gen = 5;
  r.device.pcie_max_width = 16;
  r.device.firmware = "28.39.1002";
  r.device.nearest_gpu = nearest;
  r.gpu_affinity = affinity;
  r.device.ports = std::move(ports);
  return r;
}

// The eight compute NICs, each at 400 Gb/s InfiniBand behind its GPU's switch, in the order
// libibverbs lists them (mlx5_0, mlx5_3, ...), with the storage devices put in by the caller.
std::vector<RdmaNicReading> dgx_compute() {
  std::vector<RdmaNicReading> out;
  int gpu = 0;
  for (const Pair& p : kDgxPairs) {
    out.push_back(nic(p.nic, "0000:" + hex2(p.nic_bus) + ":00.0",
                      switch_path(p.nic_bus - 3, 0, p.nic_bus), p.numa, gpu++,
                      GpuAffinity::pcie_switch, {ib400()}));
  }
  return out;
}

// A storage or in-band function of a dual-port card on a CPU root port (slot 1 at 29:00, slot 2
// at aa:00): nearest GPU on the same NUMA node but under another host bridge (NODE).
RdmaNicReading storage(const std::string& name, int bus, int fn, int nearest, RdmaPort p) {
  const std::string id = "0000:" + hex2(bus) + ":00." + std::to_string(fn);
  return nic(name, id,
             "/sys/devices/pci0000:" + hex2(bus - 2) + "/0000:" + hex2(bus - 2) + ":01.0/" + id,
             bus < 0x80 ? 0 : 1, nearest, GpuAffinity::numa, {std::move(p)});
}

void insert_sorted(std::vector<RdmaNicReading>& devices, RdmaNicReading d) {
  // libibverbs lists mlx5_0, mlx5_1, ..., mlx5_11 by the number.
  const auto number = [](const std::string& name) { return std::stoi(name.substr(5)); };
  auto it = devices.begin();
  while (it != devices.end() && number(it->device.name) < number(d.device.name)) ++it;
  devices.insert(it, std::move(d));
}

// A healthy DGX H200 as the issue describes it: 12 mlx5 devices, the 8 compute ports Active at
// 400, and on the two storage cards one port Active at 200 and three Down or Disabled.
RdmaReadings dgx_h200() {
  RdmaReadings r;
  r.devices = dgx_compute();
  insert_sorted(r.devices,
                storage("mlx5_1", 0x29, 0, 0, rdma_port("DOWN", "Disabled", 0, "InfiniBand")));
  insert_sorted(r.devices,
                storage("mlx5_2", 0x29, 1, 0, rdma_port("ACTIVE", "LinkUp", 200, "Ethernet")));
  insert_sorted(r.devices,
                storage("mlx5_7", 0xaa, 0, 4, rdma_port("DOWN", "Disabled", 0, "InfiniBand")));
  insert_sorted(r.devices,
                storage("mlx5_8", 0xaa, 1, 4, rdma_port("DOWN", "Polling", 0, "Ethernet")));
  return r;
}

Thresholds sku_by_flag(const char* id) {
  const SkuSpec* spec = find_sku(id);
  REQUIRE(spec != nullptr);
  return preflight::test::builtin_thresholds(spec, "--sku");
}

std::set<std::string> rdma_codes(const std::vector<Finding>& findings, bool with_info = false) {
  std::set<std::string> out;
  for (const Finding& f : findings) {
    if (with_info || f.severity != Severity::info) out.insert(f.code + "@" + f.entity);
  }
  return out;
}

std::set<std::string> entities_of(const std::vector<Finding>& findings, const std::string& code) {
  std::set<std::string> out;
  for (const Finding& f : findings) {
    if (f.code == code) out.insert(f.entity);
  }
  return out;
}

bool healthy(const std::vector<Finding>& findings) {
  return status_from_findings(findings) == Status::pass;
}

// Findings compared field by field, in order.
void require_same(const std::vector<Finding>& a, const std::vector<Finding>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].code << "@" << a[i].entity << ": " << a[i].message);
    CHECK(a[i].code == b[i].code);
    CHECK(a[i].entity == b[i].entity);
    CHECK(a[i].severity == b[i].severity);
    CHECK(a[i].message == b[i].message);
    CHECK(a[i].value == b[i].value);
    CHECK(a[i].threshold == b[i].threshold);
    CHECK(a[i].unit == b[i].unit);
    CHECK(a[i].injected == b[i].injected);
  }
}

RdmaReadings without_topology(RdmaReadings r) {
  for (RdmaNicReading& d : r.devices) {
    d.device.sysfs_path.clear();
    d.device.nearest_gpu = -1;
    d.gpu_affinity = GpuAffinity::unknown;
  }
  return r;
}

}  // namespace

TEST_CASE("rdma readings: the DGX fixture's affinities follow from its PCI paths") {
  const auto gpus = dgx_gpus();
  for (const RdmaNicReading& d : dgx_h200().devices) {
    INFO(d.device.name << " " << d.device.sysfs_path);
    CHECK(nearest_gpu(d.device.sysfs_path, d.device.numa_node, gpus) == d.device.nearest_gpu);
    const GpuLocation& g = gpus[static_cast<std::size_t>(d.device.nearest_gpu)];
    CHECK(gpu_affinity(d.device.sysfs_path, d.device.numa_node, g) == d.gpu_affinity);
  }
}

TEST_CASE("rdma readings: a healthy DGX H200 passes, its storage ports reported, not failed") {
  const Thresholds h200 = sku_by_flag("h200-sxm-141gb");
  // The port rate comes from the node shape now (docs/node-shapes.md), not from the SKU.
  REQUIRE(h200.get("rdma.min_port_gbps") == 0);
  RdmaReadings r = dgx_h200();
  r.expect_rnics = 8;
  REQUIRE(r.devices.size() == 12);

  // The old rule judged every port of every device against rdma.min_port_gbps: on this healthy
  // node it gave RDMA_PORT_DOWN on mlx5_1, mlx5_7 and mlx5_8 and RDMA_PORT_SLOW on mlx5_2
  // ("200 Gb/s, below the minimum of 400 Gb/s"), all severity fail, and counted 9 usable ports
  // against --expect-rnics 8 (RDMA_COUNT_MISMATCH).
  std::vector<RdmaDevice> all;
  for (const auto& d : r.devices) all.push_back(d.device);
  RdmaExpectations old_rule;
  old_rule.min_port_gbps = 400;
  const auto old_issues = judge_ports(all, old_rule);
  std::set<std::string> old;
  for (const auto& j : old_issues)
    old.insert(j.device + (j.issue == PortIssue::down ? " down" : " slow"));
  CHECK(old == std::set<std::string>{"mlx5_1 down", "mlx5_2 slow", "mlx5_7 down", "mlx5_8 down"});
  CHECK(usable_ports(all).size() == 9);

  const auto findings = judge_rdma(r, h200);
  INFO(rdma_codes(findings, true).size());
  CHECK(healthy(findings));
  CHECK(rdma_codes(findings).empty());
  CHECK(entities_of(findings, "RDMA_NIC_NOT_COMPUTE") ==
        std::set<std::string>{"mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"});
  for (const Finding& f : findings) {
    CHECK(f.severity == Severity::info);
    if (f.entity == "mlx5_2") {
      CHECK(f.message ==
            "role management, not a compute NIC: no GPU shares its PCIe switch (nearest gpu0 is on "
            "its NUMA node, "
            "under another host bridge), while other NICs share one with a GPU; ports: 1 "
            "ACTIVE/LinkUp 200 Gb/s Ethernet; not judged, no transfers");
    }
  }
  const NicSelection s = select_compute_nics(r.devices, {});
  CHECK(s.rule == NicRule::gpu_switch);
  CHECK(describe_rule(s) == "sharing a PCIe switch with a GPU");
}

TEST_CASE("rdma readings: a DGX H100 whose in-band Ethernet NIC has a port down passes") {
  // DGX H100 with the in-band and storage cards in Ethernet mode (BasePOD): slot 1 port 2 up at
  // 100 GbE, port 1 without a cable; slot 2 likewise. The other vendor's checker counted
  // "1 of 9 ports are not active" on such a node.
  RdmaReadings r;
  r.devices = dgx_compute();
  insert_sorted(r.devices,
                storage("mlx5_1", 0x29, 0, 0, rdma_port("DOWN", "Disabled", 0, "Ethernet")));
  insert_sorted(r.devices,
                storage("mlx5_2", 0x29, 1, 0, rdma_port("ACTIVE", "LinkUp", 100, "Ethernet")));
  r.expect_rnics = 8;
  const Thresholds h100 = sku_by_flag("h100-sxm5-80gb");
  SECTION("topology known: the Ethernet functions share no switch with a GPU") {
    const auto findings = judge_rdma(r, h100);
    CHECK(healthy(findings));
    CHECK(entities_of(findings, "RDMA_NIC_NOT_COMPUTE") ==
          std::set<std::string>{"mlx5_1", "mlx5_2"});
  }
  SECTION("topology unknown: Ethernet is not the InfiniBand fabric, down or up") {
    const auto findings = judge_rdma(without_topology(r), h100);
    CHECK(healthy(findings));
    CHECK(entities_of(findings, "RDMA_NIC_NOT_COMPUTE") ==
          std::set<std::string>{"mlx5_1", "mlx5_2"});
    const NicSelection s = select_compute_nics(without_topology(r).devices, {});
    CHECK(s.rule == NicRule::fabric);
    CHECK(describe_rule(s) == "on the InfiniBand fabric");
  }
}

TEST_CASE("rdma readings: a compute NIC down or slow fails on that NIC") {
  const Thresholds h200 = sku_by_flag("h200-sxm-141gb");
  RdmaReadings r = dgx_h200();
  r.expect_rnics = 8;
  auto find = [&r](const std::string& name) -> RdmaNicReading& {
    for (auto& d : r.devices) {
      if (d.device.name == name) return d;
    }
    FAIL("no " << name);
    return r.devices.front();
  };
  SECTION("down") {
    find("mlx5_5").device.ports[0] = rdma_port("DOWN", "Disabled", 0, "InfiniBand");
    const auto findings = judge_rdma(r, h200);
    CHECK(rdma_codes(findings) ==
          std::set<std::string>{"RDMA_PORT_DOWN@mlx5_5", "RDMA_COUNT_MISMATCH@node"});
    for (const Finding& f : findings) {
      if (f.code == "RDMA_COUNT_MISMATCH") {
        CHECK(f.message == "7 usable RDMA ports (active, link up) on 8 compute NICs, expected 8");
      }
    }
  }
  SECTION("at 200 Gb/s on a 400 Gb/s SKU: still compute, it shares its GPU's switch") {
    find("mlx5_9").device.ports[0].rate_gbps = 200;
    const auto findings = judge_rdma(r, h200);
    CHECK(rdma_codes(findings) == std::set<std::string>{"RDMA_PORT_SLOW@mlx5_9"});
    CHECK(findings.size() == 5);  // and the four storage infos
  }
  SECTION("a compute NIC's PCIe link at Gen4") {
    find("mlx5_0").device.pcie_gen = 4;
    CHECK(rdma_codes(judge_rdma(r, h200)) == std::set<std::string>{"RDMA_PCIE_DEGRADED@mlx5_0"});
  }
  SECTION("a storage NIC's PCIe link at Gen4 is reported in its info, not failed") {
    find("mlx5_2").device.pcie_gen = 4;
    const auto findings = judge_rdma(r, h200);
    CHECK(healthy(findings));
    for (const Finding& f : findings) {
      if (f.entity == "mlx5_2")
        CHECK_THAT(f.message, Catch::Contains("PCIe link Gen4 x16 of Gen5 x16"));
    }
  }
}

TEST_CASE("rdma readings: --rdma-devices selects exactly the listed devices") {
  const Thresholds h200 = sku_by_flag("h200-sxm-141gb");
  RdmaReadings r = dgx_h200();
  SECTION("two compute NICs: the rest are reported") {
    r.rdma_devices = {"mlx5_0", "mlx5_3"};
    const auto findings = judge_rdma(r, h200);
    CHECK(healthy(findings));
    CHECK(entities_of(findings, "RDMA_NIC_NOT_COMPUTE").size() == 10);
    const NicSelection s = select_compute_nics(r.devices, r.rdma_devices);
    CHECK(s.rule == NicRule::listed);
    std::vector<std::string> taken;
    for (std::size_t i = 0; i < r.devices.size(); ++i) {
      if (s.compute[i]) taken.push_back(r.devices[i].device.name);
    }
    CHECK(taken == std::vector<std::string>{"mlx5_0", "mlx5_3"});
  }
  SECTION("a listed storage function is judged like any compute NIC") {
    r.rdma_devices = {"mlx5_0", "mlx5_2"};
    // Against the HGX H200 shape a run assumes for 8 x H200: 200 Gb/s of its 400. With the SKU
    // alone its only sibling is of another transport (InfiniBand): nothing to compare with.
    Thresholds shaped = h200;
    choose_node_shape(shaped, "", "", 8);
    CHECK(rdma_codes(judge_rdma(r, shaped)) == std::set<std::string>{"RDMA_PORT_SLOW@mlx5_2"});
    CHECK(rdma_codes(judge_rdma(r, h200)).empty());
  }
  SECTION("a listed name the node lacks fails on that name") {
    r.rdma_devices = {"mlx5_0", "mlx5_12"};
    const auto findings = judge_rdma(r, h200);
    CHECK(rdma_codes(findings) == std::set<std::string>{"RDMA_DEVICE_MISSING@mlx5_12"});
    for (const Finding& f : findings) {
      if (f.code == "RDMA_DEVICE_MISSING") {
        CHECK_THAT(f.message,
                   Catch::StartsWith("--rdma-devices names mlx5_12, which this node "
                                     "does not have (its RDMA devices: mlx5_0, mlx5_1,"));
      }
    }
  }
}

TEST_CASE("rdma readings: with the topology unknown, the link layer decides") {
  const Thresholds h200 = sku_by_flag("h200-sxm-141gb");
  const RdmaReadings r = without_topology(dgx_h200());
  const NicSelection s = select_compute_nics(r.devices, {});
  CHECK(s.rule == NicRule::fabric);
  CHECK(s.fabric_link_layer == "InfiniBand");
  SECTION("the trade-off: a storage function whose InfiniBand port is down counts as compute") {
    // Without the PCIe topology a dead InfiniBand storage port cannot be told from a dead compute
    // NIC; judging it is the price of never excusing a dead compute NIC. The Ethernet functions
    // (up at 200, or down) are not on the InfiniBand fabric and are reported.
    const auto findings = judge_rdma(r, h200);
    CHECK(rdma_codes(findings) ==
          std::set<std::string>{"RDMA_PORT_DOWN@mlx5_1", "RDMA_PORT_DOWN@mlx5_7"});
    CHECK(entities_of(findings, "RDMA_NIC_NOT_COMPUTE") ==
          std::set<std::string>{"mlx5_2", "mlx5_8"});
  }
  SECTION("--rdma-devices settles it") {
    RdmaReadings listed = r;
    for (const Pair& p : kDgxPairs) listed.rdma_devices.push_back(p.nic);
    CHECK(healthy(judge_rdma(listed, h200)));
  }
  SECTION("rate does not decide: a compute NIC trained down is judged") {
    RdmaReadings slow = r;
    slow.devices[0].device.ports[0].rate_gbps = 200;  // mlx5_0
    CHECK(rdma_codes(judge_rdma(slow, h200)).count("RDMA_PORT_SLOW@mlx5_0") == 1);
  }
  SECTION("the trade-off: an InfiniBand storage port at 200 is judged as well") {
    // BasePOD's optional InfiniBand storage on port 1 of the slot cards: without the PCIe tree
    // it looks like a compute NIC that trained down.
    RdmaReadings ib_storage = r;
    ib_storage.devices[1].device.ports[0] = rdma_port("ACTIVE", "LinkUp", 200, "InfiniBand");
    CHECK(rdma_codes(judge_rdma(ib_storage, h200)).count("RDMA_PORT_SLOW@mlx5_1") == 1);
    // With the topology it is reported and passes.
    RdmaReadings known = dgx_h200();
    known.devices[1].device.ports[0] = rdma_port("ACTIVE", "LinkUp", 200, "InfiniBand");
    CHECK(healthy(judge_rdma(known, h200)));
  }
  SECTION("devices without sysfs paths at one rate are all compute (the fake libibverbs)") {
    RdmaReadings fake;
    for (int i = 0; i < 2; ++i) {
      RdmaNicReading d;
      d.device.name = "fake" + std::to_string(i);
      d.device.ports = {rdma_port("ACTIVE", "LinkUp", 2.5, "InfiniBand")};
      fake.devices.push_back(d);
    }
    fake.devices[1].device.ports[0] = rdma_port("DOWN", "Disabled", 0, "InfiniBand");
    Thresholds shaped = h200;  // as a run on 8 x H200 assumes it: 400 Gb/s ports
    choose_node_shape(shaped, "", "", 8);
    const auto findings = judge_rdma(fake, shaped);
    CHECK(rdma_codes(findings) ==
          std::set<std::string>{"RDMA_PORT_SLOW@fake0", "RDMA_PORT_DOWN@fake1"});
  }
  SECTION("no port up anywhere: every device is judged") {
    RdmaReadings dead = r;
    for (auto& d : dead.devices) d.device.ports[0] = rdma_port("DOWN", "Disabled", 0, "InfiniBand");
    const auto findings = judge_rdma(dead, h200);
    CHECK(entities_of(findings, "RDMA_PORT_DOWN").size() == 12);
    CHECK(describe_rule(select_compute_nics(dead.devices, {})) ==
          "no port up anywhere: every NIC counted");
  }
  SECTION("a RoCE fabric: the majority link layer is Ethernet") {
    RdmaReadings roce = r;
    for (auto& d : roce.devices) {
      if (d.device.ports[0].link_layer == "InfiniBand" && d.device.ports[0].state == "ACTIVE") {
        d.device.ports[0].link_layer = "Ethernet";
      }
    }
    const NicSelection rs = select_compute_nics(roce.devices, {});
    CHECK(rs.fabric_link_layer == "Ethernet");
    // The InfiniBand ports down are not of this fabric: reported. The Ethernet storage
    // functions cannot be told from compute NICs: judged.
    const auto findings = judge_rdma(roce, h200);
    CHECK(rdma_codes(findings) ==
          std::set<std::string>{"RDMA_PORT_SLOW@mlx5_2", "RDMA_PORT_DOWN@mlx5_8"});
    CHECK(entities_of(findings, "RDMA_NIC_NOT_COMPUTE") ==
          std::set<std::string>{"mlx5_1", "mlx5_7"});
  }
}

TEST_CASE("rdma readings: transfers are judged against their expected rate") {
  const Thresholds h200 = sku_by_flag("h200-sxm-141gb");
  RdmaReadings r;
  r.devices = dgx_compute();
  RdmaTransferReading t;
  t.planned.entity = "mlx5_0-mlx5_3";
  t.planned.kind = "pair";
  t.planned.from_device = "mlx5_0";
  t.planned.to_device = "mlx5_3";
  t.planned.expected_gbps = 400;
  t.result.connected = true;
  t.result.verified = true;
  t.result.registration = "host";
  SECTION("at 290 of 400: below 0.75") {
    t.result.gbps = 290;
    r.transfers = {t};
    const auto findings = judge_rdma(r, h200);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].code == "RDMA_BANDWIDTH_LOW");
    CHECK(findings[0].message == "pair mlx5_0 -> mlx5_3: 290.0 Gb/s of a 400.0 Gb/s port (host)");
    CHECK(findings[0].threshold == 300);
    CHECK_FALSE(findings[0].injected);
  }
  SECTION("at 350 of 400: below 0.9, injected by rdma-slow") {
    t.result.gbps = 350;
    t.injected_slow_factor = 0.9;
    r.transfers = {t};
    const auto findings = judge_rdma(r, h200);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].code == "RDMA_BANDWIDTH_MARGINAL");
    CHECK(findings[0].injected);
  }
  SECTION("a transfer that failed or hung has no rate to judge") {
    t.result.gbps = 0;
    t.result.error = "ibv_modify_qp(RTR): Connection timed out";
    RdmaTransferReading hung = t;
    hung.result.error.clear();
    hung.result.timed_out = true;
    r.transfers = {t, hung};
    CHECK(judge_rdma(r, h200).empty());
  }
}

TEST_CASE("rdma readings: JSON round trip judges the same") {
  const Thresholds h200 = sku_by_flag("h200-sxm-141gb");
  RdmaReadings r = dgx_h200();
  r.expect_rnics = 9;
  r.rdma_devices = {};
  r.devices[3].device.ports[0].state = "INIT";  // mlx5_3
  r.devices[0].device.ports[0].rate_gbps = 0;   // mlx5_0: an encoding nobody knows
  r.devices[0].device.ports[0].active_speed = 3;
  r.devices[0].device.ports[0].active_width = 2;
  RdmaTransferReading t;
  t.planned = {"mlx5_0", 1, "mlx5_0", 1, RdmaMemory::gpu, 0, 400, "mlx5_0", "gpudirect"};
  t.result.connected = true;
  t.result.gbps = 280;
  t.result.registration = "dma-buf";
  t.result.verified = true;
  t.injected_slow_factor = 0.7;
  r.transfers = {t};
  r.transfers_not_run = 3;

  Json written;
  to_json(written, r);
  RdmaReadings back;
  from_json(Json::parse(written.dump()), back);  // through text, as a verdict file
  require_same(judge_rdma(r, h200), judge_rdma(back, h200));
  CHECK(rdma_codes(judge_rdma(back, h200)) ==
        std::set<std::string>{"RDMA_RATE_UNKNOWN@mlx5_0", "RDMA_PORT_DOWN@mlx5_3",
                              "RDMA_COUNT_MISMATCH@node", "RDMA_BANDWIDTH_LOW@mlx5_0"});
  CHECK(back.transfers_not_run == 3);
  CHECK(back.transfers.at(0).planned.gpu_index == 0);
  CHECK(back.devices.at(2).gpu_affinity == GpuAffinity::numa);

  Json j;
  to_json(j, r);
  INFO(j.dump(2));
  const Json& dev = j["devices"][1];  // mlx5_1
  CHECK(dev["name"] == "mlx5_1");
  CHECK(dev["pci_bus_id"] == "0000:29:00.0");
  CHECK(dev["nearest_gpu"] == "gpu0");
  CHECK(dev["gpu_affinity"] == "numa");
  CHECK(dev["pcie"]["max_gen"] == 5);
  CHECK(dev["ports"][0]["phys_state"] == "Disabled");
  CHECK_FALSE(dev["ports"][0].contains("active_speed"));
  CHECK(j["devices"][0]["ports"][0]["active_speed"] == 3);
  CHECK(j["expect"]["rnics"] == 9);
  CHECK(j["transfers"][0]["gpu"] == "gpu0");
  CHECK(j["transfers"][0]["memory"] == "gpu");
}

TEST_CASE("rdma readings: written by hand, defaults fill in and bad fields are named") {
  const Json hand = Json::parse(R"({
    "devices": [
      {"name": "mlx5_0", "nearest_gpu": "gpu0", "gpu_affinity": "switch",
       "ports": [{"state": "ACTIVE", "phys_state": "LinkUp", "rate_gbps": 400,
                  "link_layer": "InfiniBand"}]},
      {"name": "mlx5_1", "gpu_affinity": "numa",
       "ports": [{"state": "DOWN", "phys_state": "Disabled", "link_layer": "InfiniBand"}]}
    ],
    "expect": {"rnics": 1},
    "transfers": [{"entity": "mlx5_0", "kind": "loopback", "from": "mlx5_0",
                   "expected_gbps": 400, "gbps": 380}]
  })");
  RdmaReadings r;
  from_json(hand, r);
  REQUIRE(r.devices.size() == 2);
  CHECK(r.devices[0].device.ports[0].port_num == 1);
  CHECK(r.transfers[0].planned.to_device == "mlx5_0");
  CHECK(r.transfers[0].result.connected);
  CHECK(judge_rdma(r, sku_by_flag("h100-sxm5-80gb")).size() == 1);  // mlx5_1: info

  const auto bad = [&](const char* pointer, const Json& value, const char* field) {
    Json broken = hand;
    broken[Json::json_pointer(pointer)] = value;
    RdmaReadings out;
    INFO(pointer);
    CHECK_THROWS_WITH(from_json(broken, out), Catch::StartsWith(field));
  };
  bad("/devices/0/gpu_affinity", "close", "devices[0].gpu_affinity:");
  bad("/devices/0/nearest_gpu", "3", "devices[0].nearest_gpu:");
  bad("/devices/1/name", "", "devices[1].name:");
  bad("/devices/1/name", "mlx5_0", "devices[1].name:");
  bad("/devices/0/ports/0/rate_gbps", -400, "devices[0].ports[0].rate_gbps:");
  bad("/devices/0/ports/0/usable_gid", "yes", "devices[0].ports[0].usable_gid:");
  bad("/transfers/0/kind", "ring", "transfers[0].kind:");
  bad("/transfers/0/memory", "vram", "transfers[0].memory:");
  bad("/expect/rnics", -1, "expect.rnics:");
  bad("/devices", "mlx5_0", "devices:");
}
