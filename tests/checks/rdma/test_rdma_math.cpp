// The rdma check's host logic (src/checks/rdma/rdma_math.hpp): port rate decoding, port
// judgements, transfer planning and classification, and the GPU nearest a NIC. Expected values
// are worked out by hand (the ibv encodings and the rates ibstat prints), not recomputed with
// the code under test.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "checks/rdma/rdma_math.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_thresholds.hpp"

using preflight::GpuLocation;
using preflight::nearest_gpu;
using preflight::PlannedTransfer;
using preflight::PortIssue;
using preflight::PortJudgement;
using preflight::rdma_extra_loopbacks;
using preflight::RdmaDevice;
using preflight::RdmaExpectations;
using preflight::RdmaMemory;
using preflight::RdmaMesh;
using preflight::RdmaOp;
using preflight::RdmaPort;
using preflight::TransferClass;

namespace {

// ibv encodings used below.
constexpr int kSpeedEdr = 32;
constexpr int kSpeedHdr = 64;
constexpr int kSpeedNdr = 128;
constexpr int kWidth2x = 16;
constexpr int kWidth4x = 2;

// An active InfiniBand port, NDR 4x unless told otherwise. rate_gbps is left 0 so that the
// rate is decoded from the encodings.
RdmaPort ib_port(int port_num = 1, int speed = kSpeedNdr, int width = kWidth4x) {
  RdmaPort p;
  p.port_num = port_num;
  p.state = "ACTIVE";
  p.phys_state = "LinkUp";
  p.active_speed = speed;
  p.active_width = width;
  p.active_mtu = 4096;
  p.link_layer = "InfiniBand";
  p.usable_gid = true;
  p.gid_index = 0;
  return p;
}

RdmaPort roce_port(bool usable_gid, int port_num = 1) {
  RdmaPort p = ib_port(port_num);
  p.link_layer = "Ethernet";
  p.usable_gid = usable_gid;
  p.gid_index = usable_gid ? 3 : -1;
  return p;
}

RdmaDevice device(const std::string& name, std::vector<RdmaPort> ports, int nearest = -1) {
  RdmaDevice d;
  d.name = name;
  d.ports = std::move(ports);
  d.nearest_gpu = nearest;
  return d;
}

// A DGX H100-like node: n ConnectX-7 NDR 4x (400 Gb/s) ports, mlx5_i next to GPU i.
std::vector<RdmaDevice> healthy_rdma_node(int n) {
  std::vector<RdmaDevice> devices;
  for (int i = 0; i < n; ++i) {
    devices.push_back(device("mlx5_" + std::to_string(i), {ib_port()}, i));
  }
  return devices;
}

RdmaExpectations min_rate(double gbps) {
  RdmaExpectations e;
  e.min_port_gbps = gbps;
  return e;
}

int count_kind(const std::vector<PlannedTransfer>& plan, const std::string& kind) {
  int n = 0;
  for (const auto& t : plan) n += t.kind == kind ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("rdma math: width encodings") {
  CHECK(preflight::rdma_width_lanes(1) == 1);
  CHECK(preflight::rdma_width_lanes(2) == 4);
  CHECK(preflight::rdma_width_lanes(4) == 8);
  CHECK(preflight::rdma_width_lanes(8) == 12);
  CHECK(preflight::rdma_width_lanes(16) == 2);
  for (int unknown : {0, 3, 5, 32, 64, -1, 255}) {
    INFO(unknown);
    CHECK(preflight::rdma_width_lanes(unknown) == 0);
  }
}

TEST_CASE("rdma math: lane signalling rates") {
  CHECK(preflight::rdma_lane_gbps(1) == 2.5);
  CHECK(preflight::rdma_lane_gbps(2) == 5.0);
  CHECK(preflight::rdma_lane_gbps(4) == 10.0);
  CHECK(preflight::rdma_lane_gbps(8) == 10.0);
  CHECK(preflight::rdma_lane_gbps(16) == 14.0625);
  CHECK(preflight::rdma_lane_gbps(32) == 25.78125);
  CHECK(preflight::rdma_lane_gbps(64) == 53.125);
  CHECK(preflight::rdma_lane_gbps(128) == 106.25);
  CHECK(preflight::rdma_lane_gbps(256) == 212.5);  // XDR, only in active_speed_ex
  for (int unknown : {0, 3, 6, 512, 0x1000, -1}) {
    INFO(unknown);
    CHECK(preflight::rdma_lane_gbps(unknown) == 0.0);
  }
}

TEST_CASE("rdma math: port rates are lanes times the nominal lane rate") {
  using preflight::rdma_port_rate_gbps;
  // 4x at each speed, as ibstat prints "Rate".
  CHECK(rdma_port_rate_gbps(1, kWidth4x) == 10.0);    // SDR 4 x 2.5
  CHECK(rdma_port_rate_gbps(2, kWidth4x) == 20.0);    // DDR 4 x 5
  CHECK(rdma_port_rate_gbps(4, kWidth4x) == 40.0);    // QDR 4 x 10
  CHECK(rdma_port_rate_gbps(8, kWidth4x) == 40.0);    // FDR10 4 x 10
  CHECK(rdma_port_rate_gbps(16, kWidth4x) == 56.0);   // FDR 4 x 14
  CHECK(rdma_port_rate_gbps(32, kWidth4x) == 100.0);  // EDR 4 x 25
  CHECK(rdma_port_rate_gbps(64, kWidth4x) == 200.0);  // HDR 4 x 50
  CHECK(rdma_port_rate_gbps(128, kWidth4x) == 400.0);
  CHECK(rdma_port_rate_gbps(256, kWidth4x) == 800.0);  // XDR 4 x 200
  // Each width at NDR (100 a lane).
  CHECK(rdma_port_rate_gbps(kSpeedNdr, 1) == 100.0);
  CHECK(rdma_port_rate_gbps(kSpeedNdr, 16) == 200.0);
  CHECK(rdma_port_rate_gbps(kSpeedNdr, 4) == 800.0);
  CHECK(rdma_port_rate_gbps(kSpeedNdr, 8) == 1200.0);
  CHECK(rdma_port_rate_gbps(1, 1) == 2.5);             // SDR 1x
  CHECK(rdma_port_rate_gbps(kSpeedHdr, 16) == 100.0);  // HDR 2x: a split HDR port
  // Either encoding unknown: no rate.
  CHECK(rdma_port_rate_gbps(0, kWidth4x) == 0.0);
  CHECK(rdma_port_rate_gbps(3, kWidth4x) == 0.0);
  CHECK(rdma_port_rate_gbps(kSpeedNdr, 0) == 0.0);
  CHECK(rdma_port_rate_gbps(kSpeedNdr, 3) == 0.0);
  CHECK(rdma_port_rate_gbps(0, 0) == 0.0);
}

TEST_CASE("rdma math: port rate names") {
  using preflight::rdma_port_rate_name;
  CHECK(rdma_port_rate_name(kSpeedNdr, kWidth4x) == "NDR 4x (400 Gb/s)");
  CHECK(rdma_port_rate_name(kSpeedHdr, kWidth4x) == "HDR 4x (200 Gb/s)");
  CHECK(rdma_port_rate_name(kSpeedEdr, kWidth4x) == "EDR 4x (100 Gb/s)");
  CHECK(rdma_port_rate_name(kSpeedHdr, kWidth2x) == "HDR 2x (100 Gb/s)");
  CHECK(rdma_port_rate_name(16, kWidth4x) == "FDR 4x (56 Gb/s)");
  CHECK(rdma_port_rate_name(8, kWidth4x) == "FDR10 4x (40 Gb/s)");
  CHECK(rdma_port_rate_name(1, 1) == "SDR 1x (2.5 Gb/s)");
  CHECK(rdma_port_rate_name(2, 8) == "DDR 12x (60 Gb/s)");
  CHECK(rdma_port_rate_name(4, 4) == "QDR 8x (80 Gb/s)");
  CHECK(rdma_port_rate_name(256, kWidth4x) == "XDR 4x (800 Gb/s)");
  // Unknown encodings are shown in hex, with no rate.
  CHECK(rdma_port_rate_name(3, kWidth4x) == "speed 0x3 4x");
  CHECK(rdma_port_rate_name(0x200, kWidth2x) == "speed 0x200 2x");
  CHECK(rdma_port_rate_name(kSpeedNdr, 3) == "NDR width 0x3");
  CHECK(rdma_port_rate_name(0, 0) == "speed 0x0 width 0x0");
}

TEST_CASE("rdma math: judge_ports") {
  SECTION("a healthy node of 8 x 400 Gb/s ports has no issue") {
    CHECK(preflight::judge_ports(healthy_rdma_node(8), min_rate(400)).empty());
    CHECK(preflight::judge_ports(healthy_rdma_node(8), {}).empty());
  }
  SECTION("a port that is down is only down") {
    auto devices = healthy_rdma_node(8);
    devices[3].ports[0].state = "DOWN";
    devices[3].ports[0].phys_state = "Disabled";
    devices[3].ports[0].active_speed = 0;  // a down port reports no rate: not unknown_rate
    const auto issues = preflight::judge_ports(devices, min_rate(400));
    REQUIRE(issues.size() == 1);
    CHECK(issues[0].device == "mlx5_3");
    CHECK(issues[0].port == 1);
    CHECK(issues[0].issue == PortIssue::down);
    CHECK(issues[0].detail == "state DOWN, physical Disabled");
  }
  SECTION("ACTIVE without LinkUp, or LinkUp without ACTIVE, is down") {
    std::vector<RdmaDevice> devices = {device("mlx5_0", {ib_port(1), ib_port(2)})};
    devices[0].ports[0].phys_state = "Polling";
    devices[0].ports[1].state = "INIT";  // no subnet manager yet
    const auto issues = preflight::judge_ports(devices, {});
    REQUIRE(issues.size() == 2);
    CHECK(issues[0].issue == PortIssue::down);
    CHECK(issues[0].detail == "state ACTIVE, physical Polling");
    CHECK(issues[1].port == 2);
    CHECK(issues[1].detail == "state INIT, physical LinkUp");
  }
  SECTION("empty state texts read as unknown") {
    std::vector<RdmaDevice> devices = {device("mlx5_0", {RdmaPort{}})};
    const auto issues = preflight::judge_ports(devices, {});
    REQUIRE(issues.size() == 1);
    CHECK(issues[0].detail == "state unknown, physical unknown");
  }
  SECTION("a port trained to HDR on a 400 Gb/s node is slow") {
    auto devices = healthy_rdma_node(8);
    devices[5].ports[0].active_speed = kSpeedHdr;
    const auto issues = preflight::judge_ports(devices, min_rate(400));
    REQUIRE(issues.size() == 1);
    CHECK(issues[0].device == "mlx5_5");
    CHECK(issues[0].issue == PortIssue::slow);
    CHECK(issues[0].detail == "200 Gb/s, below the minimum of 400 Gb/s");
  }
  SECTION("the engine's rate_gbps wins over the encodings") {
    auto devices = healthy_rdma_node(1);
    devices[0].ports[0].rate_gbps = 200;
    CHECK(preflight::judge_ports(devices, min_rate(400)).size() == 1);
    devices[0].ports[0].rate_gbps = 400;
    devices[0].ports[0].active_speed = 3;  // undecodable, but the engine knew the rate
    CHECK(preflight::judge_ports(devices, min_rate(400)).empty());
  }
  SECTION("a port exactly at the minimum is not slow") {
    CHECK(preflight::judge_ports(healthy_rdma_node(2), min_rate(400)).empty());
    CHECK(preflight::judge_ports(healthy_rdma_node(2), min_rate(400.5)).size() == 2);
  }
  SECTION("expectations off: no minimum, no slow port") {
    auto devices = healthy_rdma_node(2);
    devices[0].ports[0].active_speed = kSpeedEdr;
    CHECK(preflight::judge_ports(devices, min_rate(0)).empty());
    RdmaExpectations with_rnics;
    with_rnics.rnics = 8;  // counted by the caller, not here
    CHECK(preflight::judge_ports(devices, with_rnics).empty());
  }
  SECTION("RoCE without a usable GID") {
    std::vector<RdmaDevice> devices = {device("mlx5_0", {roce_port(true)}),
                                       device("mlx5_1", {roce_port(false)})};
    const auto issues = preflight::judge_ports(devices, min_rate(400));
    REQUIRE(issues.size() == 1);
    CHECK(issues[0].device == "mlx5_1");
    CHECK(issues[0].issue == PortIssue::no_gid);
    CHECK(issues[0].detail == "no RoCE v2 GID with an IP address");
  }
  SECTION("InfiniBand needs no RoCE GID") {
    auto devices = healthy_rdma_node(1);
    devices[0].ports[0].usable_gid = false;
    CHECK(preflight::judge_ports(devices, {}).empty());
  }
  SECTION("a slow RoCE port without a GID has both issues") {
    std::vector<RdmaDevice> devices = {device("mlx5_0", {roce_port(false)})};
    devices[0].ports[0].active_speed = kSpeedHdr;
    const auto issues = preflight::judge_ports(devices, min_rate(400));
    REQUIRE(issues.size() == 2);
    CHECK(issues[0].issue == PortIssue::slow);
    CHECK(issues[1].issue == PortIssue::no_gid);
  }
  SECTION("an active port whose rate cannot be decoded") {
    auto devices = healthy_rdma_node(2);
    devices[1].ports[0].active_speed = 3;
    for (double minimum : {0.0, 400.0}) {
      INFO(minimum);
      const auto issues = preflight::judge_ports(devices, min_rate(minimum));
      REQUIRE(issues.size() == 1);
      CHECK(issues[0].device == "mlx5_1");
      CHECK(issues[0].issue == PortIssue::unknown_rate);  // never also `slow`
      CHECK(issues[0].detail == "rate unknown (speed 0x3 4x)");
    }
  }
  SECTION("a device with an error is skipped") {
    auto devices = healthy_rdma_node(2);
    devices[0].error = "ibv_open_device: No such device";
    devices[0].ports[0].state = "DOWN";
    devices[0].ports[0].phys_state = "Disabled";
    CHECK(preflight::judge_ports(devices, min_rate(400)).empty());
  }
}

TEST_CASE("rdma math: usable_ports") {
  std::vector<RdmaDevice> devices = {
      device("mlx5_0", {ib_port(1), ib_port(2)}),
      device("mlx5_1", {ib_port(1)}),
      device("mlx5_2", {roce_port(false)}),         // no GID: not usable
      device("mlx5_3", {roce_port(true)}),          // RoCE with a GID
      device("mlx5_4", {ib_port(1)}),               // errored below
      device("mlx5_5", {ib_port(1, 3, kWidth4x)}),  // unknown rate: still usable
  };
  devices[0].ports[0].state = "DOWN";
  devices[1].ports[0].phys_state = "Polling";
  devices[4].error = "ibv_query_port: Input/output error";
  const auto ports = preflight::usable_ports(devices);
  const std::vector<std::pair<std::string, int>> expected = {
      {"mlx5_0", 2}, {"mlx5_3", 1}, {"mlx5_5", 1}};
  CHECK(ports == expected);
  CHECK(preflight::usable_ports({}).empty());
  CHECK(preflight::usable_ports(healthy_rdma_node(8)).size() == 8);
}

namespace {

// GPUs 0..n-1, all usable by CUDA, on a host of one NUMA node: one loopback per port.
RdmaMesh gpus_mesh(int n) {
  RdmaMesh mesh;
  for (int i = 0; i < n; ++i) mesh.gpus.push_back(i);
  return mesh;
}

}  // namespace

TEST_CASE("rdma math: plan_transfers") {
  SECTION("one device: a loopback and a GPUDirect loopback") {
    const auto plan = preflight::plan_transfers(healthy_rdma_node(1), gpus_mesh(1));
    REQUIRE(plan.size() == 2);
    CHECK(plan[0].kind == "loopback");
    CHECK(plan[0].entity == "mlx5_0");
    CHECK(plan[0].from_device == "mlx5_0");
    CHECK(plan[0].to_device == "mlx5_0");
    CHECK(plan[0].memory == RdmaMemory::host);
    CHECK(plan[0].host_numa_node == -1);  // one NUMA node: wherever the kernel places it
    CHECK(plan[0].gpu_index == -1);
    CHECK(plan[0].op == RdmaOp::write);
    CHECK(plan[0].expected_gbps == 400);
    CHECK(plan[1].kind == "gpudirect");
    CHECK(plan[1].entity == "mlx5_0-gpu0");
    CHECK(plan[1].memory == RdmaMemory::gpu);
    CHECK(plan[1].gpu_index == 0);
    CHECK(plan[1].expected_gbps == 400);
  }
  SECTION("two devices: 2 loopbacks, 2 pairs, each NIC with both GPUs, its nearest first") {
    const auto plan = preflight::plan_transfers(healthy_rdma_node(2), gpus_mesh(2));
    REQUIRE(plan.size() == 2 + 2 + 4);
    CHECK(plan[2].kind == "pair");
    CHECK(plan[2].entity == "mlx5_0-mlx5_1");
    CHECK(plan[2].from_device == "mlx5_0");
    CHECK(plan[2].to_device == "mlx5_1");
    CHECK(plan[3].entity == "mlx5_1-mlx5_0");
    CHECK(plan[4].kind == "gpudirect");
    std::vector<std::string> cells;
    for (std::size_t i = 4; i < plan.size(); ++i) cells.push_back(plan[i].entity);
    CHECK(cells ==
          std::vector<std::string>{"mlx5_0-gpu0", "mlx5_0-gpu1", "mlx5_1-gpu1", "mlx5_1-gpu0"});
  }
  SECTION("four devices: 4 loopbacks, 12 ordered pairs row-major, every usable GPU per NIC") {
    auto devices = healthy_rdma_node(4);
    devices[2].nearest_gpu = -1;  // no GPU located near this NIC
    RdmaMesh mesh;
    mesh.gpus = {0, 1, 3};  // CUDA cannot use gpu2
    const auto plan = preflight::plan_transfers(devices, mesh);
    REQUIRE(plan.size() == 4 + 12 + 4 * 3);
    CHECK(count_kind(plan, "loopback") == 4);
    CHECK(count_kind(plan, "pair") == 12);
    CHECK(count_kind(plan, "gpudirect") == 12);
    const std::vector<std::string> pairs = {"mlx5_0-mlx5_1", "mlx5_0-mlx5_2", "mlx5_0-mlx5_3",
                                            "mlx5_1-mlx5_0", "mlx5_1-mlx5_2", "mlx5_1-mlx5_3",
                                            "mlx5_2-mlx5_0", "mlx5_2-mlx5_1", "mlx5_2-mlx5_3",
                                            "mlx5_3-mlx5_0", "mlx5_3-mlx5_1", "mlx5_3-mlx5_2"};
    for (std::size_t i = 0; i < pairs.size(); ++i) CHECK(plan[4 + i].entity == pairs[i]);
    for (std::size_t i = 0; i < 4; ++i) CHECK(plan[i].kind == "loopback");
    CHECK(plan[16].gpu_index == 0);
    // mlx5_2's place is unknown: it starts at the usable GPUs' third, gpu3.
    CHECK(plan[22].entity == "mlx5_2-gpu3");
    // mlx5_3's nearest is gpu3: first, then the others in order.
    CHECK(plan[25].entity == "mlx5_3-gpu3");
    CHECK(plan[26].entity == "mlx5_3-gpu0");
  }
  SECTION("eight 400 Gb/s devices and eight GPUs: 8 + 56 + 64") {
    CHECK(preflight::plan_transfers(healthy_rdma_node(8), gpus_mesh(8)).size() == 8 + 56 + 64);
  }
  SECTION("a pair expects the lower of its two ports' rates") {
    auto devices = healthy_rdma_node(2);
    devices[1].ports[0].active_speed = kSpeedHdr;  // 200 Gb/s
    const auto plan = preflight::plan_transfers(devices, {});
    REQUIRE(plan.size() == 4);
    CHECK(plan[0].expected_gbps == 400);
    CHECK(plan[1].expected_gbps == 200);
    CHECK(plan[2].expected_gbps == 200);
    CHECK(plan[3].expected_gbps == 200);
    // An unknown rate on either side leaves the pair unjudged (0).
    devices[1].ports[0].active_speed = 3;
    CHECK(preflight::plan_transfers(devices, {})[2].expected_gbps == 0);
  }
  SECTION("two-port devices: a loopback per port, pairs and the GPU mesh over the first") {
    std::vector<RdmaDevice> devices = {device("mlx5_0", {ib_port(1), ib_port(2)}, 0),
                                       device("mlx5_1", {ib_port(1), ib_port(2)}, 1)};
    devices[1].ports[0].state = "DOWN";  // mlx5_1's first usable port is 2
    const auto plan = preflight::plan_transfers(devices, gpus_mesh(2));
    REQUIRE(plan.size() == 3 + 2 + 4);
    CHECK(rdma_extra_loopbacks(devices) == 1);
    CHECK(plan[0].entity == "mlx5_0");
    CHECK(plan[1].entity == "mlx5_0:2");
    CHECK(plan[1].from_port == 2);
    CHECK(plan[1].to_port == 2);
    CHECK(plan[2].entity == "mlx5_1:2");
    CHECK(plan[3].entity == "mlx5_0-mlx5_1");
    CHECK(plan[3].from_port == 1);
    CHECK(plan[3].to_port == 2);
    CHECK(plan[4].from_port == 2);
    CHECK(plan[4].to_port == 1);
    CHECK(plan[7].kind == "gpudirect");
    CHECK(plan[7].entity == "mlx5_1-gpu1");
    CHECK(plan[7].from_port == 2);
  }
  SECTION("unusable ports and errored devices are left out") {
    auto devices = healthy_rdma_node(4);
    devices[1].ports[0].state = "DOWN";
    devices[2].error = "ibv_open_device failed";
    const auto plan = preflight::plan_transfers(devices, gpus_mesh(4));
    CHECK(count_kind(plan, "loopback") == 2);
    CHECK(count_kind(plan, "pair") == 2);
    CHECK(count_kind(plan, "gpudirect") == 2 * 4);
    CHECK(preflight::plan_transfers({}, gpus_mesh(4)).empty());
  }
  SECTION("InfiniBand and RoCE ports are not paired") {
    std::vector<RdmaDevice> devices = {device("mlx5_0", {ib_port()}), device("mlx5_1", {ib_port()}),
                                       device("mlx5_2", {roce_port(true)})};
    const auto plan = preflight::plan_transfers(devices, {});
    CHECK(count_kind(plan, "loopback") == 3);
    REQUIRE(count_kind(plan, "pair") == 2);
    CHECK(plan[3].entity == "mlx5_0-mlx5_1");
    CHECK(plan[4].entity == "mlx5_1-mlx5_0");
  }
}

TEST_CASE("rdma math: classify_transfer") {
  using preflight::classify_transfer;
  // Expected 400 Gb/s: fail below 300 (0.75), warn below 360 (0.9).
  CHECK(classify_transfer(390, 400, 0.75, 0.9) == TransferClass::ok);
  CHECK(classify_transfer(360, 400, 0.75, 0.9) == TransferClass::ok);  // at the warning line
  CHECK(classify_transfer(359.9, 400, 0.75, 0.9) == TransferClass::warn);
  CHECK(classify_transfer(300, 400, 0.75, 0.9) == TransferClass::warn);  // at the failure line
  CHECK(classify_transfer(299.9, 400, 0.75, 0.9) == TransferClass::fail);
  CHECK(classify_transfer(0, 400, 0.75, 0.9) == TransferClass::fail);
  CHECK(classify_transfer(450, 400, 0.75, 0.9) == TransferClass::ok);
  // An unknown expected rate judges nothing.
  CHECK(classify_transfer(0, 0, 0.75, 0.9) == TransferClass::ok);
  CHECK(classify_transfer(1, -5, 0.75, 0.9) == TransferClass::ok);
  // Fractions of 0 turn the levels off.
  CHECK(classify_transfer(0, 400, 0, 0) == TransferClass::ok);
  CHECK(classify_transfer(0, 400, 0, 0.9) == TransferClass::warn);
  // A NaN measurement is not a pass.
  CHECK(classify_transfer(std::nan(""), 400, 0.75, 0.9) == TransferClass::fail);
}

TEST_CASE("rdma math: nearest_gpu") {
  // A DGX H100-like tree: each NIC sits behind the same PCIe switch as one GPU.
  const std::string nic =
      "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0";
  const std::vector<GpuLocation> gpus = {
      {0, "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:19:00.0", 0},
      {1, "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:02.0/0000:1b:00.0", 0},
      {2, "/sys/devices/pci0000:15/0000:15:02.0/0000:2a:00.0", 0},
      {3, "/sys/devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0", 1},
  };
  SECTION("the longest shared path wins; ties go to the lower index") {
    // GPUs 0 and 1 share 5 components (sys, devices, pci0000:15, 0000:15:01.0, 0000:16:00.0),
    // GPU 2 shares 3, GPU 3 shares 2.
    CHECK(nearest_gpu(nic, 0, gpus) == 0);
    CHECK(nearest_gpu(nic, -1, gpus) == 0);
    const std::vector<GpuLocation> reversed = {gpus[3], gpus[2], gpus[1], gpus[0]};
    CHECK(nearest_gpu(nic, 0, reversed) == 0);
  }
  SECTION("a longer prefix beats the NUMA node") {
    CHECK(nearest_gpu(nic, 1, gpus) == 0);
  }
  SECTION("whole components count, not characters") {
    // "0000:15:01.0" and "0000:15:01.1" share characters but not a component.
    const std::vector<GpuLocation> near_miss = {
        {0, "/sys/devices/pci0000:15/0000:15:01.1/0000:16:00.0", -1},
        {1, "/sys/devices/pci0000:15/0000:15:01.0", -1},
    };
    CHECK(nearest_gpu(nic, -1, near_miss) == 1);
  }
  SECTION("NUMA node breaks a tie, then the lower index") {
    // Only /sys/devices in common with each: a tie of 2 components.
    const std::string other = "/sys/devices/pci0000:c0/0000:c0:01.0/0000:c1:00.0";
    CHECK(nearest_gpu(other, 1, gpus) == 3);
    CHECK(nearest_gpu(other, 0, {gpus[3], gpus[2]}) == 2);
    CHECK(nearest_gpu(other, -1, {gpus[3], gpus[2]}) == 2);  // -1: no NUMA match
    const std::vector<GpuLocation> unknown_numa = {{5, "/sys/devices/pci0000:a0", -1},
                                                   {4, "/sys/devices/pci0000:b0", -1}};
    CHECK(nearest_gpu(other, -1, unknown_numa) == 4);  // -1 does not match -1
  }
  SECTION("no GPUs") {
    CHECK(nearest_gpu(nic, 0, {}) == -1);
  }
  SECTION("doubled and trailing slashes do not count as components") {
    CHECK(nearest_gpu("/sys//devices/pci0000:97/0000:97:01.0/", 0, gpus) == 3);
    CHECK(nearest_gpu("", 1, gpus) == 3);  // no path: NUMA decides
  }
}

TEST_CASE("rdma math: gpu_affinity reads nvidia-smi topo's levels from the PCI paths") {
  using preflight::gpu_affinity;
  using preflight::GpuAffinity;
  // A DGX H100-like tree: GPU0 and its NIC behind one switch under root port 15:01.0; another
  // root port of the same host bridge; another host bridge of the same NUMA node; the other
  // socket.
  const GpuLocation gpu0 = {
      0, "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:1b:00.0", 0};
  const std::string nic =
      "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0";
  CHECK(gpu_affinity(nic, 0, gpu0) == GpuAffinity::pcie_switch);  // PIX
  // Two switch levels between them (PXB) is still the same switch hierarchy.
  const std::string deeper =
      "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:02.0/0000:20:00.0/"
      "0000:21:00.0/0000:22:00.0";
  CHECK(gpu_affinity(deeper, 0, gpu0) == GpuAffinity::pcie_switch);
  CHECK(gpu_affinity("/sys/devices/pci0000:15/0000:15:03.0/0000:29:00.0", 0, gpu0) ==
        GpuAffinity::root);  // PHB
  CHECK(gpu_affinity("/sys/devices/pci0000:27/0000:27:01.0/0000:29:00.1", 0, gpu0) ==
        GpuAffinity::numa);  // NODE
  CHECK(gpu_affinity("/sys/devices/pci0000:a8/0000:a8:01.0/0000:aa:00.0", 1, gpu0) ==
        GpuAffinity::none);  // SYS
  CHECK(gpu_affinity("/sys/devices/pci0000:a8/0000:a8:01.0/0000:aa:00.0", -1,
                     {0, gpu0.sysfs_path, -1}) == GpuAffinity::none);  // -1 matches nothing
  // "0000:15:01.0" and "0000:15:01.1" are different root ports, not a shared one.
  CHECK(gpu_affinity("/sys/devices/pci0000:15/0000:15:01.1/0000:30:00.0", 0, gpu0) ==
        GpuAffinity::root);
  // Unknown: no path, no PCI tree in it, or different sysfs roots.
  CHECK(gpu_affinity("", 0, gpu0) == GpuAffinity::unknown);
  CHECK(gpu_affinity(nic, 0, {0, "", 0}) == GpuAffinity::unknown);
  CHECK(gpu_affinity("/sys/devices/virtual/net/rxe0", 0, gpu0) == GpuAffinity::unknown);
  CHECK(
      gpu_affinity("/tmp/x/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0",
                   0, gpu0) == GpuAffinity::unknown);
  // Names both ways.
  for (GpuAffinity a :
       {GpuAffinity::pcie_switch, GpuAffinity::root, GpuAffinity::numa, GpuAffinity::none}) {
    CHECK(preflight::parse_gpu_affinity(preflight::gpu_affinity_name(a)) == a);
  }
  CHECK(preflight::gpu_affinity_name(GpuAffinity::pcie_switch) == "switch");
  CHECK(preflight::gpu_affinity_name(GpuAffinity::unknown).empty());
  CHECK_FALSE(preflight::parse_gpu_affinity("").has_value());
  CHECK_FALSE(preflight::parse_gpu_affinity("PIX").has_value());
}

TEST_CASE("rdma math: no SKU sets a port rate; the reference boards' shapes carry it") {
  using preflight::Thresholds;
  const Thresholds generic = preflight::test::builtin_thresholds(nullptr, "no GPU");
  CHECK(generic.get("rdma.min_port_gbps") == 0);
  CHECK(generic.get("rdma.sibling_fraction") == 0.75);
  CHECK(generic.get("rdma.fail_fraction") == 0.75);
  CHECK(generic.get("rdma.warn_fraction") == 0.9);
  // What the SKU values were (the DGX reference nodes' ports) now comes from the shape assumed
  // for 8 GPUs of the SKU; a PCIe card's server is any, so it has none.
  const std::pair<const char*, double> expected[] = {
      {"a100-sxm4-40gb", 200}, {"a100-sxm4-80gb", 200}, {"a100-pcie-40gb", 0},
      {"a100-pcie-80gb", 0},   {"h100-sxm5-80gb", 400}, {"h100-pcie-80gb", 0},
      {"h200-sxm-141gb", 400}, {"h200-nvl-141gb", 0},
  };
  for (const auto& [id, gbps] : expected) {
    INFO(id);
    const auto* sku = preflight::find_sku(id);
    REQUIRE(sku != nullptr);
    Thresholds t = preflight::test::builtin_thresholds(sku, "--sku");
    CHECK(t.get("rdma.min_port_gbps") == 0);
    preflight::choose_node_shape(t, "", "", 8);
    CHECK((t.node_shape() ? t.node_shape()->port_gbps : 0.0) == gbps);
  }
}
