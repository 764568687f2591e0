#include "checks/inventory/inventory_readings.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "model/json_fields.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

const std::pair<std::uint64_t, const char*> kClockEventNames[] = {
    {clock_event::kGpuIdle, "gpu_idle"},
    {clock_event::kApplicationsClocksSetting, "applications_clocks_setting"},
    {clock_event::kSwPowerCap, "sw_power_cap"},
    {clock_event::kHwSlowdown, "hw_slowdown"},
    {clock_event::kSyncBoost, "sync_boost"},
    {clock_event::kSwThermalSlowdown, "sw_thermal_slowdown"},
    {clock_event::kHwThermalSlowdown, "hw_thermal_slowdown"},
    {clock_event::kHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
    {clock_event::kDisplayClockSetting, "display_clock_setting"},
};

// CUDA encodes versions as major x 1000 + minor x 10 (13000, 12040); the readings say "13.0"
// and "12.4" as nvidia-smi does. A value that is not of that form stays a number.
Json cuda_version_json(int v) {
  if (v <= 0 || v % 10 != 0) return v;
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

int cuda_version_of(const Fields& f, const char* key) {
  const Json* v = f.find(key);
  if (v == nullptr) return 0;
  if (!v->is_string()) return static_cast<int>(f.integer(key, 0, 1000000).value_or(0));
  const std::string text = v->get<std::string>();
  int major = 0;
  int minor = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%d.%d%c", &major, &minor, &rest) != 2 || major < 0 || minor < 0 ||
      minor > 99) {
    f.fail(key, "expected a CUDA version such as \"13.0\", got \"" + text + "\"");
  }
  return major * 1000 + minor * 10;
}

Json device_id_json(std::uint16_t id) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%04x", static_cast<unsigned>(id));
  return std::string(text);
}

std::uint16_t device_id_of(const Fields& f, const char* key) {
  const Json* v = f.find(key);
  if (v == nullptr) return 0;
  if (!v->is_string()) return static_cast<std::uint16_t>(f.integer(key, 0, 0xffff).value_or(0));
  const std::string text = v->get<std::string>();
  char* end = nullptr;
  const unsigned long id = std::strtoul(text.c_str(), &end, 16);
  if (text.size() < 3 || text.compare(0, 2, "0x") != 0 || *end != '\0' || id > 0xffff) {
    f.fail(key, "expected a PCI device id such as \"0x2330\", got \"" + text + "\"");
  }
  return static_cast<std::uint16_t>(id);
}

template <typename T>
void put(Json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

void put(Json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}

void put(Json& j, const char* key, const std::vector<std::string>& v) {
  if (!v.empty()) j[key] = v;
}

std::optional<int> small(const Fields& f, const char* key) {
  const auto v = f.integer(key, std::numeric_limits<int>::min(), std::numeric_limits<int>::max());
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

std::optional<int> small_count(const Fields& f, const char* key) {
  const auto v = f.integer(key, 0, std::numeric_limits<int>::max());
  return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;
}

Json gpu_json(const GpuReading& g) {
  Json j = Json::object();
  j["index"] = g.index;
  put(j, "name", g.name);
  put(j, "uuid", g.uuid);
  put(j, "pci_bus_id", g.pci_bus_id);
  put(j, "serial", g.serial);
  if (g.pci_device_id != 0) j["pci_device_id"] = device_id_json(g.pci_device_id);
  if (g.memory_total_bytes != 0) j["memory_total_bytes"] = g.memory_total_bytes;
  j["cuda_ordinal"] = g.cuda_ordinal;
  put(j, "mig_enabled", g.mig_enabled);
  put(j, "ecc_enabled", g.ecc_enabled);
  put(j, "persistence_enabled", g.persistence_enabled);
  put(j, "ecc_uncorrected_volatile", g.ecc_uncorrected_volatile);
  put(j, "ecc_uncorrected_aggregate", g.ecc_uncorrected_aggregate);
  put(j, "ecc_corrected_volatile", g.ecc_corrected_volatile);
  put(j, "ecc_corrected_aggregate", g.ecc_corrected_aggregate);
  put(j, "retired_pages_pending", g.retired_pages_pending);
  put(j, "row_remap_pending", g.row_remap_pending);
  put(j, "row_remap_failed", g.row_remap_failed);
  put(j, "remapped_rows_corrected", g.remapped_rows_corrected);
  put(j, "remapped_rows_uncorrected", g.remapped_rows_uncorrected);
  if (g.clock_event_reasons) j["clock_event_reasons"] = clock_event_names(*g.clock_event_reasons);
  put(j, "temperature_c", g.temperature_c);
  put(j, "pcie_gen_current", g.pcie_gen_current);
  put(j, "pcie_gen_max_link", g.pcie_gen_max_link);
  put(j, "pcie_gen_max_gpu", g.pcie_gen_max_gpu);
  put(j, "pcie_width_current", g.pcie_width_current);
  put(j, "pcie_width_max", g.pcie_width_max);
  put(j, "nvlink_active", g.nvlink_active);
  put(j, "nvlink_supported", g.nvlink_supported);
  put(j, "nvlink_peer_bus_ids", g.nvlink_peer_bus_ids);
  put(j, "nvlink_switch_links", g.nvlink_switch_links);
  put(j, "foreign_processes", g.foreign_processes);
  put(j, "foreign_memory_mib", g.foreign_memory_mib);
  put(j, "recovery_action", g.recovery_action);
  put(j, "read_errors", g.read_errors);
  if (g.responsive || !g.probe_error.empty()) {
    Json probe = Json::object();
    put(probe, "responsive", g.responsive);
    put(probe, "error", g.probe_error);
    if (g.responsive) probe["ms"] = g.probe_ms;
    j["probe"] = std::move(probe);
  }
  return j;
}

GpuReading gpu_of(const Fields& f, int position) {
  GpuReading g;
  g.index = small_count(f, "index").value_or(position);
  g.name = f.text("name");
  g.uuid = f.text("uuid");
  g.pci_bus_id = f.text("pci_bus_id");
  g.serial = f.text("serial");
  g.pci_device_id = device_id_of(f, "pci_device_id");
  g.memory_total_bytes = f.count("memory_total_bytes").value_or(0);
  // Absent: CUDA sees the GPU, at its NVML index (the usual case on a node without
  // CUDA_VISIBLE_DEVICES); -1 says it does not.
  g.cuda_ordinal = small(f, "cuda_ordinal").value_or(g.index);
  if (g.cuda_ordinal < -1) f.fail("cuda_ordinal", "expected -1 (not seen by CUDA) or an ordinal");
  g.mig_enabled = f.flag("mig_enabled");
  g.ecc_enabled = f.flag("ecc_enabled");
  g.persistence_enabled = f.flag("persistence_enabled");
  g.ecc_uncorrected_volatile = f.count("ecc_uncorrected_volatile");
  g.ecc_uncorrected_aggregate = f.count("ecc_uncorrected_aggregate");
  g.ecc_corrected_volatile = f.count("ecc_corrected_volatile");
  g.ecc_corrected_aggregate = f.count("ecc_corrected_aggregate");
  g.retired_pages_pending = f.flag("retired_pages_pending");
  g.row_remap_pending = f.flag("row_remap_pending");
  g.row_remap_failed = f.flag("row_remap_failed");
  g.remapped_rows_corrected = f.count("remapped_rows_corrected");
  g.remapped_rows_uncorrected = f.count("remapped_rows_uncorrected");
  if (f.find("clock_event_reasons") != nullptr) {
    try {
      g.clock_event_reasons = clock_event_mask(f.texts("clock_event_reasons"));
    } catch (const InvalidInput& e) {
      f.fail("clock_event_reasons", e.what());
    }
  }
  g.temperature_c = small(f, "temperature_c");
  g.pcie_gen_current = small_count(f, "pcie_gen_current");
  g.pcie_gen_max_link = small_count(f, "pcie_gen_max_link");
  g.pcie_gen_max_gpu = small_count(f, "pcie_gen_max_gpu");
  g.pcie_width_current = small_count(f, "pcie_width_current");
  g.pcie_width_max = small_count(f, "pcie_width_max");
  g.nvlink_active = small_count(f, "nvlink_active");
  g.nvlink_supported = small_count(f, "nvlink_supported");
  g.nvlink_peer_bus_ids = f.texts("nvlink_peer_bus_ids");
  g.nvlink_switch_links = small_count(f, "nvlink_switch_links");
  g.foreign_processes = small_count(f, "foreign_processes");
  g.foreign_memory_mib = f.count("foreign_memory_mib");
  g.recovery_action = small_count(f, "recovery_action");
  g.read_errors = f.texts("read_errors");
  if (const auto probe = f.object("probe")) {
    g.responsive = probe->flag("responsive");
    g.probe_error = probe->text("error");
    g.probe_ms = probe->number("ms").value_or(0.0);
  }
  return g;
}

Json library_json(const RuntimeLibraryReading& l) {
  Json j = Json::object();
  put(j, "name", l.name);
  put(j, "soname", l.soname);
  put(j, "path", l.path);
  put(j, "version", l.version);
  put(j, "problem", l.problem);
  return j;
}

RuntimeLibraryReading library_of(const Fields& f) {
  RuntimeLibraryReading l;
  l.name = f.text("name");
  l.soname = f.text("soname");
  l.path = f.text("path");
  l.version = f.text("version");
  l.problem = f.text("problem");
  return l;
}

}  // namespace

std::vector<std::string> clock_event_names(std::uint64_t mask) {
  std::vector<std::string> names;
  for (const auto& [bit, name] : kClockEventNames) {
    if (mask & bit) {
      names.emplace_back(name);
      mask &= ~bit;
    }
  }
  for (int b = 0; b < 64; ++b) {
    const std::uint64_t bit = std::uint64_t{1} << b;
    if ((mask & bit) == 0) continue;
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(bit));
    names.emplace_back(text);
  }
  return names;
}

std::uint64_t clock_event_mask(const std::vector<std::string>& names) {
  std::uint64_t mask = 0;
  for (const std::string& name : names) {
    bool known = false;
    for (const auto& [bit, known_name] : kClockEventNames) {
      if (name == known_name) {
        mask |= bit;
        known = true;
      }
    }
    if (known) continue;
    char* end = nullptr;
    const unsigned long long bit = std::strtoull(name.c_str(), &end, 16);
    if (name.compare(0, 2, "0x") != 0 || name.size() < 3 || *end != '\0') {
      std::string list;
      for (const auto& entry : kClockEventNames)
        list += (list.empty() ? "" : ", ") + std::string(entry.second);
      throw InvalidInput("unknown clock event reason \"" + name + "\" (known: " + list +
                         ", or a bit as hex)");
    }
    mask |= bit;
  }
  return mask;
}

void to_json(nlohmann::ordered_json& j, const InventoryReadings& readings) {
  const NodeReading& n = readings.node;
  j = Json::object();
  put(j, "expect_gpus", readings.expect.gpus);
  put(j, "driver_version", n.driver_version);
  if (n.cuda_driver_version) j["cuda_driver_version"] = cuda_version_json(n.cuda_driver_version);
  if (n.cuda_runtime_version) {
    j["cuda_runtime_version"] = cuda_version_json(n.cuda_runtime_version);
  }
  if (n.cuda_driver_required) {
    j["cuda_driver_required"] = cuda_version_json(n.cuda_driver_required);
  }
  put(j, "cuda_driver_branch_required", n.cuda_driver_branch_required);
  j["nvml_loaded"] = n.nvml_loaded;
  put(j, "nvml_error", n.nvml_error);
  j["cuda_device_count"] = n.cuda_device_count;
  put(j, "cuda_error", n.cuda_error);
  put(j, "pci_gpu_count", n.pci_gpu_count);
  put(j, "nccl_version", n.nccl_version);
  if (!n.libraries.empty()) {
    Json libraries = Json::array();
    for (const auto& l : n.libraries) libraries.push_back(library_json(l));
    j["libraries"] = std::move(libraries);
  }
  Json gpus = Json::array();
  for (const auto& g : n.gpus) gpus.push_back(gpu_json(g));
  j["gpus"] = std::move(gpus);
}

void from_json(const nlohmann::ordered_json& j, InventoryReadings& readings) {
  const Fields f(j, "");
  readings = InventoryReadings{};
  NodeReading& n = readings.node;
  readings.expect.gpus = small_count(f, "expect_gpus");
  n.driver_version = f.text("driver_version");
  n.cuda_driver_version = cuda_version_of(f, "cuda_driver_version");
  n.cuda_runtime_version = cuda_version_of(f, "cuda_runtime_version");
  n.cuda_driver_required = cuda_version_of(f, "cuda_driver_required");
  n.cuda_driver_branch_required = f.text("cuda_driver_branch_required");
  n.nvml_error = f.text("nvml_error");
  // Absent: NVML worked unless an error says otherwise.
  n.nvml_loaded = f.flag("nvml_loaded").value_or(n.nvml_error.empty());
  n.cuda_error = f.text("cuda_error");
  n.pci_gpu_count = small_count(f, "pci_gpu_count");
  n.nccl_version = f.text("nccl_version");
  const auto libraries = f.objects("libraries");
  for (const Fields& l : libraries) n.libraries.push_back(library_of(l));
  const auto gpus = f.objects("gpus");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    n.gpus.push_back(gpu_of(gpus[i], static_cast<int>(i)));
  }
  // Absent: CUDA sees exactly the GPUs given an ordinal.
  int seen = 0;
  for (const auto& g : n.gpus) seen += g.cuda_ordinal >= 0 ? 1 : 0;
  n.cuda_device_count = small_count(f, "cuda_device_count").value_or(seen);
}

}  // namespace preflight
