#pragma once
// The compute fabric judged by what each GPU gets (docs/checks/rdma.md, "Node shapes and what each
// GPU gets"): NIC roles, each compute port against its siblings and the node shape's port rate,
// the bandwidth each GPU reaches over its own compute ports, and the node's whole fabric against
// its shape. Pure functions of the readings, the thresholds and the shape they carry; tested in
// tests/checks/rdma/test_rdma_fabric.cpp.
#include <string>
#include <vector>

#include "checks/rdma/rdma_readings.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// What a NIC is taken for: compute (the fabric judged); storage (not compute, but a bond, or of
// the compute fabric's transport at 100 Gb/s or more: the DGX's InfiniBand storage port and
// bonded in-band/storage Ethernet); management (any other with a port up: an Azure VM's
// accelerated-networking Ethernet function, a 25 GbE in-band NIC); unknown (no port up).
// `fabric`: the compute NICs' transports.
std::string nic_role(const RdmaDevice& device, bool compute,
                     const std::vector<std::string>& fabric);

// RDMA_PORT_SLOW for each usable compute port below rdma.min_port_gbps, below the node shape's
// port rate, or below rdma.sibling_fraction of the median of its sibling compute ports (same
// transport): one finding per port, the first rule that holds giving the detail. Appends to
// `findings`; returns the ports found slow ("mlx5_3", "mlx5_0:2").
std::vector<std::string> judge_port_rates(const std::vector<RdmaDevice>& compute,
                                          const Thresholds& thresholds, const MachineShape* shape,
                                          std::vector<Finding>& findings);

// Where the node shape gives each GPU a compute bandwidth (MachineShape::gpu_reach_gbps):
// - RDMA_GPU_BANDWIDTH_LOW on a GPU whose own compute NICs (sharing its PCIe switch) reach less,
//   unless a finding on one of those ports already explains it;
// - RDMA_FABRIC_BANDWIDTH_LOW on the node when its compute ports together carry less than the
//   GPUs x that, and nothing else explains it (a device gone entirely);
// - RDMA_NOT_JUDGED (info) when no compute NIC's place on the PCIe tree is visible (a VM, a
//   container without /sys/bus/pci): the node is judged as a whole, not per GPU.
// `explained`: the entities of port findings already made (down, slow).
void judge_gpu_reach(const RdmaReadings& readings,
                     const std::vector<const RdmaNicReading*>& compute, const MachineShape* shape,
                     const std::vector<std::string>& explained, std::vector<Finding>& findings);

// The shape the fabric is judged against: the thresholds' one, except an assumed reference board
// that the node's RDMA devices contradict (none of its transports among them: an AWS node whose
// DMI could not be read is no HGX H100). Then nullptr, and `why` says so.
const MachineShape* fabric_shape(const RdmaReadings& readings, const Thresholds& thresholds,
                                 std::string& why);

}  // namespace preflight
