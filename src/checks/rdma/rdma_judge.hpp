#pragma once
// The rdma check's judgement, a pure function of its readings (rdma_readings.hpp) and the
// thresholds: which NICs are the compute fabric, then their ports, their count, their PCIe
// links and the transfers' rates. Host-only, tested without any engine
// (tests/checks/rdma/test_rdma_readings.cpp). docs/checks/rdma.md, "How topology enters".
#include <optional>
#include <string>
#include <vector>

#include "checks/rdma/rdma_readings.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// How the compute NICs were told from the others, in order of precedence:
// - listed: --rdma-devices names them;
// - gpu_switch: some NIC shares a PCIe switch with a GPU (gpu_affinity "switch"): exactly those,
//   the DGX/HGX layout of one compute NIC (or two) behind each GPU's switch;
// - fabric: no NIC does (topology unknown, no GPU, or a layout without switches): the NICs
//   whose fastest active port is on the node's majority link layer, whatever its rate, and the
//   NICs whose every port is down unless those ports are all of another link layer.
// With a node shape (node_shape.hpp) NICs of a transport the shape's fabric does not have are
// not compute first, and without a visible PCIe tree the fabric rule keeps at most the shape's
// count of compute ports, the fastest; a shape without an RDMA fabric has no compute NIC (rule
// no_fabric).
enum class NicRule { listed, gpu_switch, fabric, no_fabric };

struct NicSelection {
  NicRule rule = NicRule::fabric;
  std::vector<bool> compute;         // per device of the readings, in their order
  std::vector<std::string> reason;   // per device: why it is not a compute NIC ("" if it is)
  std::vector<std::string> missing;  // names of --rdma-devices the node does not have
  // fabric: whether any port is up, and the link layer taken for the compute fabric.
  bool any_port_up = false;
  std::string fabric_link_layer;
};

NicSelection select_compute_nics(const std::vector<RdmaNicReading>& devices,
                                 const std::vector<std::string>& listed,
                                 const MachineShape* shape = nullptr);
// Each device's role (rdma_fabric.hpp, nic_role) and the reason, as the run records them in
// RdmaNicReading::role and ::role_reason.
void assign_roles(RdmaReadings& readings, const Thresholds& thresholds);
// "listed in --rdma-devices", "sharing a PCIe switch with a GPU", "on the InfiniBand fabric":
// how the summary says which NICs were taken.
std::string describe_rule(const NicSelection& selection);

// The judged findings: RDMA_DEVICE_MISSING (a --rdma-devices name the node lacks),
// RDMA_NIC_NOT_COMPUTE (info, per other NIC), RDMA_PCIE_DEGRADED, RDMA_PORT_DOWN,
// RDMA_PORT_SLOW, RDMA_NO_GID, RDMA_RATE_UNKNOWN (compute NICs only), RDMA_COUNT_MISMATCH
// (usable compute ports against --expect-rnics), and RDMA_BANDWIDTH_LOW / _MARGINAL for every
// transfer that completed (rdma.fail_fraction, rdma.warn_fraction of its expected rate).
// Messages are made from the readings and thresholds only.
std::vector<Finding> judge_rdma(const RdmaReadings& readings, const Thresholds& thresholds);

// "loopback mlx5_0", "pair mlx5_0 -> mlx5_3", "gpudirect mlx5_0 with gpu0": how messages name
// a transfer.
std::string describe_transfer(const PlannedTransfer& t);

// What the readings prove whatever the thresholds, as run() reports it (Check::observe):
// RDMA_DEVICE_ERROR for a device that could not be read; for a transfer RDMA_TIMEOUT (it hung),
// RDMA_GPUDIRECT_UNAVAILABLE, RDMA_CONNECT_FAILED or RDMA_TRANSFER_ERROR (it failed: its data
// was never verified), or RDMA_DATA_MISMATCH (bytes arrived changed). nullopt: nothing wrong.
std::optional<Finding> rdma_device_observation(const RdmaDevice& device);
std::optional<Finding> rdma_transfer_observation(const PlannedTransfer& t,
                                                 const RdmaTransferResult& r);
// Every one of the readings: the devices' in their order, then the transfers' in the order run.
std::vector<Finding> rdma_observations(const RdmaReadings& readings);

}  // namespace preflight
