#pragma once
// The boundary between the host-only core and the code that talks to the driver (NVML loaded
// with dlopen, the CUDA runtime, kernels). Plain structs only: no CUDA or NVML types leak out,
// so checks and their tests build without the toolkit, and tests can hand checks readings of
// their own.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "preflight/engine/gemm_engine.hpp"  // GpuTelemetry

namespace preflight {

// Readings of one GPU. std::nullopt means "not read": the query is not supported on this GPU
// (e.g. row remapping before Ampere) or failed; failures other than "not supported" are listed
// in read_errors so they surface as findings instead of silently passing.
struct GpuReading {
  // Identity (filled by discover()).
  int index = 0;          // NVML index, as nvidia-smi numbers GPUs
  int cuda_ordinal = -1;  // CUDA device ordinal, -1 when CUDA does not see this GPU
  std::string name;
  std::string uuid;
  std::string pci_bus_id;  // "00000000:1B:00.0"
  std::string serial;
  std::uint16_t pci_device_id = 0;  // e.g. 0x2330
  std::uint64_t memory_total_bytes = 0;

  // Configuration and health (filled by read_health()).
  std::optional<bool> mig_enabled;
  std::optional<bool> ecc_enabled;
  std::optional<bool> persistence_enabled;
  std::optional<std::uint64_t> ecc_uncorrected_volatile;
  std::optional<std::uint64_t> ecc_uncorrected_aggregate;
  std::optional<std::uint64_t> ecc_corrected_volatile;
  // Over the GPU's life, kept by the driver across reboots: `--history` warns when one rises
  // between runs (docs/baseline.md).
  std::optional<std::uint64_t> ecc_corrected_aggregate;
  std::optional<bool> retired_pages_pending;
  std::optional<bool> row_remap_pending;
  std::optional<bool> row_remap_failed;
  std::optional<std::uint64_t> remapped_rows_corrected;    // rows remapped over the GPU's life
  std::optional<std::uint64_t> remapped_rows_uncorrected;  // for correctable / uncorrectable errors
  std::optional<std::uint64_t> clock_event_reasons;        // NVML clocks-event reason bit mask
  std::optional<int> temperature_c;
  std::optional<int> pcie_gen_current;
  std::optional<int> pcie_gen_max_link;  // the most this GPU and its slot can do together
  std::optional<int> pcie_gen_max_gpu;   // the most the GPU itself can do
  std::optional<int> pcie_width_current;
  std::optional<int> pcie_width_max;
  std::optional<int> nvlink_active;     // links reported active
  std::optional<int> nvlink_supported;  // links NVML can query on this GPU
  // NVLink topology: for each active link that ends at another GPU, that GPU's PCI bus id
  // (normalized like pci_bus_id; one entry per link, so a pair joined by 6 links appears 6
  // times), and how many active links end at an NVSwitch. Empty / nullopt when not read.
  std::vector<std::string> nvlink_peer_bus_ids;
  std::optional<int> nvlink_switch_links;
  std::optional<int> foreign_processes;             // compute processes other than this one
  std::optional<std::uint64_t> foreign_memory_mib;  // GPU memory they hold
  // NVML's GPU recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, R550 and newer drivers):
  // the driver's own verdict, 0 none, 1 GPU reset, 2 node reboot, 3 drain peer-to-peer, 4 drain
  // and reset. nullopt when not read (an older driver).
  std::optional<int> recovery_action;
  std::vector<std::string> read_errors;  // "nvmlDeviceGetEccMode: Unknown Error"

  // Responsiveness probe (filled by probe()): a kernel writes a pattern that is copied back and
  // verified, bounded by a deadline.
  std::optional<bool> responsive;
  std::string probe_error;  // CUDA error or "did not complete within N s"
  double probe_ms = 0.0;
  // The probe gave up at its deadline (rather than failing): when the deadline was the check's
  // share of the run's time, not the probe's own timeout, the GPU is unverified, not unresponsive.
  bool probe_timed_out = false;
};

// NVML clocks-event reason bits (nvml.h, nvmlClocksEventReason*), repeated here so the core does
// not need nvml.h.
namespace clock_event {
inline constexpr std::uint64_t kGpuIdle = 0x1;
inline constexpr std::uint64_t kApplicationsClocksSetting = 0x2;
inline constexpr std::uint64_t kSwPowerCap = 0x4;
inline constexpr std::uint64_t kHwSlowdown = 0x8;
inline constexpr std::uint64_t kSyncBoost = 0x10;
inline constexpr std::uint64_t kSwThermalSlowdown = 0x20;
inline constexpr std::uint64_t kHwThermalSlowdown = 0x40;
inline constexpr std::uint64_t kHwPowerBrakeSlowdown = 0x80;
inline constexpr std::uint64_t kDisplayClockSetting = 0x100;
}  // namespace clock_event

// Error counters of one GPU, read before and after a load check (docs/checks/counters.md).
// nullopt: not read (not supported on this GPU, or the query failed; `problems` says which
// unless it is only "not supported").
struct GpuErrorCounters {
  std::optional<std::uint64_t> ecc_corrected_volatile;
  std::optional<std::uint64_t> ecc_uncorrected_volatile;
  std::optional<std::uint64_t> pcie_replay;  // nvmlDeviceGetPcieReplayCounter
  // nvmlDeviceGetNvLinkErrorCounter summed over the links that answer; nullopt when none does.
  std::optional<std::uint64_t> nvlink_replay;
  std::optional<std::uint64_t> nvlink_recovery;
  std::optional<std::uint64_t> nvlink_crc_flit;
  std::optional<std::uint64_t> nvlink_crc_data;
  std::vector<std::string> problems;
};

// One event the driver reported for a GPU while preflight ran (NVML's event stream).
struct GpuEvent {
  int gpu_index = -1;      // NVML index; -1 when the event's device is none of the node's GPUs
  std::string type;        // "xid"; "wait_error" when reading the stream failed ("other" else)
  std::uint64_t data = 0;  // the Xid
  std::string detail;      // for wait_error: what failed
};

// The driver's events for the run: registered once, drained by each load check around its load
// (docs/checks/counters.md). Safe to drain from several threads.
class GpuEventSource {
 public:
  virtual ~GpuEventSource() = default;
  // The events pending now, waiting at most `wait` for the first.
  virtual std::vector<GpuEvent> drain(std::chrono::milliseconds wait) = 0;
  // GPUs whose events could not be registered, and why: said, never a failure.
  std::vector<std::string> problems;
};

// A library the binary loads at run time (cuBLAS, NCCL), as discovery found it.
struct RuntimeLibraryReading {
  std::string name;     // "cuBLAS"
  std::string soname;   // "libcublas.so.13"
  std::string path;     // the file loaded; empty when not found
  std::string version;  // "13.0.2"; empty when unknown
  std::string problem;  // when not found: which soname, where it was looked for
};

struct NodeReading {
  bool nvml_loaded = false;
  std::string nvml_error;        // why NVML is unusable: dlopen message, nvmlInit error
  std::string driver_version;    // "580.65.06"
  int cuda_driver_version = 0;   // 13000 for 13.0; 0 when unknown
  int cuda_runtime_version = 0;  // the runtime this binary was built with
  // The oldest driver this build runs on: its CUDA version (13000: a CUDA 13 build needs a driver
  // of CUDA 13.0 or newer) and branch ("R580"). 0 and empty where unknown (fakes, no CUDA).
  int cuda_driver_required = 0;
  std::string cuda_driver_branch_required;
  std::string cuda_error;  // e.g. "CUDA driver version is insufficient for CUDA runtime version"
  int cuda_device_count = 0;
  std::string nccl_version;  // "2.28.3" or empty when libnccl.so.2 cannot be loaded
  std::vector<RuntimeLibraryReading> libraries;  // cuBLAS and NCCL in a CUDA build
  std::vector<GpuReading> gpus;  // ordered by NVML index; CUDA-only GPUs when NVML is absent
  // NVIDIA GPUs on the PCI bus (sysfs), filled by the inventory check; nullopt when unknown or
  // not comparable (inside a container that exposes only some GPUs).
  std::optional<int> pci_gpu_count;
};

// The GPU whose model sets the node's thresholds: the first one whose identity could be read
// (a GPU lost to the driver has no name or device id and must not turn the node "unknown").
// nullptr when the node has no such GPU.
inline const GpuReading* representative_gpu(const NodeReading& node) {
  for (const auto& g : node.gpus) {
    if (g.pci_device_id != 0 || !g.name.empty()) return &g;
  }
  return nullptr;
}

// The distinct model names of the GPUs whose name could be read, in sorted order.
std::vector<std::string> gpu_models(const NodeReading& node);

using SteadyClock = std::chrono::steady_clock;

// Implemented by the CUDA/NVML backend (src/gpu) and by test doubles. Calls may block inside
// the driver; callers run them under the runner's watchdog, and implementations poll
// asynchronous work against the deadline they are given.
class NodeBackend {
 public:
  virtual ~NodeBackend() = default;
  // Driver/runtime versions and the list of GPUs with their identity. Never throws for a
  // missing driver: that is reported in nvml_error / cuda_error with an empty gpus list.
  virtual NodeReading discover() = 0;
  // Configuration and health readings of every GPU in node.gpus. Call before probe(): it lists
  // the other processes on each GPU before this process creates a CUDA context there.
  virtual void read_health(NodeReading& node) = 0;
  // Runs the responsiveness probe on one GPU, giving up at the deadline.
  virtual void probe(GpuReading& gpu, SteadyClock::time_point deadline) = 0;
  // One NVML sample of clocks, temperature, power and clock-event reasons (t_s left 0);
  // nullopt when NVML is not usable. Cheap; safe to call from several threads.
  virtual std::optional<GpuTelemetry> telemetry(const GpuReading& gpu) {
    (void)gpu;
    return std::nullopt;
  }
  // The GPU's error counters now; nullopt when NVML is not usable. Cheap (a few NVML calls);
  // safe to call from several threads.
  virtual std::optional<GpuErrorCounters> error_counters(const GpuReading& gpu) {
    (void)gpu;
    return std::nullopt;
  }
  // Registers the node's GPUs for the driver's Xid events for the rest of the run; nullptr
  // where the driver offers none (no NVML, an old driver). May block in the driver: callers
  // bound it.
  virtual std::shared_ptr<GpuEventSource> open_events(const NodeReading& node) {
    (void)node;
    return nullptr;
  }
};

// The backend this binary was built with: NVML + CUDA when built with PREFLIGHT_WITH_CUDA,
// otherwise one that reports "built without CUDA support". The NVML library name can be
// overridden with PREFLIGHT_NVML_LIBRARY (default libnvidia-ml.so.1).
std::unique_ptr<NodeBackend> make_system_node_backend();

}  // namespace preflight
