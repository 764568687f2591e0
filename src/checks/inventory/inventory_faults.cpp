#include "checks/inventory/inventory_faults.hpp"

#include <algorithm>

#include "checks/common/fault_kinds.hpp"

namespace preflight {

namespace {

// Every inventory kind is aimed at one GPU.
FaultKindSpec gpu_kind(std::string kind, std::string description, std::vector<std::string> codes,
                       FaultValue value = FaultValue::none, double min_value = 0,
                       double max_value = 0) {
  return fault_kind(std::move(kind), TargetType::gpu, std::move(description), std::move(codes),
                    value, min_value, max_value);
}

std::uint64_t throttle_bit(const std::string& word) {
  using namespace clock_event;
  if (word == "hw-slowdown") return kHwSlowdown;
  if (word == "hw-thermal") return kHwThermalSlowdown;
  if (word == "sw-thermal") return kSwThermalSlowdown;
  if (word == "power-brake") return kHwPowerBrakeSlowdown;
  return kSwPowerCap;  // "power-cap"
}

}  // namespace

std::vector<FaultKindSpec> inventory_fault_kinds() {
  std::vector<FaultKindSpec> kinds = {
      gpu_kind("mig-on", "MIG mode reads as enabled", {"MIG_ENABLED"}),
      gpu_kind("ecc-off", "ECC mode reads as disabled", {"ECC_DISABLED"}),
      gpu_kind("persistence-off", "persistence mode reads as off", {"PERSISTENCE_MODE_OFF"}),
      gpu_kind("ecc-uncorrectable", "volatile uncorrectable ECC count reads N (default 1)",
               {"ECC_UNCORRECTABLE_VOLATILE"}, FaultValue::optional_number, 1, 1e9),
      gpu_kind("ecc-uncorrectable-aggregate",
               "lifetime uncorrectable ECC count reads N (default 1), volatile 0",
               {"ECC_UNCORRECTABLE_AGGREGATE"}, FaultValue::optional_number, 1, 1e9),
      gpu_kind("ecc-correctable", "volatile correctable ECC count reads N",
               {"ECC_CORRECTABLE_HIGH"}, FaultValue::number, 0, 1e12),
      gpu_kind("retired-pages-pending", "page retirement reads as pending",
               {"RETIRED_PAGES_PENDING"}),
      gpu_kind("row-remap-pending", "row remapping reads as pending", {"ROW_REMAP_PENDING"}),
      gpu_kind("row-remap-failed", "row remapping reads as failed", {"ROW_REMAP_FAILED"}),
      gpu_kind("temperature", "temperature reads C degrees",
               {"TEMPERATURE_HIGH", "TEMPERATURE_CRITICAL"}, FaultValue::number, 0, 200),
      gpu_kind("pcie-gen", "the link's maximum PCIe generation reads G", {"PCIE_LINK_DEGRADED"},
               FaultValue::number, 1, 6),
      gpu_kind("pcie-width", "the PCIe link width reads W lanes", {"PCIE_LINK_DEGRADED"},
               FaultValue::number, 1, 32),
      gpu_kind("nvlink-down", "N NVLink links read as inactive (multi-GPU nodes)",
               {"NVLINK_INACTIVE"}, FaultValue::number, 1, 18),
      gpu_kind("foreign-memory", "another process holds MIB of GPU memory",
               {"FOREIGN_PROCESSES", "FOREIGN_MEMORY_HIGH"}, FaultValue::number, 0, 1e7),
      gpu_kind("gpu-missing", "the driver does not list the GPU (fallen off the bus)",
               {"GPU_MISSING_FROM_DRIVER", "GPU_COUNT_MISMATCH", "NO_GPU_VISIBLE"}),
      gpu_kind("cuda-invisible", "the CUDA runtime does not see the GPU",
               {"GPU_NOT_VISIBLE_TO_CUDA"}),
      gpu_kind("unresponsive", "the responsiveness probe gets no answer", {"GPU_UNRESPONSIVE"}),
      gpu_kind("nvml-error", "an NVML query fails with Unknown Error", {"NVML_READ_ERROR"}),
      gpu_kind("recovery-action",
               "NVML's GPU recovery action reads N (1 reset, 2 reboot, 3 drain P2P, 4 drain and "
               "reset)",
               {"GPU_RECOVERY_RESET", "GPU_RECOVERY_REBOOT"}, FaultValue::number, 1, 255),
  };
  FaultKindSpec throttle =
      gpu_kind("throttle",
               "a clocks-event reason is active: hw-slowdown, hw-thermal, sw-thermal, "
               "power-brake or power-cap",
               {"CLOCKS_THROTTLED_HW", "CLOCKS_THROTTLED_POWER_CAP"}, FaultValue::word);
  throttle.words = {"hw-slowdown", "hw-thermal", "sw-thermal", "power-brake", "power-cap"};
  kinds.push_back(throttle);
  return kinds;
}

bool probe_is_replaced(const FaultPlan& faults, int gpu_index) {
  return faults.for_gpu("unresponsive", gpu_index) != nullptr;
}

void apply_inventory_faults(const FaultPlan& faults, NodeReading& node) {
  for (auto& g : node.gpus) {
    const auto fault = [&](const char* kind) { return faults.for_gpu(kind, g.index); };
    const auto count = [&](const InjectedFault* f) {
      return static_cast<std::uint64_t>(f->number.value_or(1));
    };
    if (fault("mig-on")) g.mig_enabled = true;
    if (fault("ecc-off")) g.ecc_enabled = false;
    if (fault("persistence-off")) g.persistence_enabled = false;
    if (auto f = fault("ecc-uncorrectable")) g.ecc_uncorrected_volatile = count(f);
    if (auto f = fault("ecc-uncorrectable-aggregate")) {
      g.ecc_uncorrected_aggregate = count(f);
      g.ecc_uncorrected_volatile = 0;
    }
    if (auto f = fault("ecc-correctable")) g.ecc_corrected_volatile = count(f);
    if (fault("retired-pages-pending")) g.retired_pages_pending = true;
    if (fault("row-remap-pending")) g.row_remap_pending = true;
    if (fault("row-remap-failed")) g.row_remap_failed = true;
    if (auto f = fault("temperature")) g.temperature_c = static_cast<int>(*f->number);
    if (auto f = fault("pcie-gen")) {
      g.pcie_gen_max_link = static_cast<int>(*f->number);
      if (!g.pcie_gen_max_gpu) g.pcie_gen_max_gpu = 5;  // so the comparison has both sides
    }
    if (auto f = fault("pcie-width")) {
      g.pcie_width_current = static_cast<int>(*f->number);
      if (!g.pcie_width_max) g.pcie_width_max = 16;
    }
    if (auto f = fault("nvlink-down")) {
      const int down = static_cast<int>(*f->number);
      const int have = g.nvlink_active.value_or(18);
      g.nvlink_active = std::max(0, have - down);
    }
    if (auto f = fault("foreign-memory")) {
      g.foreign_processes = g.foreign_processes.value_or(0) + 1;
      g.foreign_memory_mib =
          g.foreign_memory_mib.value_or(0) + static_cast<std::uint64_t>(*f->number);
    }
    if (fault("cuda-invisible")) g.cuda_ordinal = -1;
    if (fault("unresponsive")) {
      g.responsive = false;
      g.probe_error = "no answer (injected)";
    }
    if (fault("nvml-error")) {
      g.read_errors.push_back("nvmlDeviceGetTemperature: Unknown Error (injected)");
    }
    if (auto f = fault("recovery-action")) g.recovery_action = static_cast<int>(*f->number);
    if (auto f = fault("throttle")) {
      g.clock_event_reasons = g.clock_event_reasons.value_or(0) | throttle_bit(f->word);
    }
  }
  // Last: the GPU leaves the driver's list but stays on the PCI bus (also where sysfs could
  // not be compared, e.g. in a container).
  if (!faults.of_kind("gpu-missing").empty()) {
    const int listed = static_cast<int>(node.gpus.size());
    node.pci_gpu_count = std::max(node.pci_gpu_count.value_or(0), listed);
  }
  node.gpus.erase(std::remove_if(node.gpus.begin(), node.gpus.end(),
                                 [&](const GpuReading& g) {
                                   return faults.for_gpu("gpu-missing", g.index) != nullptr;
                                 }),
                  node.gpus.end());
}

}  // namespace preflight
