// The compute fabric judged by what each GPU gets (rdma_fabric.hpp, node_shape.hpp): the nodes
// people rent, written as readings from their published layouts (docs/node-shapes.md has the
// sources): an AWS p5.48xlarge (32 EFA devices at 100 Gb/s, four behind each GPU's switch), a
// RoCE node of four 200 Gb/s bonds, a DGX H200 seen from a container without /sys/bus/pci.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "checks/rdma/rdma_fabric.hpp"
#include "checks/rdma/rdma_judge.hpp"
#include "checks/rdma/rdma_readings.hpp"
#include "preflight/node_shape.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;

namespace {

RdmaPort fabric_port(double rate, const std::string& layer, bool up = true) {
  RdmaPort p;
  p.state = up ? "ACTIVE" : "DOWN";
  p.phys_state = up ? "LinkUp" : "Disabled";
  p.rate_gbps = up ? rate : 0;
  p.link_layer = layer;
  p.usable_gid = up;
  return p;
}

RdmaNicReading fabric_nic(const std::string& name, const std::string& transport, RdmaPort port,
                          int gpu = -1, GpuAffinity affinity = GpuAffinity::unknown) {
  RdmaNicReading r;
  r.device.name = name;
  r.device.transport = transport;
  r.device.nearest_gpu = gpu;
  r.gpu_affinity = affinity;
  r.device.ports.push_back(std::move(port));
  return r;
}

// An AWS p5.48xlarge: rdmap79s0.. in groups of four behind each GPU's switch (aws-ofi-nccl's
// p5.48xl-topo.xml; the names from the EFA device plugin's log). `located`: false for a view
// without the PCIe tree.
RdmaReadings p5_efa(bool located = true) {
  static const int kFirstBus[] = {79, 96, 113, 130, 147, 164, 181, 198};
  RdmaReadings r;
  r.gpus = 8;
  for (int gpu = 0; gpu < 8; ++gpu) {
    for (int k = 0; k < 4; ++k) {
      r.devices.push_back(fabric_nic("rdmap" + std::to_string(kFirstBus[gpu] + k) + "s0", "efa",
                                     fabric_port(100, "Unspecified"), located ? gpu : -1,
                                     located ? GpuAffinity::pcie_switch : GpuAffinity::unknown));
    }
  }
  return r;
}

Thresholds with_shape(const std::string& sku, const std::string& shape) {
  Thresholds t = test::builtin_thresholds(find_sku(sku), "test");
  if (!shape.empty()) {
    const MachineShape* s = find_node_shape(shape);
    REQUIRE(s != nullptr);
    t.set_node_shape(s, "test");
  }
  return t;
}

std::set<std::string> fabric_codes(const std::vector<Finding>& findings, bool with_info = false) {
  std::set<std::string> out;
  for (const Finding& f : findings) {
    if (with_info || f.severity != Severity::info) out.insert(f.code + "@" + f.entity);
  }
  return out;
}

}  // namespace

TEST_CASE("rdma fabric: an AWS p5.48xlarge passes with its shape, detected or assumed absent") {
  // Before node shapes every one of the 32 ports failed RDMA_PORT_SLOW against the H100 SKU's
  // 400 Gb/s per-port floor.
  CHECK(
      fabric_codes(judge_rdma(p5_efa(), with_shape("h100-sxm5-80gb", "aws-p5.48xlarge"))).empty());
  // Named as the H100 reference board on purpose, the EFA devices are no part of its fabric and
  // the node fails for having none.
  const auto as_hgx = judge_rdma(p5_efa(), with_shape("h100-sxm5-80gb", "hgx-h100"));
  CHECK(fabric_codes(as_hgx) == std::set<std::string>{"RDMA_FABRIC_BANDWIDTH_LOW@node"});
  // Assumed (DMI unread, 8 x H100), the board that the EFA devices contradict is set aside and
  // said so: no false alarm on a p5 whose DMI could not be read.
  Thresholds assumed = with_shape("h100-sxm5-80gb", "");
  choose_node_shape(assumed, "", "", 8);
  REQUIRE(assumed.node_shape() != nullptr);
  const auto set_aside = judge_rdma(p5_efa(), assumed);
  CHECK(fabric_codes(set_aside).empty());
  CHECK(fabric_codes(set_aside, true).count("RDMA_NOT_JUDGED@node") == 1);
  // No shape at all: siblings agree, nothing fails.
  CHECK(fabric_codes(judge_rdma(p5_efa(), with_shape("h100-sxm5-80gb", ""))).empty());
}

TEST_CASE("rdma fabric: a p5 that lost one EFA device fails on the GPU that lost it") {
  RdmaReadings r = p5_efa();
  r.devices.erase(r.devices.begin() + 13);  // rdmap131s0, the second of gpu3's four
  const auto findings = judge_rdma(r, with_shape("h100-sxm5-80gb", "aws-p5.48xlarge"));
  CHECK(fabric_codes(findings) == std::set<std::string>{"RDMA_GPU_BANDWIDTH_LOW@gpu3"});
  for (const Finding& f : findings) {
    if (f.code != "RDMA_GPU_BANDWIDTH_LOW") continue;
    CHECK(f.message.find("300 Gb/s") != std::string::npos);
    CHECK(f.message.find("rdmap130s0, rdmap132s0, rdmap133s0") != std::string::npos);
  }
  // Without the PCIe tree (a container) the node is judged as a whole, and says so.
  RdmaReadings blind = p5_efa(false);
  blind.devices.erase(blind.devices.begin() + 13);
  const auto whole = judge_rdma(blind, with_shape("h100-sxm5-80gb", "aws-p5.48xlarge"));
  CHECK(fabric_codes(whole) == std::set<std::string>{"RDMA_FABRIC_BANDWIDTH_LOW@node"});
  CHECK(fabric_codes(whole, true).count("RDMA_NOT_JUDGED@node") == 1);
  // A port down is named on the port, once: not again on its GPU or the node.
  RdmaReadings down = p5_efa();
  down.devices[13].device.ports[0] = fabric_port(0, "Unspecified", false);
  CHECK(fabric_codes(judge_rdma(down, with_shape("h100-sxm5-80gb", "aws-p5.48xlarge"))) ==
        std::set<std::string>{"RDMA_PORT_DOWN@rdmap131s0"});
}

TEST_CASE("rdma fabric: a bond at half rate is found with no SKU, shape or thresholds file") {
  // Four RoCE bonds of two 100 Gb/s ports each (mlx5_bond_0..3 at "Rate: 200", as ibstat shows a
  // bond: pplx-garden#2, DeepEP#137), on a node of unknown GPUs: no SKU, no shape.
  RdmaReadings r;
  for (int i = 0; i < 4; ++i) {
    RdmaNicReading b = fabric_nic("mlx5_bond_" + std::to_string(i), "roce",
                                  fabric_port(i == 2 ? 100 : 200, "Ethernet"));
    b.device.bond_members = {"ens" + std::to_string(i) + "f0np0",
                             "ens" + std::to_string(i) + "f1np1"};
    r.devices.push_back(b);
  }
  const Thresholds generic = test::builtin_thresholds(nullptr, "test");
  const auto findings = judge_rdma(r, generic);
  CHECK(fabric_codes(findings) == std::set<std::string>{"RDMA_PORT_SLOW@mlx5_bond_2"});
  for (const Finding& f : findings) {
    if (f.code == "RDMA_PORT_SLOW") CHECK(f.message.find("sibling") != std::string::npos);
  }
  // Healthy, nothing; and a lone device has no sibling to be compared with.
  r.devices[2].device.ports[0] = fabric_port(200, "Ethernet");
  CHECK(fabric_codes(judge_rdma(r, generic)).empty());
  RdmaReadings lone;
  lone.devices.push_back(fabric_nic("mlx5_0", "roce", fabric_port(100, "Ethernet")));
  CHECK(fabric_codes(judge_rdma(lone, generic)).empty());
}

TEST_CASE("rdma fabric: a DGX H200 in a container passes as its reference board") {
  // No /sys/bus/pci: no NIC's place is known. The eight compute ports at 400, an InfiniBand
  // storage port at 100 Gb/s, another disabled, and the bonded Ethernet in-band ports.
  RdmaReadings r;
  r.gpus = 8;
  for (const char* name :
       {"mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"}) {
    r.devices.push_back(fabric_nic(name, "ib", fabric_port(400, "InfiniBand")));
  }
  r.devices.push_back(fabric_nic("mlx5_1", "ib", fabric_port(100, "InfiniBand")));
  r.devices.push_back(fabric_nic("mlx5_7", "ib", fabric_port(0, "InfiniBand", false)));
  r.devices.push_back(fabric_nic("mlx5_bond_0", "roce", fabric_port(200, "Ethernet")));
  r.devices.back().device.bond_members = {"enp41s0f1np1", "enp170s0f1np1"};

  Thresholds h200 = test::builtin_thresholds(find_sku("h200-sxm-141gb"), "test");
  // Without a shape the storage ports read as a slow and a dead compute port.
  CHECK(fabric_codes(judge_rdma(r, h200)) ==
        std::set<std::string>{"RDMA_PORT_SLOW@mlx5_1", "RDMA_PORT_DOWN@mlx5_7"});
  // As the node is judged by default (8 x H200 is the HGX H200 reference board): it passes, the
  // storage ports reported as such, and the per-GPU judgement said to be not made.
  choose_node_shape(h200, "", "", 8);
  REQUIRE(h200.node_shape() != nullptr);
  CHECK(h200.node_shape()->id == "hgx-h200");
  CHECK(h200.node_shape_by().find("assumed") != std::string::npos);
  const auto findings = judge_rdma(r, h200);
  CHECK(fabric_codes(findings).empty());
  CHECK(fabric_codes(findings, true) ==
        std::set<std::string>{"RDMA_NIC_NOT_COMPUTE@mlx5_1", "RDMA_NIC_NOT_COMPUTE@mlx5_7",
                              "RDMA_NIC_NOT_COMPUTE@mlx5_bond_0", "RDMA_NOT_JUDGED@node"});
  // A compute port trained down is still found, against the shape's rate.
  r.devices[4].device.ports[0] = fabric_port(200, "InfiniBand");
  CHECK(fabric_codes(judge_rdma(r, h200)) == std::set<std::string>{"RDMA_PORT_SLOW@mlx5_6"});
}

TEST_CASE("rdma fabric: roles are recorded, and a shape without RDMA has no compute NIC") {
  RdmaReadings r;
  r.devices.push_back(
      fabric_nic("mlx5_0", "ib", fabric_port(400, "InfiniBand"), 0, GpuAffinity::pcie_switch));
  r.devices.push_back(fabric_nic("mlx5_1", "ib", fabric_port(200, "InfiniBand")));
  // An Azure VM's accelerated-networking function: Ethernet beside an InfiniBand fabric.
  r.devices.push_back(fabric_nic("mlx5_an0", "roce", fabric_port(100, "Ethernet")));
  r.devices.push_back(fabric_nic("mlx5_3", "ib", fabric_port(0, "InfiniBand", false)));
  const Thresholds generic = test::builtin_thresholds(nullptr, "test");
  assign_roles(r, generic);
  CHECK(r.devices[0].role == "compute");
  CHECK(r.devices[1].role == "storage");
  CHECK(r.devices[2].role == "management");
  CHECK(r.devices[3].role == "unknown");
  CHECK_FALSE(r.devices[1].role_reason.empty());

  Thresholds a3 = with_shape("h100-sxm5-80gb", "gcp-a3-highgpu-8g");
  assign_roles(r, a3);
  for (const auto& d : r.devices) CHECK(d.role != "compute");
  CHECK(fabric_codes(judge_rdma(r, a3)).empty());
}

TEST_CASE("rdma fabric: an EFA device with neither RDMA write nor read is named, not failed") {
  RdmaReadings r = p5_efa();
  r.devices[0].device.rdma_write = false;
  r.devices[0].device.rdma_read = false;
  const auto findings = judge_rdma(r, with_shape("h100-sxm5-80gb", "aws-p5.48xlarge"));
  CHECK(fabric_codes(findings).empty());
  CHECK(fabric_codes(findings, true).count("RDMA_NO_ONE_SIDED@rdmap79s0") == 1);
  // The readings carry it through judge.
  nlohmann::ordered_json j;
  to_json(j, r);
  RdmaReadings back;
  from_json(j, back);
  CHECK_FALSE(back.devices[0].device.rdma_write);
  CHECK_FALSE(back.devices[0].device.rdma_read);
  CHECK(back.devices[0].device.transport == "efa");
  CHECK(back.gpus == 8);
}
