// The rdma check's finding codes. docs/checks/rdma.md, "Finding codes", lists the same
// codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable: admins grep for
// them and drain reasons carry them.
#include "checks/rdma/rdma_findings.hpp"

namespace preflight {

const FindingTable& rdma_findings() {
  static const FindingTable table{
      "rdma",
      "docs/checks/rdma.md",
      {
          {"RDMA_UNAVAILABLE", Severity::fail, Action::service,
           "RDMA NICs are expected (--expect-rnics) but libibverbs could not be loaded or could "
           "not list devices.",
           "Install rdma-core (libibverbs1 and the provider, e.g. ibverbs-providers) and check "
           "that the NIC driver (mlx5_core, mlx5_ib) is loaded: `ibv_devices`, `lsmod | grep "
           "mlx5`."},
          {"RDMA_NO_DEVICE", Severity::fail, Action::service,
           "RDMA NICs are expected (--expect-rnics) but the node has none.",
           "Check `ibv_devices` and `lspci | grep -i mellanox`; load the NIC driver (mlx5_core, "
           "mlx5_ib) or reseat or replace the NIC."},
          {"RDMA_DEVICE_MISSING", Severity::fail, Action::service,
           "--rdma-devices names an RDMA device this node does not have (a NIC whose driver did "
           "not load, that fell off the bus, or a wrong list).",
           "Compare `ibv_devices` and `lspci` (Mellanox, or Amazon's EFA: `fi_info -p efa`) "
           "with the list; reload the NIC driver or service the NIC, or correct "
           "--rdma-devices."},
          {"RDMA_NIC_NOT_COMPUTE", Severity::info, Action::none,
           "An RDMA device that is not part of the compute fabric (storage, in-band management): "
           "it is reported, but its ports are not judged and it takes no part in the transfers.",
           "None needed. If it is a compute NIC, name the compute NICs with --rdma-devices "
           "(docs/checks/rdma.md)."},
          {"RDMA_COUNT_MISMATCH", Severity::fail, Action::service,
           "The node has a different number of usable RDMA ports (active, link up) than "
           "--expect-rnics says.",
           "Compare `ibstat` (or `ibv_devinfo`) with the node's expected NIC count; bring down "
           "ports up (cabling, switch port, subnet manager) or fix the expectation."},
          {"RDMA_DEVICE_ERROR", Severity::fail, Action::reboot,
           "An RDMA device could not be opened or queried.",
           "Check `dmesg` for mlx5 errors and `ibv_devinfo -d NAME`; reboot the node (it "
           "reloads the NIC driver and resets the NIC); RMA the NIC if it repeats."},
          {"RDMA_PORT_DOWN", Severity::fail, Action::service,
           "An RDMA port is not ACTIVE with its physical link up.",
           "Check the cable and the switch port (`ibstat`, `ibportstate`, or the Ethernet "
           "switch); on InfiniBand make sure a subnet manager runs; reseat or replace the cable "
           "or transceiver."},
          {"RDMA_PORT_SLOW", Severity::fail, Action::service,
           "A compute RDMA port trained to a lower rate than the node's minimum "
           "(rdma.min_port_gbps), its node shape's port rate, or its sibling compute ports "
           "(below rdma.sibling_fraction of their median).",
           "Check the cable and transceiver type and the switch port speed (`ibstat` Rate, "
           "`ethtool`); replace a degraded cable; correct rdma.min_port_gbps if the fabric is "
           "slower by design."},
          {"RDMA_GPU_BANDWIDTH_LOW", Severity::fail, Action::service,
           "A GPU's own compute NICs (those behind its PCIe switch) together reach less than "
           "the node shape gives each GPU (an AWS p5 GPU: four 100 Gb/s EFA devices), and no "
           "port finding explains it: one of them is missing.",
           "Compare the RDMA devices behind the GPU's switch (`nvidia-smi topo -m`, "
           "`ibv_devices`) with the node shape (docs/node-shapes.md); reload the NIC driver, "
           "reseat or service the NIC, or name the right shape with --node-shape."},
          {"RDMA_FABRIC_BANDWIDTH_LOW", Severity::fail, Action::service,
           "The compute NICs together carry less than the node shape's GPUs x the bandwidth "
           "each GPU should reach, and no port or GPU finding explains it: a compute NIC is "
           "missing.",
           "Count the compute NICs (`ibv_devices`, `fi_info -p efa` on AWS) against the node "
           "shape (docs/node-shapes.md); service the missing one, or name the right shape "
           "with --node-shape."},
          {"RDMA_NOT_JUDGED", Severity::info, Action::none,
           "Part of the compute fabric's judgement needs topology this node does not show (a "
           "VM's virtual functions, a container without /sys/bus/pci): it was judged for the "
           "node as a whole, and the finding says what was not judged and why.",
           "None needed. For the full judgement in a container mount the host's /sys "
           "(docs/checks/rdma.md, \"Partial views\")."},
          {"RDMA_NO_ONE_SIDED", Severity::info, Action::none,
           "An RDMA device offers neither RDMA write nor RDMA read (an EFA device of an older "
           "generation): it is inventoried and named, and takes no part in the transfers.",
           "None needed; the fabric is judged by its ports. `ibv_devinfo -d NAME` and "
           "`fi_info -p efa` show the device's capabilities."},
          {"RDMA_NO_GID", Severity::fail, Action::none,
           "A RoCE (Ethernet) port has no usable RoCE v2 GID: no IP address on its network "
           "interface.",
           "Configure the IP address of the NIC's network interface (`ip addr`, `show_gids`), "
           "then rerun."},
          {"RDMA_RATE_UNKNOWN", Severity::warn, Action::none,
           "The rate of an active RDMA port could not be decoded from its speed and width, so it "
           "was not judged.",
           "Check `ibstat`; update rdma-core and the NIC firmware if the speed is new."},
          {"RDMA_PCIE_DEGRADED", Severity::fail, Action::service,
           "The NIC's PCIe link is below what the NIC and slot can do, or carries less than the "
           "port's rate: the NIC cannot be fed at line rate.",
           "Check `lspci -vv` LnkSta against LnkCap for the NIC; reseat the NIC, check its riser "
           "and the slot's BIOS settings."},
          {"RDMA_CONNECT_FAILED", Severity::fail, Action::service,
           "Two RDMA queue pairs could not be connected (queue-pair transition or address error), "
           "so the ports cannot talk over the fabric.",
           "Check both ports and the fabric between them (subnet manager, routing, RoCE VLAN/PFC "
           "configuration); the message names the failing verbs call."},
          {"RDMA_TRANSFER_ERROR", Severity::fail, Action::service,
           "An RDMA transfer failed with a completion or verbs error (e.g. retry counter "
           "exceeded).",
           "Check cables, switch ports and error counters (`perfquery`, `ethtool -S`); the verbs "
           "status in the message says what failed."},
          {"RDMA_TIMEOUT", Severity::fail, Action::reboot,
           "An RDMA call or transfer did not complete before the check's deadline.",
           "Check `dmesg` for NIC errors and the fabric; reboot the node (it resets the NICs "
           "and their driver); service the NIC if it repeats."},
          {"RDMA_DATA_MISMATCH", Severity::fail, Action::service,
           "Bytes written over RDMA arrived changed.",
           "Drain the node; check NIC and PCIe error counters (`dmesg` AER, `ethtool -S`); "
           "rerun; replace the NIC or cable on the path named."},
          {"RDMA_BANDWIDTH_LOW", Severity::fail, Action::service,
           "An RDMA transfer (loopback, NIC pair or GPUDirect) reached less than the failure "
           "share of the port rate.",
           "Check port rates and error counters on both ends, PCIe links (`lspci -vv`) and NUMA "
           "placement; compare with perftest `ib_write_bw` (docs/checks/rdma.md)."},
          {"RDMA_BANDWIDTH_MARGINAL", Severity::warn, Action::none,
           "An RDMA transfer reached less than the warning share of the port rate.",
           "Check error counters and congestion settings; compare with perftest `ib_write_bw` "
           "(docs/checks/rdma.md)."},
          {"RDMA_GPUDIRECT_UNAVAILABLE", Severity::warn, Action::none,
           "GPU memory could not be registered with the NIC (neither dma-buf nor peer memory), so "
           "GPUDirect RDMA does not work and NCCL would bounce through host memory.",
           "Load nvidia-peermem or use a kernel and driver with dma-buf support (Linux 5.12+, "
           "NVIDIA open kernel modules); check `lsmod | grep nvidia_peermem`."},
      }};
  return table;
}

}  // namespace preflight
