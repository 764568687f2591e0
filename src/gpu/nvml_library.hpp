#pragma once
// NVML loaded at run time with dlopen, never linked: the binary must start (and report the
// missing driver as a finding) on nodes where libnvidia-ml.so.1 is absent or broken. NVML's
// types stay inside nvml_library.cpp; callers see plain C++ values.
//
// Every query returns std::nullopt when the value was not read. "Not supported" on this GPU,
// and a function this driver's NVML does not export, are silent; any other failure also appends
// "<nvml function>: <nvmlErrorString>" to the `errors` list it is given, so it surfaces as a
// finding instead of passing silently.
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// NVML's opaque device handle (nvml.h: typedef struct nvmlDevice_st* nvmlDevice_t).
struct nvmlDevice_st;

namespace preflight {

class NvmlLibrary {
 public:
  using Device = nvmlDevice_st*;
  using Errors = std::vector<std::string>;

  enum class EccCounter {
    kUncorrectedVolatile,
    kUncorrectedAggregate,
    kCorrectedVolatile,
    kCorrectedAggregate
  };
  enum class PcieQuery { kGenCurrent, kGenMaxLink, kGenMaxGpu, kWidthCurrent, kWidthMax };

  struct PciInfo {
    std::string bus_id;           // "00000000:1B:00.0"
    std::uint16_t device_id = 0;  // PCI device (product) id, e.g. 0x2330
  };
  struct RowRemap {
    bool pending = false;
    bool failed = false;
    unsigned corrected_rows = 0;    // rows remapped for correctable errors, over the GPU's life
    unsigned uncorrected_rows = 0;  // ... for uncorrectable ones
  };
  struct NvLinkCounts {
    int active = 0;
    int supported = 0;                   // links NVML can query: the links this GPU has
    std::vector<unsigned> active_links;  // their link numbers, for nvlink_topology()
  };
  struct NvLinkTopology {
    // NVML's busId of the GPU at the far end of each active link that ends at a GPU, verbatim
    // as pci_info() gives bus_id ("00000000:1B:00.0"); one entry per link.
    std::vector<std::string> peer_bus_ids;
    int switch_links = 0;  // active links that end at an NVSwitch
  };
  struct Processes {
    int count = 0;
    std::uint64_t memory_mib = 0;  // where NVML reports it
  };

  // PREFLIGHT_NVML_LIBRARY when set and non-empty, else "libnvidia-ml.so.1".
  static std::string library_name_from_env();

  // Loads `library_name`, resolves the functions and calls nvmlInit_v2. Never throws for a
  // missing or broken library: ok() is then false and error() says why.
  explicit NvmlLibrary(const std::string& library_name);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  bool ok() const { return ok_; }
  // The dlopen/dlsym message, or "nvmlInit: <nvmlErrorString>".
  const std::string& error() const { return error_; }

  std::optional<std::string> driver_version(Errors& errors) const;
  std::optional<unsigned> device_count(Errors& errors) const;
  std::optional<Device> device(unsigned index, Errors& errors) const;

  std::optional<std::string> name(Device device, Errors& errors) const;
  std::optional<std::string> uuid(Device device, Errors& errors) const;
  std::optional<std::string> serial(Device device, Errors& errors) const;
  std::optional<PciInfo> pci_info(Device device, Errors& errors) const;
  std::optional<std::uint64_t> memory_total_bytes(Device device, Errors& errors) const;

  std::optional<bool> mig_enabled(Device device, Errors& errors) const;
  std::optional<bool> ecc_enabled(Device device, Errors& errors) const;
  std::optional<bool> persistence_enabled(Device device, Errors& errors) const;
  std::optional<std::uint64_t> ecc_errors(Device device, EccCounter counter, Errors& errors) const;
  std::optional<bool> retired_pages_pending(Device device, Errors& errors) const;
  std::optional<RowRemap> row_remap(Device device, Errors& errors) const;
  // nvmlDeviceGetCurrentClocksEventReasons, or the older ...ThrottleReasons where the driver
  // predates the rename.
  std::optional<std::uint64_t> clock_event_reasons(Device device, Errors& errors) const;
  std::optional<int> temperature_c(Device device, Errors& errors) const;
  // nvmlDeviceGetClockInfo(NVML_CLOCK_SM): the current SM clock.
  std::optional<int> sm_clock_mhz(Device device, Errors& errors) const;
  // nvmlDeviceGetPowerUsage, which reports milliwatts.
  std::optional<double> power_w(Device device, Errors& errors) const;
  std::optional<int> pcie(Device device, PcieQuery query, Errors& errors) const;
  std::optional<NvLinkCounts> nvlink(Device device, Errors& errors) const;
  // What is at the far end of each of `active_links` (from nvlink(), which reports failures of
  // the link state itself). Every link must be read: a partial topology would read as missing
  // links, so any failure, or a GPU link whose bus id cannot be read, gives std::nullopt.
  // Where the driver lacks nvmlDeviceGetNvLinkRemoteDeviceType: std::nullopt (a link to an
  // NVSwitch could not be told from a link to a GPU). Where it lacks
  // nvmlDeviceGetNvLinkRemotePciInfo_v2, only a topology without GPU links can be read.
  std::optional<NvLinkTopology> nvlink_topology(Device device,
                                                const std::vector<unsigned>& active_links,
                                                Errors& errors) const;
  // nvmlDeviceGetPcieReplayCounter: the link's replays since the driver loaded.
  std::optional<std::uint64_t> pcie_replays(Device device, Errors& errors) const;
  // nvmlDeviceGetNvLinkErrorCounter summed over the links that answer, per counter (replay,
  // recovery, CRC flit, CRC data); a counter no link answers stays nullopt, and any failure
  // leaves all four nullopt (recorded in errors).
  struct NvLinkErrors {
    std::array<std::optional<std::uint64_t>, 4> by_counter;
  };
  NvLinkErrors nvlink_errors(Device device, Errors& errors) const;
  // Compute processes on the GPU other than `self`.
  std::optional<Processes> foreign_processes(Device device, pid_t self, Errors& errors) const;
  // The driver's own verdict on the GPU: field NVML_FI_DEV_GET_GPU_RECOVERY_ACTION of
  // nvmlDeviceGetFieldValues (R550 and newer), an nvmlDeviceGpuRecoveryAction_t: 0 none, 1 GPU
  // reset, 2 node reboot, 3 drain peer-to-peer, 4 drain and reset. std::nullopt, silently, where
  // the driver lacks the function or does not know the field (older drivers).
  std::optional<int> recovery_action(Device device, Errors& errors) const;
  // A function of the loaded library (nvml_events.cpp resolves the event functions with it);
  // nullptr when NVML is not usable or lacks it.
  void* symbol(const char* name) const;
  // The text of an NVML return code, from nvmlErrorString.
  std::string describe_error(int status) const;

 private:
  struct Api;  // the resolved NVML functions

  // One call of an optional function: false when NVML is not usable, the function is absent,
  // or it did not succeed (recorded in errors unless "not supported").
  template <class Fn, class... Args>
  bool call(Fn function, const char* name, Errors& errors, Args... args) const;
  // which: 0 name, 1 UUID, 2 serial.
  std::optional<std::string> device_string(int which, Device device, Errors& errors) const;

  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  bool ok_ = false;
  std::string error_;
};

}  // namespace preflight
