// Reading the error counters at both ends of a load check (counters.hpp). NVML through the node
// backend, bounded like an engine call; sysfs with small bounded reads. Nothing here judges.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <sstream>

#include "checks/common/call_bounded.hpp"
#include "checks/common/counters.hpp"
#include "checks/common/entities.hpp"
#include "checks/common/pci_link.hpp"
#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Values = std::map<std::pair<std::string, std::string>, std::uint64_t>;

// How long one GPU's NVML counters may take: they are a few calls answered from the driver's
// memory; one that blocks is a stuck driver, which the check's own work will meet too.
constexpr std::chrono::milliseconds kNvmlBudget{1000};
// sysfs counter files are a line or a dozen; anything longer is not one.
constexpr std::size_t kMaxSysfsFile = 4096;
// A state file of the counters: a line per counter, a few hundred on the largest node.
constexpr std::size_t kMaxStateBytes = 1 << 20;
// Enough for every RDMA device of a node (a p5 has 32); more are ignored, and said.
constexpr std::size_t kMaxRdmaDevices = 64;

std::string sysfs_root() {
  const char* root = std::getenv("PREFLIGHT_SYSFS_ROOT");
  return root != nullptr && *root != '\0' ? root : "/sys";
}

// The file's text, at most kMaxSysfsFile bytes (model/bounded_input.hpp, as the events check
// reads EDAC counts); nullopt when it cannot be read.
std::optional<std::string> read_small(const std::string& path) {
  try {
    return read_bounded_file(path, kMaxSysfsFile);
  } catch (const InvalidInput&) {
    return std::nullopt;
  }
}

std::optional<std::uint64_t> read_number(const std::string& path) {
  const auto text = read_small(path);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text->c_str(), &end, 10);
  if (end == text->c_str()) return std::nullopt;
  return value;
}

std::vector<std::string> list_dir(const std::string& path, std::size_t most) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(name);
    if (names.size() >= most) break;
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

// The RDMA port counters read (sysfs counters/ and hw_counters/). Which of them are judged is
// counter_judge.cpp's; the rest are recorded for the operator.
constexpr std::array<const char*, 7> kPortCounters = {
    "symbol_error",      "link_error_recovery",         "link_downed",
    "port_rcv_errors",   "local_link_integrity_errors", "excessive_buffer_overrun_errors",
    "port_xmit_discards"};
constexpr std::array<const char*, 3> kHwCounters = {"out_of_sequence", "packet_seq_err",
                                                    "local_ack_timeout_err"};

void read_rnic(Values& values, std::vector<std::string>& missing) {
  const std::string root = sysfs_root() + "/class/infiniband";
  for (const std::string& device : list_dir(root, kMaxRdmaDevices)) {
    for (const std::string& port : list_dir(root + "/" + device + "/ports", 16)) {
      const int number = std::atoi(port.c_str());
      if (number <= 0) continue;
      const std::string entity = rdma_port_entity(device, number);
      const std::string base = root + "/" + device + "/ports/" + port;
      bool any = false;
      for (const char* name : kPortCounters) {
        if (auto v = read_number(base + "/counters/" + name)) {
          values[{entity, name}] = *v;
          any = true;
        }
      }
      for (const char* name : kHwCounters) {
        if (auto v = read_number(base + "/hw_counters/" + name)) values[{entity, name}] = *v;
      }
      if (!any) missing.push_back(entity + ": port error counters: not in sysfs");
    }
  }
}

void read_aer(const GpuReading& gpu, Values& values, std::vector<std::string>& missing) {
  const std::string name = pci_sysfs_name(gpu.pci_bus_id);
  const std::string entity = gpu_entity(gpu.index);
  if (name.empty()) {
    missing.push_back(entity + ": PCIe AER counts: no PCI address");
    return;
  }
  const std::string base = sysfs_root() + "/bus/pci/devices/" + name + "/";
  bool any = false;
  for (const auto& [file, counter] :
       std::array<std::pair<const char*, const char*>, 3>{{{"aer_dev_correctable", "aer_corrected"},
                                                           {"aer_dev_nonfatal", "aer_nonfatal"},
                                                           {"aer_dev_fatal", "aer_fatal"}}}) {
    const auto text = read_small(base + file);
    if (!text) continue;
    if (const auto total = aer_total(*text)) {
      values[{entity, counter}] = *total;
      any = true;
    }
  }
  if (!any) missing.push_back(entity + ": PCIe AER counts: not in sysfs (" + name + ")");
}

void read_gpu(CheckContext& ctx, const GpuReading& gpu, const std::vector<CounterFamily>& families,
              Values& values, std::vector<std::string>& missing) {
  const auto wants = [&](CounterFamily f) {
    return std::find(families.begin(), families.end(), f) != families.end();
  };
  const std::string entity = gpu_entity(gpu.index);
  if (wants(CounterFamily::gpu_pcie)) read_aer(gpu, values, missing);
  NodeBackend* backend = ctx.engines.node;
  if (backend == nullptr) return;
  std::optional<std::optional<GpuErrorCounters>> read;
  try {
    read = call_bounded<std::optional<GpuErrorCounters>>(
        ctx, SteadyClock::now() + kNvmlBudget,
        [backend, gpu] { return backend->error_counters(gpu); });
  } catch (const std::exception& e) {
    missing.push_back(entity + ": NVML error counters: " + e.what());
    return;
  }
  if (!read) {
    missing.push_back(entity + ": NVML error counters did not answer within 1 s");
    return;
  }
  if (!*read) {
    missing.push_back(entity + ": NVML error counters: NVML not usable");
    return;
  }
  const GpuErrorCounters& c = **read;
  const auto put = [&](const char* name, const std::optional<std::uint64_t>& v) {
    if (v) values[{entity, name}] = *v;
  };
  if (wants(CounterFamily::gpu_ecc)) {
    put("ecc_corrected_volatile", c.ecc_corrected_volatile);
    put("ecc_uncorrected_volatile", c.ecc_uncorrected_volatile);
    if (!c.ecc_corrected_volatile && !c.ecc_uncorrected_volatile) {
      missing.push_back(entity + ": ECC counts: not supported (ECC off?)");
    }
  }
  if (wants(CounterFamily::gpu_pcie)) {
    put("pcie_replay", c.pcie_replay);
    if (!c.pcie_replay) missing.push_back(entity + ": PCIe replay counter: not supported");
  }
  if (wants(CounterFamily::gpu_nvlink)) {
    put("nvlink_replay", c.nvlink_replay);
    put("nvlink_recovery", c.nvlink_recovery);
    put("nvlink_crc_flit", c.nvlink_crc_flit);
    put("nvlink_crc_data", c.nvlink_crc_data);
    if (!c.nvlink_replay && !c.nvlink_recovery && !c.nvlink_crc_flit && !c.nvlink_crc_data) {
      missing.push_back(entity + ": NVLink error counters: not supported");
    }
  }
  for (const std::string& p : c.problems) missing.push_back(entity + ": " + p);
}

Values read_all(CheckContext& ctx, const std::vector<CounterFamily>& families,
                std::vector<std::string>& missing) {
  Values values;
  const bool gpu_families = std::any_of(families.begin(), families.end(),
                                        [](CounterFamily f) { return f != CounterFamily::rnic; });
  if (gpu_families && ctx.node != nullptr) {
    for (const GpuReading& gpu : ctx.node->gpus) {
      if (ctx.cancelled()) break;
      read_gpu(ctx, gpu, families, values, missing);
    }
  }
  if (std::find(families.begin(), families.end(), CounterFamily::rnic) != families.end()) {
    read_rnic(values, missing);
  }
  return values;
}

// How long the last drain waits for an event already on its way; a drain that does not return
// within kNvmlBudget is a stuck driver.
constexpr std::chrono::milliseconds kEventWait{10};

// The driver's events pending now, counted into `window` as `during`. Bounded like the NVML
// counters; a failure to read them is said once.
void drain_events(CheckContext& ctx, std::chrono::milliseconds wait, const char* during,
                  CounterWindow& window) {
  const std::shared_ptr<GpuEventSource> source = ctx.gpu_events;
  if (!source) return;
  std::optional<std::vector<GpuEvent>> events;
  try {
    events = call_bounded<std::vector<GpuEvent>>(ctx, SteadyClock::now() + kNvmlBudget,
                                                 [source, wait] { return source->drain(wait); });
  } catch (const std::exception& e) {
    window.not_available.push_back(std::string("Xid events: ") + e.what());
    return;
  }
  if (!events) {
    window.not_available.push_back("Xid events: the driver did not answer within 1 s");
    return;
  }
  for (const GpuEvent& e : *events) {
    if (e.type == "wait_error") {
      window.not_available.push_back("Xid events: " + e.detail);
      continue;
    }
    if (e.type != "xid") continue;
    const std::string entity = e.gpu_index >= 0 ? gpu_entity(e.gpu_index) : "gpu?";
    const int xid = static_cast<int>(std::min<std::uint64_t>(e.data, 1'000'000));
    auto it = std::find_if(window.xids.begin(), window.xids.end(), [&](const CounterXid& x) {
      return x.entity == entity && x.xid == xid && x.during == during;
    });
    if (it == window.xids.end()) {
      window.xids.push_back({entity, xid, during, 0});
      it = window.xids.end() - 1;
    }
    ++it->count;
  }
}

// The file in --state-dir that holds a check's counters at the end of its last healthy run.
std::string state_file_of(const std::string& check) {
  return "counters-" + check;
}

// The values that file holds: "entity counter value" lines. A file that is missing, too large
// or not of that form is not trusted, and gives none (the first run after it sets it right).
std::map<std::pair<std::string, std::string>, std::uint64_t> read_previous(
    const std::string& state_dir, const std::string& check, std::vector<std::string>& missing) {
  std::map<std::pair<std::string, std::string>, std::uint64_t> values;
  if (state_dir.empty()) return values;
  const std::string path = state_dir + "/" + state_file_of(check);
  if (::access(path.c_str(), F_OK) != 0) return values;
  std::string text;
  try {
    text = read_bounded_file(path, kMaxStateBytes);
  } catch (const InvalidInput& e) {
    missing.push_back(std::string("previous run's counters: ") + e.what());
    return values;
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string entity;
    std::string counter;
    std::uint64_t value = 0;
    std::string rest;
    if (!(fields >> entity >> counter >> value) || (fields >> rest)) {
      missing.push_back("previous run's counters: " + path + ": not a counters file");
      return {};
    }
    values[{entity, counter}] = value;
  }
  return values;
}

// The counter each drill adds to (counter_fault_kinds).
const char* drilled_counter(std::string_view kind) {
  if (kind == "ecc-correctable-rise") return "ecc_corrected_volatile";
  if (kind == "ecc-uncorrectable-rise") return "ecc_uncorrected_volatile";
  if (kind == "pcie-replay-rise") return "pcie_replay";
  if (kind == "aer-corrected-rise") return "aer_corrected";
  if (kind == "aer-fatal-rise") return "aer_fatal";
  if (kind == "nvlink-crc-rise") return "nvlink_crc_flit";
  if (kind == "rnic-symbol-errors") return "symbol_error";
  if (kind == "rnic-link-downed") return "link_downed";
  return nullptr;
}

}  // namespace

std::optional<std::uint64_t> aer_total(std::string_view text) {
  std::optional<std::uint64_t> total;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.rfind("TOTAL_ERR_", 0) != 0) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos) continue;
    const std::string number(line.substr(space + 1));
    char* stop = nullptr;
    const unsigned long long v = std::strtoull(number.c_str(), &stop, 10);
    if (stop == number.c_str()) continue;
    total = total.value_or(0) + v;
  }
  return total;
}

CounterWatch::CounterWatch(CheckContext& ctx, std::string check,
                           std::vector<CounterFamily> families)
    : check_(std::move(check)), families_(std::move(families)), start_(SteadyClock::now()) {
  // Events since the previous check drained the stream: raised before this load, by the run.
  if (ctx.gpu_events) {
    window_.xid_events_read = true;
    for (const std::string& p : ctx.gpu_events->problems) window_.not_available.push_back(p);
    drain_events(ctx, std::chrono::milliseconds(0), "before", window_);
  }
  for (const auto& [key, value] : read_all(ctx, families_, window_.not_available)) {
    window_.values.push_back({key.first, key.second, value, std::nullopt, false, std::nullopt});
  }
  state_dir_ = ctx.state_dir;
  previous_ = read_previous(state_dir_, check_, window_.not_available);
}

CounterWindow CounterWatch::finish(CheckContext& ctx) {
  std::vector<std::string> ignored;  // what was missing is said once, from the first reading
  const Values after = read_all(ctx, families_, ignored);
  CounterWindow window = window_;
  window.seconds = std::chrono::duration<double>(SteadyClock::now() - start_).count();
  drain_events(ctx, kEventWait, "load", window);
  for (CounterValue& v : window.values) {
    const auto it = after.find({v.entity, v.counter});
    if (it != after.end()) v.after = it->second;
  }
  // Not structured bindings: C++17 lambdas cannot capture them (clang refuses, GCC allows).
  for (const auto& entry : after) {
    const std::pair<std::string, std::string>& key = entry.first;
    const bool known = std::any_of(window.values.begin(), window.values.end(), [&](const auto& v) {
      return v.entity == key.first && v.counter == key.second;
    });
    if (!known) {
      window.values.push_back(
          {key.first, key.second, std::nullopt, entry.second, false, std::nullopt});
    }
  }
  for (CounterValue& v : window.values) {
    const auto it = previous_.find({v.entity, v.counter});
    if (it != previous_.end()) v.previous_run = it->second;
  }
  // Only the drills this check owns: a counter two checks watch (ECC: gemm and hbm) is drilled
  // in one of them.
  for (const FaultKindSpec& kind : counter_fault_kinds(check_, families_)) {
    if (ctx.faults == nullptr) break;
    for (const InjectedFault* f : ctx.faults->of_kind(kind.kind)) {
      const char* counter = drilled_counter(f->kind);
      if (counter == nullptr) continue;
      const std::string entity = f->target.entity();
      const auto rise = static_cast<std::uint64_t>(f->number.value_or(1));
      auto it = std::find_if(window.values.begin(), window.values.end(), [&](const auto& v) {
        return v.entity == entity && v.counter == counter;
      });
      // A counter this node lacks is drilled from zero, so the drill runs anywhere.
      if (it == window.values.end() || !it->before || !it->after) {
        if (it != window.values.end()) window.values.erase(it);
        window.values.push_back({entity, counter, 0, rise, true, std::nullopt});
        continue;
      }
      *it->after += rise;
      it->injected = true;
    }
  }
  const bool drilled = std::any_of(window.values.begin(), window.values.end(),
                                   [](const CounterValue& v) { return v.injected; });
  if (!state_dir_.empty() && !drilled) {
    window.state_file = state_file_of(check_);
    for (const CounterValue& v : window.values) {
      if (v.after)
        window.state += v.entity + " " + v.counter + " " + std::to_string(*v.after) + "\n";
    }
  }
  return window;
}

}  // namespace preflight
