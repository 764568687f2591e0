#include "gpu/nvml_library.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "gpu/loaded_library.hpp"
#include "gpu/nvml_abi.hpp"
#include "model/byte_units.hpp"

namespace preflight {
namespace {

namespace abi = nvml_abi;

constexpr const char* kDefaultLibrary = "libnvidia-ml.so.1";

std::string error_text(abi::ErrorStringFn error_string, abi::Return status) {
  const char* text = error_string != nullptr ? error_string(status) : nullptr;
  return text != nullptr ? text : "NVML error " + std::to_string(status);
}

// True on success. "Not supported" is an answer, not a failure; anything else is recorded.
bool check(abi::Return status, abi::ErrorStringFn error_string, const char* function,
           NvmlLibrary::Errors& errors) {
  if (status == abi::kSuccess) return true;
  if (status != abi::kErrorNotSupported) {
    errors.push_back(std::string(function) + ": " + error_text(error_string, status));
  }
  return false;
}

// NVML may fill a fixed-size field without a terminator, so never read past it.
template <std::size_t N>
std::string field_string(const char (&field)[N]) {
  return std::string(field, strnlen(field, N));
}

}  // namespace

// Resolved at construction; an absent function stays null, which makes its readings
// unavailable rather than failing the library.
struct NvmlLibrary::Api {
  explicit Api(void* library) : handle(library) {}
  Symbol get(const char* symbol) const { return {handle ? dlsym(handle, symbol) : nullptr}; }

  void* handle;
  abi::InitFn init = get("nvmlInit_v2");
  abi::InitFn shutdown = get("nvmlShutdown");
  abi::ErrorStringFn error_string = get("nvmlErrorString");
  abi::CountFn device_count = get("nvmlDeviceGetCount_v2");
  abi::HandleByIndexFn handle_by_index = get("nvmlDeviceGetHandleByIndex_v2");
  abi::SystemStringFn driver_version = get("nvmlSystemGetDriverVersion");
  abi::DeviceStringFn name = get("nvmlDeviceGetName");
  abi::DeviceStringFn uuid = get("nvmlDeviceGetUUID");
  abi::DeviceStringFn serial = get("nvmlDeviceGetSerial");
  abi::PciInfoFn pci_info = get("nvmlDeviceGetPciInfo_v3");
  abi::MemoryFn memory_info = get("nvmlDeviceGetMemoryInfo");
  abi::MigModeFn mig_mode = get("nvmlDeviceGetMigMode");
  abi::EccModeFn ecc_mode = get("nvmlDeviceGetEccMode");
  abi::EnableStateFn persistence_mode = get("nvmlDeviceGetPersistenceMode");
  abi::TotalEccErrorsFn total_ecc_errors = get("nvmlDeviceGetTotalEccErrors");
  abi::EnableStateFn retired_pages_pending = get("nvmlDeviceGetRetiredPagesPendingStatus");
  abi::RemappedRowsFn remapped_rows = get("nvmlDeviceGetRemappedRows");
  abi::Uint64Fn clocks_event_reasons = get("nvmlDeviceGetCurrentClocksEventReasons");
  abi::Uint64Fn clocks_throttle_reasons = get("nvmlDeviceGetCurrentClocksThrottleReasons");
  abi::TemperatureFn temperature = get("nvmlDeviceGetTemperature");
  abi::ClockInfoFn clock_info = get("nvmlDeviceGetClockInfo");
  abi::UintFn power_usage = get("nvmlDeviceGetPowerUsage");
  abi::UintFn pcie_gen_current = get("nvmlDeviceGetCurrPcieLinkGeneration");
  abi::UintFn pcie_gen_max_link = get("nvmlDeviceGetMaxPcieLinkGeneration");
  abi::UintFn pcie_gen_max_gpu = get("nvmlDeviceGetGpuMaxPcieLinkGeneration");
  abi::UintFn pcie_width_current = get("nvmlDeviceGetCurrPcieLinkWidth");
  abi::UintFn pcie_width_max = get("nvmlDeviceGetMaxPcieLinkWidth");
  abi::NvLinkStateFn nvlink_state = get("nvmlDeviceGetNvLinkState");
  abi::NvLinkErrorCounterFn nvlink_error_counter = get("nvmlDeviceGetNvLinkErrorCounter");
  abi::UintFn pcie_replay_counter = get("nvmlDeviceGetPcieReplayCounter");
  abi::NvLinkRemotePciFn nvlink_remote_pci = get("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  abi::NvLinkRemoteTypeFn nvlink_remote_type = get("nvmlDeviceGetNvLinkRemoteDeviceType");
  abi::ProcessesFn processes_v3 = get("nvmlDeviceGetComputeRunningProcesses_v3");
  abi::ProcessesFn processes_v2 = get("nvmlDeviceGetComputeRunningProcesses_v2");
  abi::FieldValuesFn field_values = get("nvmlDeviceGetFieldValues");
};

std::string NvmlLibrary::library_name_from_env() {
  const char* name = std::getenv("PREFLIGHT_NVML_LIBRARY");
  return name != nullptr && *name != '\0' ? name : kDefaultLibrary;
}

NvmlLibrary::NvmlLibrary(const std::string& library_name) {
  handle_ = open_library(library_name, error_);
  api_ = std::make_unique<Api>(handle_);
  if (handle_ == nullptr) return;
  static constexpr const char* kRequired[] = {"nvmlInit_v2", "nvmlShutdown", "nvmlErrorString",
                                              "nvmlDeviceGetCount_v2",
                                              "nvmlDeviceGetHandleByIndex_v2"};
  const std::string missing = first_missing_symbol(handle_, kRequired, library_name);
  const Api& api = *api_;
  abi::Return status = abi::kSuccess;
  if (missing.empty()) status = api.init();
  if (!missing.empty() || status != abi::kSuccess) {
    error_ = !missing.empty() ? missing : "nvmlInit: " + error_text(api.error_string, status);
    dlclose(handle_);
    handle_ = nullptr;
    return;
  }
  ok_ = true;
}

NvmlLibrary::~NvmlLibrary() {
  if (ok_) api_->shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

template <class Fn, class... Args>
bool NvmlLibrary::call(Fn function, const char* name, Errors& errors, Args... args) const {
  // After a failed nvmlInit the library is closed and the resolved pointers dangle.
  return ok_ && function != nullptr && check(function(args...), api_->error_string, name, errors);
}

std::optional<std::string> NvmlLibrary::driver_version(Errors& errors) const {
  char text[96] = {};  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE is 80
  if (!call(api_->driver_version, "nvmlSystemGetDriverVersion", errors, text,
            unsigned{sizeof(text)})) {
    return std::nullopt;
  }
  return field_string(text);
}

std::optional<unsigned> NvmlLibrary::device_count(Errors& errors) const {
  unsigned count = 0;
  if (!call(api_->device_count, "nvmlDeviceGetCount_v2", errors, &count)) return std::nullopt;
  return count;
}

std::optional<NvmlLibrary::Device> NvmlLibrary::device(unsigned index, Errors& errors) const {
  Device device = nullptr;
  if (!call(api_->handle_by_index, "nvmlDeviceGetHandleByIndex_v2", errors, index, &device)) {
    return std::nullopt;
  }
  return device;
}

std::optional<std::string> NvmlLibrary::device_string(int which, Device device,
                                                      Errors& errors) const {
  static constexpr const char* kNames[] = {"nvmlDeviceGetName", "nvmlDeviceGetUUID",
                                           "nvmlDeviceGetSerial"};
  const abi::DeviceStringFn functions[] = {api_->name, api_->uuid, api_->serial};
  // Larger than any of NVML's *_BUFFER_SIZE constants, which are minimums.
  char text[256] = {};
  if (!call(functions[which], kNames[which], errors, device, text, unsigned{sizeof(text)}))
    return std::nullopt;
  return field_string(text);
}

std::optional<std::string> NvmlLibrary::name(Device device, Errors& errors) const {
  return device_string(0, device, errors);
}

std::optional<std::string> NvmlLibrary::uuid(Device device, Errors& errors) const {
  return device_string(1, device, errors);
}

std::optional<std::string> NvmlLibrary::serial(Device device, Errors& errors) const {
  return device_string(2, device, errors);
}

std::optional<NvmlLibrary::PciInfo> NvmlLibrary::pci_info(Device device, Errors& errors) const {
  abi::PciInfo info{};
  if (!call(api_->pci_info, "nvmlDeviceGetPciInfo_v3", errors, device, &info)) return std::nullopt;
  PciInfo result;
  result.bus_id = field_string(info.busId);
  result.device_id = static_cast<std::uint16_t>(info.pciDeviceId >> 16);
  return result;
}

std::optional<std::uint64_t> NvmlLibrary::memory_total_bytes(Device device, Errors& errors) const {
  abi::Memory memory{};
  if (!call(api_->memory_info, "nvmlDeviceGetMemoryInfo", errors, device, &memory))
    return std::nullopt;
  return memory.total;
}

std::optional<bool> NvmlLibrary::mig_enabled(Device device, Errors& errors) const {
  unsigned current = 0;
  unsigned pending = 0;
  if (!call(api_->mig_mode, "nvmlDeviceGetMigMode", errors, device, &current, &pending)) {
    return std::nullopt;
  }
  return current == abi::kDeviceMigEnable;
}

std::optional<bool> NvmlLibrary::ecc_enabled(Device device, Errors& errors) const {
  abi::EnableState current = 0;
  abi::EnableState pending = 0;
  if (!call(api_->ecc_mode, "nvmlDeviceGetEccMode", errors, device, &current, &pending)) {
    return std::nullopt;
  }
  return current == abi::kFeatureEnabled;
}

std::optional<bool> NvmlLibrary::persistence_enabled(Device device, Errors& errors) const {
  abi::EnableState mode = 0;
  if (!call(api_->persistence_mode, "nvmlDeviceGetPersistenceMode", errors, device, &mode)) {
    return std::nullopt;
  }
  return mode == abi::kFeatureEnabled;
}

std::optional<std::uint64_t> NvmlLibrary::ecc_errors(Device device, EccCounter counter,
                                                     Errors& errors) const {
  const bool corrected =
      counter == EccCounter::kCorrectedVolatile || counter == EccCounter::kCorrectedAggregate;
  const int type = corrected ? abi::kMemoryErrorTypeCorrected : abi::kMemoryErrorTypeUncorrected;
  const bool aggregate =
      counter == EccCounter::kUncorrectedAggregate || counter == EccCounter::kCorrectedAggregate;
  const int lifetime = aggregate ? abi::kAggregateEcc : abi::kVolatileEcc;
  unsigned long long count = 0;
  if (!call(api_->total_ecc_errors, "nvmlDeviceGetTotalEccErrors", errors, device, type, lifetime,
            &count)) {
    return std::nullopt;
  }
  return count;
}

std::optional<bool> NvmlLibrary::retired_pages_pending(Device device, Errors& errors) const {
  abi::EnableState pending = 0;
  if (!call(api_->retired_pages_pending, "nvmlDeviceGetRetiredPagesPendingStatus", errors, device,
            &pending)) {
    return std::nullopt;
  }
  return pending == abi::kFeatureEnabled;
}

std::optional<NvmlLibrary::RowRemap> NvmlLibrary::row_remap(Device device, Errors& errors) const {
  unsigned corrected_rows = 0;
  unsigned uncorrected_rows = 0;
  unsigned pending = 0;
  unsigned failed = 0;
  if (!call(api_->remapped_rows, "nvmlDeviceGetRemappedRows", errors, device, &corrected_rows,
            &uncorrected_rows, &pending, &failed)) {
    return std::nullopt;
  }
  RowRemap result;
  result.pending = pending != 0;
  result.failed = failed != 0;
  result.corrected_rows = corrected_rows;
  result.uncorrected_rows = uncorrected_rows;
  return result;
}

std::optional<std::uint64_t> NvmlLibrary::clock_event_reasons(Device device, Errors& errors) const {
  const bool renamed = api_->clocks_event_reasons != nullptr;
  const auto function = renamed ? api_->clocks_event_reasons : api_->clocks_throttle_reasons;
  const char* name = renamed ? "nvmlDeviceGetCurrentClocksEventReasons"
                             : "nvmlDeviceGetCurrentClocksThrottleReasons";
  unsigned long long reasons = 0;
  if (!call(function, name, errors, device, &reasons)) return std::nullopt;
  return reasons;
}

std::optional<int> NvmlLibrary::temperature_c(Device device, Errors& errors) const {
  unsigned celsius = 0;
  if (!call(api_->temperature, "nvmlDeviceGetTemperature", errors, device, abi::kTemperatureGpu,
            &celsius)) {
    return std::nullopt;
  }
  return static_cast<int>(celsius);
}

std::optional<int> NvmlLibrary::sm_clock_mhz(Device device, Errors& errors) const {
  unsigned mhz = 0;
  if (!call(api_->clock_info, "nvmlDeviceGetClockInfo", errors, device, abi::kClockSm, &mhz)) {
    return std::nullopt;
  }
  return static_cast<int>(mhz);
}

std::optional<double> NvmlLibrary::power_w(Device device, Errors& errors) const {
  unsigned milliwatts = 0;
  if (!call(api_->power_usage, "nvmlDeviceGetPowerUsage", errors, device, &milliwatts)) {
    return std::nullopt;
  }
  return milliwatts / 1000.0;
}

std::optional<int> NvmlLibrary::pcie(Device device, PcieQuery query, Errors& errors) const {
  // In PcieQuery order.
  static constexpr const char* kNames[] = {
      "nvmlDeviceGetCurrPcieLinkGeneration", "nvmlDeviceGetMaxPcieLinkGeneration",
      "nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetCurrPcieLinkWidth",
      "nvmlDeviceGetMaxPcieLinkWidth"};
  const abi::UintFn functions[] = {api_->pcie_gen_current, api_->pcie_gen_max_link,
                                   api_->pcie_gen_max_gpu, api_->pcie_width_current,
                                   api_->pcie_width_max};
  const auto which = static_cast<std::size_t>(query);
  unsigned value = 0;
  if (!call(functions[which], kNames[which], errors, device, &value)) return std::nullopt;
  return static_cast<int>(value);
}

std::optional<NvmlLibrary::NvLinkCounts> NvmlLibrary::nvlink(Device device, Errors& errors) const {
  if (!ok_ || api_->nvlink_state == nullptr) return std::nullopt;
  NvLinkCounts counts;
  for (unsigned link = 0; link < abi::kNvLinkMaxLinks; ++link) {
    abi::EnableState active = 0;
    const abi::Return status = api_->nvlink_state(device, link, &active);
    // A GPU with fewer links than the maximum answers these for the links it lacks.
    if (status == abi::kErrorNotSupported || status == abi::kErrorInvalidArgument) continue;
    // A partial count would read as links down; report the failure instead.
    if (!check(status, api_->error_string, "nvmlDeviceGetNvLinkState", errors)) {
      return std::nullopt;
    }
    ++counts.supported;
    if (active == abi::kFeatureEnabled) {
      ++counts.active;
      counts.active_links.push_back(link);
    }
  }
  return counts;
}

std::optional<std::uint64_t> NvmlLibrary::pcie_replays(Device device, Errors& errors) const {
  unsigned value = 0;
  if (!call(api_->pcie_replay_counter, "nvmlDeviceGetPcieReplayCounter", errors, device, &value)) {
    return std::nullopt;
  }
  return value;
}

NvmlLibrary::NvLinkErrors NvmlLibrary::nvlink_errors(Device device, Errors& errors) const {
  NvLinkErrors sums;
  if (!ok_ || api_->nvlink_error_counter == nullptr) return sums;
  for (unsigned link = 0; link < abi::kNvLinkMaxLinks; ++link) {
    for (int counter = 0; counter < 4; ++counter) {
      unsigned long long value = 0;
      const abi::Return status = api_->nvlink_error_counter(device, link, counter, &value);
      // Links the GPU lacks, and counters a generation does not keep, answer these.
      if (status == abi::kErrorNotSupported || status == abi::kErrorInvalidArgument) continue;
      if (!check(status, api_->error_string, "nvmlDeviceGetNvLinkErrorCounter", errors)) {
        return NvLinkErrors{};  // a partial sum would hide the links not read
      }
      auto& sum = sums.by_counter[static_cast<std::size_t>(counter)];
      sum = sum.value_or(0) + value;
    }
  }
  return sums;
}

std::optional<NvmlLibrary::NvLinkTopology> NvmlLibrary::nvlink_topology(
    Device device, const std::vector<unsigned>& active_links, Errors& errors) const {
  // Without the type query a link to an NVSwitch would pass for a link to some GPU, and a
  // switched node would read as GPUs without NVLink between them: better not read at all.
  if (!ok_ || api_->nvlink_remote_type == nullptr) return std::nullopt;
  NvLinkTopology topology;
  for (const unsigned link : active_links) {
    abi::NvLinkDeviceType type = abi::kNvLinkDeviceTypeUnknown;
    if (!call(api_->nvlink_remote_type, "nvmlDeviceGetNvLinkRemoteDeviceType", errors, device, link,
              &type)) {
      return std::nullopt;  // one failure is enough: the topology is incomplete either way
    }
    switch (type) {
      case abi::kNvLinkDeviceTypeSwitch:
        ++topology.switch_links;
        break;
      case abi::kNvLinkDeviceTypeGpu: {
        abi::PciInfo remote{};
        if (api_->nvlink_remote_pci == nullptr) return std::nullopt;
        if (!call(api_->nvlink_remote_pci, "nvmlDeviceGetNvLinkRemotePciInfo_v2", errors, device,
                  link, &remote)) {
          return std::nullopt;
        }
        // As pci_info() reads bus_id, so the two compare equal for the same GPU.
        topology.peer_bus_ids.push_back(field_string(remote.busId));
        break;
      }
      case abi::kNvLinkDeviceTypeIbmNpu:
      case abi::kNvLinkDeviceTypeUnknown:
      default:
        break;  // neither a GPU peer nor a switch
    }
  }
  return topology;
}

std::optional<NvmlLibrary::Processes> NvmlLibrary::foreign_processes(Device device, pid_t self,
                                                                     Errors& errors) const {
  const bool v3 = api_->processes_v3 != nullptr;
  const abi::ProcessesFn function = v3 ? api_->processes_v3 : api_->processes_v2;
  const char* name =
      v3 ? "nvmlDeviceGetComputeRunningProcesses_v3" : "nvmlDeviceGetComputeRunningProcesses_v2";
  if (!ok_ || function == nullptr) return std::nullopt;

  std::vector<abi::ProcessInfo> infos;
  unsigned count = 0;
  abi::Return status = function(device, &count, nullptr);
  // Processes can start between the calls, so ask again with some headroom.
  for (int attempt = 0; status == abi::kErrorInsufficientSize && attempt < 5; ++attempt) {
    infos.assign(count + 8, abi::ProcessInfo{});
    count = static_cast<unsigned>(infos.size());
    status = function(device, &count, infos.data());
  }
  if (!check(status, api_->error_string, name, errors)) return std::nullopt;
  if (count < infos.size()) infos.resize(count);

  Processes result;
  std::uint64_t bytes = 0;
  for (const abi::ProcessInfo& info : infos) {
    if (static_cast<pid_t>(info.pid) == self) continue;
    ++result.count;
    if (info.usedGpuMemory != abi::kValueNotAvailable) bytes += info.usedGpuMemory;
  }
  result.memory_mib = (bytes + kMiB - 1) / kMiB;  // a process holding any memory shows as >= 1
  return result;
}

void* NvmlLibrary::symbol(const char* name) const {
  return ok_ && handle_ != nullptr ? dlsym(handle_, name) : nullptr;
}

std::string NvmlLibrary::describe_error(int status) const {
  return preflight::error_text(ok_ ? api_->error_string : nullptr, status);
}

std::optional<int> NvmlLibrary::recovery_action(Device device, Errors& errors) const {
  abi::FieldValue field{};
  field.fieldId = abi::kFiDevGetGpuRecoveryAction;
  if (!ok_ || api_->field_values == nullptr) return std::nullopt;
  const abi::Return status = api_->field_values(device, 1, &field);
  // NVML documents Invalid Argument for the call only for a bad handle or array, which this one
  // is not (other queries on it answered); a driver older than the field (before R550) answers an
  // unknown field id with Not Supported or Invalid Argument, for the call or for the field. All
  // of these are silent, as an absent function is.
  if (status == abi::kErrorInvalidArgument) return std::nullopt;
  if (!check(status, api_->error_string, "nvmlDeviceGetFieldValues", errors)) return std::nullopt;
  if (field.nvmlReturn == abi::kErrorInvalidArgument) return std::nullopt;
  if (!check(field.nvmlReturn, api_->error_string,
             "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)", errors)) {
    return std::nullopt;
  }
  long long value = -1;
  switch (field.valueType) {
    case abi::kValueTypeUnsignedInt:
      value = field.value.uiVal;
      break;
    case abi::kValueTypeSignedInt:
      value = field.value.siVal;
      break;
    case abi::kValueTypeUnsignedShort:
      value = field.value.usVal;
      break;
    case abi::kValueTypeUnsignedLong:
      value = static_cast<long long>(field.value.ulVal);
      break;
    case abi::kValueTypeUnsignedLongLong:
      value = static_cast<long long>(field.value.ullVal);
      break;
    case abi::kValueTypeSignedLongLong:
      value = field.value.sllVal;
      break;
    default:  // a double, or a type this code does not know
      break;
  }
  // The enum is small and never negative; anything else is not a value to judge.
  if (value < 0 || value > 0xffff) {
    errors.push_back(
        "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): value of "
        "type " +
        std::to_string(field.valueType) + " is not an action");
    return std::nullopt;
  }
  return static_cast<int>(value);
}

}  // namespace preflight
