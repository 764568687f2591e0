#pragma once
// The boundary between the rdma check (host-only planning and judging, src/checks/rdma/) and the
// libibverbs code that reads RDMA devices and moves bytes between them (src/net/). Plain structs
// only: the check and its tests build without rdma-core, and tests hand the check devices and
// transfers of their own.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace preflight {

// One port of an RDMA device, as ibv_query_port and sysfs report it.
struct RdmaPort {
  int port_num = 1;
  std::string state;        // "ACTIVE", "DOWN", "INIT", "ARMED", ... (ibv_port_state_str)
  std::string phys_state;   // "LinkUp", "Disabled", "Polling", ... (sysfs phys_state text)
  int active_speed = 0;     // ibv_port_attr.active_speed encoding (or active_speed_ex)
  int active_width = 0;     // ibv_port_attr.active_width encoding
  double rate_gbps = 0.0;   // speed x width decoded (rdma_math.hpp), 0 when unknown
  int active_mtu = 0;       // bytes (256..4096), 0 when unknown
  std::string link_layer;   // "InfiniBand", "Ethernet", or "Unspecified" (EFA)
  bool usable_gid = false;  // Ethernet: a RoCE v2 GID with an IP; InfiniBand: a valid GID 0
  int gid_index = -1;       // the GID index the transfers use
};

// One RDMA device (HCA / RNIC).
struct RdmaDevice {
  std::string name;        // "mlx5_0": the entity of findings
  std::string pci_bus_id;  // "0000:1b:00.0", empty when unknown
  std::string sysfs_path;  // realpath of the PCI device in sysfs (for the nearest GPU)
  int numa_node = -1;
  std::optional<int> pcie_gen;  // current link generation and width (sysfs)
  std::optional<int> pcie_width;
  std::optional<int> pcie_max_gen;
  std::optional<int> pcie_max_width;
  std::string firmware;  // ibv_query_device fw_ver
  std::vector<RdmaPort> ports;
  // NVML index of the GPU closest on the PCI tree; -1: the check works it out from sysfs.
  int nearest_gpu = -1;
  std::string error;  // the device could not be opened or queried
  // How the device moves data: "ib" (InfiniBand), "roce" (RDMA over Converged Ethernet), "efa"
  // (AWS Elastic Fabric Adapter: SRD queue pairs through efadv, no RC); "" unknown (the check
  // derives it from the link layer, as for readings of older verdicts).
  std::string transport;
  // One-sided operations the device offers. IB and RoCE: both. EFA: what efadv_query_device
  // says (RDMA read on p4d and later, RDMA write on newer devices); a device with neither is
  // inventoried, never failed for it.
  bool rdma_write = true;
  bool rdma_read = true;
  // A bonded RoCE device (mlx5_bond_0): the network interfaces its bond is made of, from
  // sysfs (/sys/class/net/BOND/bonding/slaves); empty for a device that is not a bond.
  std::vector<std::string> bond_members;
};

struct RdmaInventory {
  bool library_loaded = false;  // libibverbs usable in this build and on this node
  std::string error;            // why not, or why the device list failed
  std::vector<RdmaDevice> devices;
};

// Where a transfer's source and destination buffers live.
enum class RdmaMemory { host, gpu };

// The one-sided operation a transfer moves its bytes with: the sender writes into the
// receiver's buffer, or (EFA devices without RDMA write) reads the receiver's buffer into its
// own. Either way the bytes that arrive are verified.
enum class RdmaOp { write, read };

// One transfer: a queue pair on `from` (RC on IB and RoCE, SRD on EFA) writes into a buffer
// registered on `to` (the same device and port for a loopback), or reads from it. Many work
// requests outstanding, one signalled completion in `signal_every`.
struct RdmaTransferJob {
  std::string from_device;
  int from_port = 1;
  std::string to_device;
  int to_port = 1;
  RdmaMemory memory = RdmaMemory::host;  // gpu: GPUDirect (dma-buf, else peer memory)
  int gpu_cuda_ordinal = -1;             // for RdmaMemory::gpu
  // RdmaMemory::host: the NUMA node the host buffers are bound to (the loopback mesh: a NIC to
  // the memory of every socket); -1: wherever the kernel places them.
  int host_numa_node = -1;
  RdmaOp op = RdmaOp::write;
  std::size_t message_bytes = std::size_t{1} << 20;
  int outstanding = 64;  // work requests in flight
  int signal_every = 16;
  double seconds = 2.0;                            // of writes after the connection is up
  std::chrono::steady_clock::time_point deadline;  // every wait (QP transitions, polling)
  std::shared_ptr<const std::atomic<bool>> cancel;
  // Injected fault (rdma-slow): the sender idles so it delivers this share of its bandwidth.
  double slow_factor = 1.0;
};

struct RdmaTransferResult {
  bool connected = false;   // both QPs reached RTS
  double gbps = 0.0;        // decimal Gb/s (1e9 bits per second) of payload written
  std::uint64_t bytes = 0;  // payload written
  bool verified = false;    // the destination was checked after the last write
  std::uint64_t bad_bytes = 0;
  std::string registration;  // GPUDirect: "dma-buf", "peer-memory"; host: "host"
  std::string queue_pair;    // "rc" or "srd": what carried the transfer ("" before connecting)
  // The first failure: a verbs call ("ibv_modify_qp(RTR): Connection timed out") or a work
  // completion status ("IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded").
  std::string error;
  bool timed_out = false;
};

class RdmaEngine {
 public:
  virtual ~RdmaEngine() = default;
  // Every device and port; never throws (a missing library or device list failure is in
  // error).
  virtual RdmaInventory inventory() = 0;
  virtual RdmaTransferResult transfer(const RdmaTransferJob& job) = 0;
};

// The engine of this build: libibverbs when built with PREFLIGHT_WITH_IBVERBS (and CUDA for
// GPUDirect), else one whose inventory says the build has no RDMA support.
std::unique_ptr<RdmaEngine> make_system_rdma_engine();

}  // namespace preflight
