#include "checks/events/events_check.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <ctime>
#include <filesystem>
#include <string>

#include "checks/common/fault_kinds.hpp"
#include "checks/common/judgement.hpp"
#include "checks/common/xid_findings.hpp"
#include "checks/events/events_findings.hpp"
#include "checks/events/events_thresholds.hpp"
#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

constexpr std::size_t kMaxLogBytes = std::size_t{64} << 20;

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// This boot's id; "" where the kernel does not say (the cursor then never matches a boot).
std::string read_boot_id(const std::string& path) {
  try {
    return trimmed(read_bounded_file(path, 256));
  } catch (const InvalidInput&) {
    return "";
  }
}

std::uint64_t monotonic_usec() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000;
}

// The RDMA devices and their PCI addresses (/sys/class/infiniband/NAME/device links to the PCI
// device), so a port's "Link down" names mlx5_2 rather than its address.
std::vector<DeviceEntity> rdma_devices(const std::string& sysfs) {
  std::vector<DeviceEntity> out;
  const std::string dir = sysfs + "/class/infiniband";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.' || out.size() >= 256) continue;
    char target[PATH_MAX];
    const ssize_t n = ::readlink((dir + "/" + name + "/device").c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    const std::string bus =
        normalize_pci_address(std::filesystem::path(target).filename().string());
    if (!bus.empty()) out.push_back({name, bus});
  }
  ::closedir(d);
  return out;
}

// EDAC's counts per memory controller (sysfs root `sysfs`); none where EDAC is not loaded.
std::vector<EdacCounts> edac_counts(const std::string& sysfs) {
  std::vector<EdacCounts> out;
  const std::string dir = sysfs + "/devices/system/edac/mc";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  const auto count = [](const std::string& path) -> std::optional<std::uint64_t> {
    try {
      const std::string text = trimmed(read_bounded_file(path, 64));
      if (text.empty() || text.size() > 19 ||
          text.find_first_not_of("0123456789") != std::string::npos) {
        return std::nullopt;
      }
      return std::stoull(text);
    } catch (const InvalidInput&) {
      return std::nullopt;
    }
  };
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("mc", 0) != 0 || name.size() < 3 || out.size() >= 64) continue;
    const auto ce = count(dir + "/" + name + "/ce_count");
    const auto ue = count(dir + "/" + name + "/ue_count");
    if (!ce && !ue) continue;
    out.push_back({name, ce.value_or(0), ue.value_or(0)});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const EdacCounts& a, const EdacCounts& b) { return a.controller < b.controller; });
  return out;
}

std::optional<double> uptime_seconds() {
  timespec ts{};
  if (::clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return std::nullopt;
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

std::vector<DeviceEntity> gpu_devices(const NodeReading& node) {
  std::vector<DeviceEntity> out;
  for (const GpuReading& g : node.gpus) {
    const std::string bus = normalize_pci_address(g.pci_bus_id);
    if (!bus.empty()) out.push_back({"gpu" + std::to_string(g.index), bus});
  }
  return out;
}

std::optional<KernelLogCursor> read_cursor(const std::string& state_dir) {
  if (state_dir.empty()) return std::nullopt;
  const std::string path = state_dir + "/" + kCursorFile;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return std::nullopt;
  // A cursor that is not one is not trusted: the window counts instead, as with none.
  try {
    return parse_cursor(read_bounded_file(path, 256));
  } catch (const InvalidInput&) {
    return std::nullopt;
  }
}

std::string summary_of(const EventsReadings& r, const std::vector<Finding>& findings) {
  if (!r.unreadable.empty()) return "kernel log not read: " + r.unreadable;
  std::string out = std::to_string(r.counted_records) + " of " + std::to_string(r.records) +
                    " kernel-log records judged (";
  if (r.counted == "file") {
    out += "--kernel-log, whole";
  } else if (r.counted == "cursor") {
    out += "since the last healthy run or acknowledgement";
  } else if (r.counted == "boot") {
    out += "this boot: rebooted since the last healthy run";
  } else {
    char hours[32];
    std::snprintf(hours, sizeof hours, "%g", r.window_hours.value_or(0));
    out += std::string("no cursor: the last ") + hours + " h";
  }
  out += ")";
  int shown = 0;
  for (const Finding& f : findings) {
    if (f.code == "KERNEL_LOG_INCOMPLETE") continue;
    out += shown == 0 ? ": " : "; ";
    if (++shown > 3) {
      out += "...";
      break;
    }
    out += f.code + " " + f.entity;
  }
  if (shown == 0) out += ", no hardware events";
  return out;
}

// Drills (--inject-fault): kernel messages of the faults, fed to the collector after the log as
// if the kernel had logged them, so the recogniser, the grouping and the judgement all run.
std::vector<std::string> drill_messages(const FaultPlan& faults, const NodeReading& node) {
  std::vector<std::string> out;
  for (const InjectedFault* f : faults.of_kind("xid")) {
    for (const GpuReading& g : node.gpus) {
      if (g.index != f->target.index) continue;
      const std::string bus = normalize_pci_address(g.pci_bus_id, false);
      out.push_back("NVRM: Xid (PCI:" + (bus.empty() ? std::string("0000:00:00") : bus) +
                    "): " + std::to_string(static_cast<int>(f->number.value_or(79))) +
                    ", pid=0, name=preflight, injected by --inject-fault");
    }
  }
  for (const InjectedFault* f : faults.of_kind("host-error")) {
    if (f->word == "mce") {
      out.push_back("mce: [Hardware Error]: CPU 0: Machine Check: 0 Bank 4: a600000000020408");
    } else if (f->word == "edac") {
      out.push_back("EDAC MC0: 1 UE memory read error on injected by --inject-fault");
    } else if (f->word == "aer-fatal") {
      out.push_back(
          "pcieport 0000:00:01.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction "
          "Layer, (Requester ID) injected by --inject-fault");
    } else if (f->word == "link-flap") {
      out.push_back("mlx5_core 0000:00:02.0 drill0: Link up");
      out.push_back("mlx5_core 0000:00:02.0 drill0: Link down");
    }
  }
  return out;
}

void add_drills(EventCollector& collector, const FaultPlan& faults, const NodeReading& node) {
  for (const std::string& message : drill_messages(faults, node)) {
    LogRecord r;
    r.text = message;
    collector.add(r);
  }
}

}  // namespace

std::vector<FaultKindSpec> events_fault_kinds() {
  FaultKindSpec xid = fault_kind(
      "xid", TargetType::gpu,
      "the kernel log holds Xid N (default 79) on the GPU's bus id, judged by the Xid table",
      {"XID_RESET_GPU", "XID_REBOOT", "XID_SERVICE", "XID_APPLICATION", "XID_INFORMATIONAL",
       "XID_UNLISTED"},
      FaultValue::optional_number, 1, 1000);
  xid.integer = true;
  FaultKindSpec host = fault_kind(
      "host-error", TargetType::check,
      "the kernel log holds a host error: mce (an uncorrected machine check), edac (an "
      "uncorrected memory error), aer-fatal (a fatal PCIe error on a root port), link-flap (a "
      "network port down after up)",
      {"HOST_MCE_UNCORRECTED", "HOST_EDAC_UNCORRECTED", "PCIE_AER_FATAL", "NIC_LINK_FLAP"},
      FaultValue::word);
  host.words = {"mce", "edac", "aer-fatal", "link-flap"};
  return {xid, host};
}

EventsCheck::EventsCheck(KernelLogPaths paths) : paths_(std::move(paths)) {
  info_.name = "events";
  info_.description =
      "kernel events the hardware already reported: Xid errors, GPUs fallen off the bus, machine "
      "checks, EDAC memory errors, PCIe AER errors, network ports going down";
  info_.needs_gpu = false;
  info_.budget = {std::chrono::seconds(2), std::chrono::seconds(2), std::chrono::seconds(2)};
  info_.findings = {&events_findings(), &xid_findings()};
  info_.thresholds = events_thresholds();
  info_.fault_kinds = events_fault_kinds();
  info_.options = {{kKernelLogFlag, "FILE",
                    "judge this saved kernel log (dmesg, journalctl -k or /dev/kmsg text) whole, "
                    "instead of the live log"}};
}

void EventsCheck::validate_options(const CheckOptions& options) const {
  if (const std::string* path = options.find(kKernelLogFlag)) {
    if (path->empty()) throw InvalidInput(std::string(kKernelLogFlag) + ": empty path");
    try {
      (void)read_bounded_file(*path, kMaxLogBytes);
    } catch (const InvalidInput& e) {
      throw InvalidInput(std::string(kKernelLogFlag) + ": " + e.what());
    }
  }
}

WorkPlan EventsCheck::plan_work(const WorkRequest& request) const {
  // A kernel ring buffer of 16 MiB (about 100,000 records) is read in about 0.1 s; 339 records
  // took 0.02 s here. The reader itself stops at kReadSeconds whatever the log holds, inside the
  // deadline the planner gives this model (1.5 x 0.1 s + 0.5 s, docs/plan.md).
  WorkPlan plan;
  plan.expected_s = kExpectedSeconds;
  plan.floor_s = kExpectedSeconds;
  const bool saved = request.options != nullptr && request.options->find(kKernelLogFlag);
  plan.coverage = saved ? "the saved kernel log, whole" : "the live kernel log (/dev/kmsg)";
  return plan;
}

CheckResult EventsCheck::run(CheckContext& ctx) const {
  CheckResult result;
  EventsReadings readings;
  readings.gpus = gpu_devices(*ctx.node);
  readings.nics = rdma_devices(paths_.sysfs);
  LogBounds bounds;
  bounds.deadline =
      std::min(ctx.deadline, SteadyClock::now() +
                                 std::chrono::milliseconds(static_cast<int>(kReadSeconds * 1000)));
  const std::string* saved = ctx.options->find(kKernelLogFlag);
  CountingRule rule;
  LogReadEnd end;
  if (saved != nullptr) {
    readings.source = "file";
    readings.path = *saved;
    readings.counted = "file";
    EventCollector collector(rule);
    // Read once more: validated before the run, it may have changed since (a failure here is
    // the check's error, not a healthy node).
    const std::string text = read_bounded_file(*saved, kMaxLogBytes);
    end = read_log_text(text, bounds, [&](const LogRecord& r) { collector.add(r); });
    add_drills(collector, *ctx.faults, *ctx.node);
    collector.finish(readings);
  } else {
    readings.source = "live";
    readings.path = paths_.kmsg;
    // This host's own counters: only with its live log, never beside a saved one.
    readings.edac = edac_counts(paths_.sysfs);
    if (!readings.edac.empty()) readings.uptime_s = uptime_seconds();
    readings.boot_id = read_boot_id(paths_.boot_id);
    const auto cursor = read_cursor(ctx.state_dir);
    if (cursor && cursor->boot_id == readings.boot_id) readings.cursor_seq = cursor->seq;
    readings.window_hours = ctx.thresholds->get("events.window_hours");
    rule = live_counting_rule(cursor, readings.boot_id, *readings.window_hours, monotonic_usec(),
                              readings.counted);
    EventCollector collector(rule);
    end = read_live_log(paths_.kmsg, bounds, [&](const LogRecord& r) { collector.add(r); });
    readings.unreadable = end.problem;
    add_drills(collector, *ctx.faults, *ctx.node);
    collector.finish(readings);
    // The next run counts from here, once this one is judged healthy.
    if (end.problem.empty() && readings.last_seq && !readings.boot_id.empty() &&
        !ctx.state_dir.empty()) {
      result.state_if_healthy.push_back(
          {kCursorFile, cursor_text({readings.boot_id, *readings.last_seq})});
    }
  }
  readings.records = end.records;
  readings.lost = end.lost;
  readings.bound = end.bound;
  std::vector<Finding> judged = judge_events(readings, *ctx.thresholds);
  result.summary = summary_of(readings, judged);
  add_judged(result.findings, std::move(judged));
  result.readings = readings;
  return result;
}

std::optional<std::vector<Finding>> EventsCheck::judge(const Readings& readings,
                                                       const Thresholds& thresholds) const {
  return judge_events(readings.get<EventsReadings>(), thresholds);
}

KernelLogCursor kernel_log_end(const KernelLogPaths& paths) {
  KernelLogCursor cursor;
  cursor.boot_id = read_boot_id(paths.boot_id);
  if (cursor.boot_id.empty()) {
    throw InvalidInput(paths.boot_id + ": cannot read this boot's id, so no cursor can be kept");
  }
  std::optional<std::uint64_t> last;
  LogBounds bounds;
  bounds.deadline = SteadyClock::now() + std::chrono::seconds(5);
  const LogReadEnd end = read_live_log(paths.kmsg, bounds, [&](const LogRecord& r) {
    if (r.seq) last = r.seq;
  });
  if (!end.problem.empty()) throw InvalidInput("cannot read the kernel log: " + end.problem);
  if (!last) throw InvalidInput(paths.kmsg + ": no record with a sequence number to acknowledge");
  cursor.seq = *last;
  return cursor;
}

}  // namespace preflight
