// NVML's event stream (nvml_events.hpp). The event functions are resolved here from the loaded
// library, with their ABI as nvml.h declares it, so nvml_library.cpp keeps only the queries.
#include "gpu/nvml_events.hpp"

#include <algorithm>
#include <mutex>
#include <utility>

namespace preflight {

namespace {

namespace nvml_event_abi {
using Return = int;
constexpr Return kSuccess = 0;
constexpr Return kErrorNotSupported = 3;
constexpr Return kErrorTimeout = 10;
struct EventSet;    // nvmlEventSet_st
struct EventData {  // nvmlEventData_t
  nvmlDevice_st* device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
constexpr unsigned long long kEventTypeXidCriticalError = 0x8;  // nvmlEventTypeXidCriticalError
using SetCreateFn = Return (*)(EventSet**);
using SupportedFn = Return (*)(nvmlDevice_st*, unsigned long long*);
using RegisterFn = Return (*)(nvmlDevice_st*, unsigned long long, EventSet*);
using WaitFn = Return (*)(EventSet*, EventData*, unsigned int);
using SetFreeFn = Return (*)(EventSet*);
}  // namespace nvml_event_abi

// The most events one drain takes: a GPU in an Xid storm must not keep a check draining.
constexpr int kMostPerDrain = 1000;

class NvmlEventSource final : public GpuEventSource {
 public:
  NvmlEventSource(const NvmlLibrary& nvml, nvml_event_abi::EventSet* set,
                  nvml_event_abi::WaitFn wait, nvml_event_abi::SetFreeFn set_free,
                  std::vector<std::pair<nvmlDevice_st*, int>> devices)
      : nvml_(nvml), set_(set), wait_(wait), free_(set_free), devices_(std::move(devices)) {}
  ~NvmlEventSource() override {
    if (set_ != nullptr && free_ != nullptr) free_(set_);
  }
  NvmlEventSource(const NvmlEventSource&) = delete;
  NvmlEventSource& operator=(const NvmlEventSource&) = delete;

  std::vector<GpuEvent> drain(std::chrono::milliseconds wait) override {
    // A check left behind at its deadline may still drain while the next check does.
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<GpuEvent> events;
    auto timeout = static_cast<unsigned>(std::max<long long>(wait.count(), 0));
    for (int n = 0; n < kMostPerDrain; ++n) {
      nvml_event_abi::EventData data{};
      const nvml_event_abi::Return status = wait_(set_, &data, timeout);
      if (status == nvml_event_abi::kErrorTimeout) break;
      if (status != nvml_event_abi::kSuccess) {
        GpuEvent failed;
        failed.type = "wait_error";
        failed.detail = "nvmlEventSetWait_v2: " + nvml_.describe_error(status);
        events.push_back(std::move(failed));
        break;
      }
      timeout = 0;  // the rest already pending
      GpuEvent e;
      const auto it = std::find_if(devices_.begin(), devices_.end(),
                                   [&](const auto& d) { return d.first == data.device; });
      e.gpu_index = it == devices_.end() ? -1 : it->second;
      e.type = data.eventType == nvml_event_abi::kEventTypeXidCriticalError ? "xid" : "other";
      e.data = data.eventData;
      events.push_back(std::move(e));
    }
    return events;
  }

 private:
  const NvmlLibrary& nvml_;
  nvml_event_abi::EventSet* set_;
  nvml_event_abi::WaitFn wait_;
  nvml_event_abi::SetFreeFn free_;
  std::vector<std::pair<nvmlDevice_st*, int>> devices_;
  std::mutex mutex_;
};

}  // namespace

std::shared_ptr<GpuEventSource> open_nvml_events(const NvmlLibrary& nvml, const NodeReading& node) {
  const auto create =
      reinterpret_cast<nvml_event_abi::SetCreateFn>(nvml.symbol("nvmlEventSetCreate"));
  const auto supported = reinterpret_cast<nvml_event_abi::SupportedFn>(
      nvml.symbol("nvmlDeviceGetSupportedEventTypes"));
  const auto register_events =
      reinterpret_cast<nvml_event_abi::RegisterFn>(nvml.symbol("nvmlDeviceRegisterEvents"));
  const auto wait = reinterpret_cast<nvml_event_abi::WaitFn>(nvml.symbol("nvmlEventSetWait_v2"));
  const auto set_free =
      reinterpret_cast<nvml_event_abi::SetFreeFn>(nvml.symbol("nvmlEventSetFree"));
  if (create == nullptr || supported == nullptr || register_events == nullptr || wait == nullptr ||
      set_free == nullptr) {
    return nullptr;
  }
  nvml_event_abi::EventSet* set = nullptr;
  if (create(&set) != nvml_event_abi::kSuccess || set == nullptr) return nullptr;
  std::vector<std::pair<nvmlDevice_st*, int>> devices;
  std::vector<std::string> problems;
  for (const GpuReading& gpu : node.gpus) {
    if (gpu.index < 0) continue;
    const std::string name = "gpu" + std::to_string(gpu.index);
    NvmlLibrary::Errors errors;
    const auto device = nvml.device(static_cast<unsigned>(gpu.index), errors);
    if (!device) {
      problems.push_back(name + ": Xid events not registered: no NVML handle");
      continue;
    }
    unsigned long long types = 0;
    nvml_event_abi::Return status = supported(*device, &types);
    if (status == nvml_event_abi::kSuccess &&
        (types & nvml_event_abi::kEventTypeXidCriticalError) == 0) {
      status = nvml_event_abi::kErrorNotSupported;
    }
    if (status == nvml_event_abi::kSuccess) {
      status = register_events(*device, nvml_event_abi::kEventTypeXidCriticalError, set);
    }
    if (status != nvml_event_abi::kSuccess) {
      problems.push_back(name + ": Xid events not registered: " + nvml.describe_error(status));
      continue;
    }
    devices.emplace_back(*device, gpu.index);
  }
  auto source = std::make_shared<NvmlEventSource>(nvml, set, wait, set_free, std::move(devices));
  source->problems = std::move(problems);
  return source;
}

}  // namespace preflight
