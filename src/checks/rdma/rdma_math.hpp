#pragma once
// Host-side logic of the rdma check: port rate decoding, expectations, transfer planning and
// classification. Pure functions, unit-tested (tests/checks/rdma/test_rdma_math.cpp).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checks/common/entities.hpp"  // rdma_port_entity
#include "preflight/engine/node_backend.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

// ibv_port_attr.active_width encoding -> lanes: 1 -> 1x, 2 -> 4x, 4 -> 8x, 8 -> 12x, 16 -> 2x;
// 0 for an unknown encoding.
int rdma_width_lanes(int active_width);
// ibv_port_attr.active_speed encoding (or active_speed_ex, which adds 256 XDR) -> the lane's
// signalling rate in Gb/s, line-code overhead included: 1 SDR 2.5, 2 DDR 5, 4 QDR 10, 8 FDR10 10,
// 16 FDR 14.0625, 32 EDR 25.78125, 64 HDR 53.125, 128 NDR 106.25, 256 XDR 212.5; 0 when unknown.
// The tools print nominal rates instead (EDR 4x "100 Gb/s", HDR 4x "200", NDR 4x "400"):
// that is rdma_port_rate_gbps.
double rdma_lane_gbps(int active_speed);
// The port's data rate as ibstat prints it ("Rate: 400"): lanes x nominal lane rate, where the
// nominal rates are SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200.
// 0 when either encoding is unknown.
double rdma_port_rate_gbps(int active_speed, int active_width);
// "NDR 4x (400 Gb/s)", "SDR 1x (2.5 Gb/s)"; an unknown encoding is shown in hex and the rate
// left out: "speed 0x3 4x", "NDR width 0x3".
std::string rdma_port_rate_name(int active_speed, int active_width);
// The port's rate: the engine's own reading wins (it may come from sysfs where the encodings
// are newer than this table), the decoded encodings otherwise. 0 when neither is known.
double rdma_port_rate(const RdmaPort& port);
// ACTIVE with its physical link up.
bool rdma_port_up(const RdmaPort& port);

// --- Expectations ---------------------------------------------------------------------------
struct RdmaExpectations {
  std::optional<int> rnics;  // --expect-rnics: ports that must be ACTIVE/LinkUp; nullopt: any
  double min_port_gbps = 0;  // rdma.min_port_gbps (0: no minimum)
};

enum class PortIssue {
  none,
  down,          // state not ACTIVE or physical state not LinkUp
  slow,          // rate below min_port_gbps
  no_gid,        // Ethernet without a usable RoCE GID
  unknown_rate,  // the rate could not be decoded
};
struct PortJudgement {
  std::string device;
  int port = 1;
  PortIssue issue = PortIssue::none;
  // "state DOWN, physical Disabled" / "200 Gb/s, below the minimum of 400 Gb/s"
  std::string detail;
};
// Judges every port of every device (devices with an error are left to the caller). Returns
// the ports with an issue (one entry per issue, a port may have several). A port that is down
// is only `down`: its rate and GIDs mean nothing until the link is up. The rate is
// RdmaPort::rate_gbps when set, else decoded from the encodings. expect.rnics is the caller's
// to count against usable_ports().
std::vector<PortJudgement> judge_ports(const std::vector<RdmaDevice>& devices,
                                       const RdmaExpectations& expect);
// Ports that are ACTIVE and LinkUp (and, on Ethernet, have a usable RoCE GID), as (device,
// port), in the order of `devices` and their ports; devices with an error have none.
std::vector<std::pair<std::string, int>> usable_ports(const std::vector<RdmaDevice>& devices);

// --- Planning -------------------------------------------------------------------------------
struct PlannedTransfer {
  std::string from_device;
  int from_port = 1;
  std::string to_device;
  int to_port = 1;
  RdmaMemory memory = RdmaMemory::host;
  int gpu_index = -1;        // GPUDirect: the NVML index of the GPU
  double expected_gbps = 0;  // the lower of the two ports' rates
  // "mlx5_0" (loopback), "mlx5_0-numa1" (loopback into NUMA node 1's memory), "mlx5_0-gpu3"
  // (GPUDirect with gpu3) or "mlx5_0-mlx5_3" (pair)
  std::string entity;
  std::string kind;  // "loopback", "pair", "gpudirect"
  // Last, so that a transfer written as a braced list before the mesh still means the same.
  int host_numa_node = -1;    // host memory bound to this NUMA node (the loopback mesh); -1: any
  RdmaOp op = RdmaOp::write;  // read where the device offers no RDMA write (EFA)
};

// The loopback mesh of ByteDance's MegaScale (NSDI '24, its intra-host loopback test): each
// compute NIC writes to itself through host memory on every NUMA node and through every GPU's
// memory, not only its own socket's and its nearest GPU's, so a weak PCIe path between a NIC and
// a far GPU or socket shows on that path. The mesh's cells are planned over each NIC's first
// usable port, like its pairs.
struct RdmaMesh {
  // The host's NUMA nodes (/sys/devices/system/node/online). Fewer than two: one loopback per
  // NIC into host memory wherever the kernel places it (-1), as on a one-socket host there is no
  // other memory to reach.
  std::vector<int> numa_nodes;
  // The GPUs CUDA can use, by NVML index: a GPUDirect cell per NIC and GPU.
  std::vector<int> gpus;

  // Host-memory cells per NIC: the NUMA nodes, or one.
  int host_cells() const {
    return numa_nodes.size() >= 2 ? static_cast<int>(numa_nodes.size()) : 1;
  }
  int gpu_cells() const { return static_cast<int>(gpus.size()); }
};

// What one run covers of each part; nullopt: all of it. Each part is cut into shifts the way the
// NIC pairs are (model/pair_rotation.hpp), so that a shift gives every NIC one cell:
// - pairs: (from, to) indices into rdma_pair_endpoints(devices), planned in the order given
//   (pairs that cannot connect, or indices out of range, are left out);
// - numa_shifts: shift k takes NIC i into the k-th NUMA node counted from its own (its
//   device's numa_node; the i-th where that is unknown), so shift 0 is the NIC's own socket;
// - gpu_shifts: shift k takes NIC i to the k-th GPU counted from its nearest (the i-th where
//   that is unknown or not usable), so shift 0 is the GPU NCCL would pair it with.
// Shifts out of range are left out.
struct RdmaCoverage {
  std::optional<std::vector<std::pair<int, int>>> pairs;
  std::optional<std::vector<int>> numa_shifts;
  std::optional<std::vector<int>> gpu_shifts;
};

// The transfers of one run over the devices' usable ports (usable_ports()), in this order:
// - per device, the loopbacks into host memory of its first usable port (one per NUMA node
//   covered, "mlx5_0-numa1"; on a host of one NUMA node the single "mlx5_0", or "mlx5_0:2"
//   when port 2 is the first usable), then a loopback per further usable port ("mlx5_0:2", host
//   memory anywhere, every run);
// - the ordered pairs of distinct devices over each one's first usable port (every pair
//   row-major in device order, or coverage.pairs); devices whose first usable ports differ in
//   link layer are not paired, as InfiniBand and RoCE cannot connect;
// - per device, the GPUDirect loopbacks of its first usable port with each GPU covered
//   ("mlx5_0-gpu3").
// Each transfer writes where its devices offer RDMA write and reads where they offer only RDMA
// read (EFA); a device with neither gets no transfer, and is no endpoint of a pair.
std::vector<PlannedTransfer> plan_transfers(const std::vector<RdmaDevice>& devices,
                                            const RdmaMesh& mesh,
                                            const RdmaCoverage& coverage = {});
// Usable ports beyond the first of each device plan_transfers() plans for: a loopback each, every
// run.
int rdma_extra_loopbacks(const std::vector<RdmaDevice>& devices);
// The endpoints of the NIC pairs and the rows of the mesh: the devices with a usable port (no
// error, and RDMA write or read), in order; the rotations' NIC i is the i-th of them.
std::vector<std::string> rdma_pair_endpoints(const std::vector<RdmaDevice>& devices);
// The entity of a NIC pair's findings and metrics: "mlx5_0-mlx5_3", sender first.
std::string rdma_pair_entity(const std::string& from_device, const std::string& to_device);
// The entities of the mesh's cells: "mlx5_0-numa1", "mlx5_0-gpu3".
std::string rdma_numa_entity(const std::string& device, int numa_node);
std::string rdma_gpu_entity(const std::string& device, int gpu_index);

// The host's NUMA nodes from the text of /sys/devices/system/node/online ("0-1", "0,2-3\n"), in
// order; empty for text that is not such a list, or lists more than 256 nodes or any above 4095.
std::vector<int> parse_numa_node_list(const std::string& text);

// --- Classification -------------------------------------------------------------------------
enum class TransferClass { ok, warn, fail };
// Against the expected rate: below fail_fraction fails, below warn_fraction warns; an expected
// rate of 0 (unknown) judges nothing.
TransferClass classify_transfer(double gbps, double expected_gbps, double fail_fraction,
                                double warn_fraction);

// The GPU closest to a NIC: the one sharing the longest prefix of the PCI device path (sysfs
// realpath of each device, e.g. /sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/...; a
// prefix counts whole path components), ties broken by same NUMA node, then by lower index.
// -1 when there are no GPUs.
struct GpuLocation {
  int index = 0;  // NVML index
  std::string sysfs_path;
  int numa_node = -1;
};
int nearest_gpu(const std::string& nic_sysfs_path, int nic_numa_node,
                const std::vector<GpuLocation>& gpus);

// How close a NIC sits to a GPU, in the terms of `nvidia-smi topo -m`:
// - pcie_switch ("switch"): they share a PCIe switch below the CPU's root port (PIX, PXB): the
//   DGX/HGX layout of a compute NIC and its GPU;
// - root ("root"): they share only the host bridge (PHB);
// - numa ("numa"): different host bridges on the same NUMA node (NODE);
// - none ("none"): not even the NUMA node (SYS);
// - unknown: a sysfs path is missing (a software device, a fake library, no GPU located).
enum class GpuAffinity { unknown, none, numa, root, pcie_switch };
// "switch", "root", "numa", "none"; "" for unknown.
std::string gpu_affinity_name(GpuAffinity affinity);
// The inverse; nullopt for any other text ("" included).
std::optional<GpuAffinity> parse_gpu_affinity(const std::string& text);
// From the two sysfs paths: the components from the first "pci<domain>:<bus>" one (the host
// bridge) on are compared; sharing the host bridge and the root port below it means sharing
// the switch under that port (a root port has a single link). The NUMA nodes decide between
// numa and none when not even the host bridge is shared (-1 matches nothing).
GpuAffinity gpu_affinity(const std::string& nic_sysfs_path, int nic_numa_node,
                         const GpuLocation& gpu);

}  // namespace preflight
