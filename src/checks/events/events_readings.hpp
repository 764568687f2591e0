#pragma once
// What the events check read (EventsReadings, the verdict's "readings" of the check,
// docs/checks/events.md): which log, which part of it counted and why, the GPUs and NICs its
// devices map to, and the events found, grouped by kind and device so that a flood of one message
// stays one bounded entry. judge_events makes every finding of the check from them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/events/kernel_events.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// The events of one kind on one device (and, for Xids, one code) in the part of the log that
// counted.
struct EventGroup {
  EventKind kind = EventKind::xid;
  int xid = 0;
  std::string device;  // normalize_pci_address form; "" for the host
  std::uint64_t count = 0;
  std::optional<std::uint64_t> first_seq;  // /dev/kmsg sequence numbers, when known
  std::optional<std::uint64_t> last_seq;
  std::optional<double> first_s;  // seconds since boot of the first and last, when known
  std::optional<double> last_s;
  std::string text;  // the first message, at most kMaxEventText characters
};
inline constexpr std::size_t kMaxEventText = 240;
inline constexpr std::size_t kMaxEventGroups = 256;

// A device the node has, by PCI address, and the entity findings name it by.
struct DeviceEntity {
  std::string entity;  // "gpu3", "mlx5_2"
  std::string bus_id;  // normalize_pci_address form, with the function: "0000:3b:00.0"
};

// A host memory controller's error counts since boot (EDAC sysfs: /sys/devices/system/edac/mc/
// mcN/ce_count and ue_count).
struct EdacCounts {
  std::string controller;  // "mc0"
  std::uint64_t corrected = 0;
  std::uint64_t uncorrected = 0;
};

struct EventsReadings {
  std::string source;  // "live" (/dev/kmsg) or "file" (--kernel-log)
  std::string path;
  std::string boot_id;  // the live log's boot (/proc/sys/kernel/random/boot_id)
  // Which records counted: "file" (the whole saved log), "cursor" (after the cursor of this
  // boot), "boot" (the node rebooted since the cursor: this boot's whole log), "window" (no
  // cursor: the last window_hours).
  std::string counted;
  std::optional<double> window_hours;
  std::optional<std::uint64_t> cursor_seq;
  std::uint64_t records = 0;          // read
  std::uint64_t counted_records = 0;  // of them, in the part that counted
  std::optional<std::uint64_t> last_seq;
  std::uint64_t lost = 0;  // overwritten before they were read
  // Records the cursor points past that the log no longer holds (its ring buffer wrapped).
  std::uint64_t missed = 0;
  std::string bound;       // non-empty: the reader stopped at this bound
  std::string unreadable;  // non-empty: the log could not be read; nothing else holds
  std::vector<DeviceEntity> gpus;
  std::vector<DeviceEntity> nics;
  std::vector<EdacCounts> edac;    // empty: no EDAC driver (or no sysfs) on this host
  std::optional<double> uptime_s;  // since boot, for the corrected errors' daily rate
  std::vector<EventGroup> events;  // at most kMaxEventGroups
  bool events_truncated = false;   // more groups than kept
};

// JSON (nlohmann's to_json/from_json); from_json throws InvalidInput naming the field.
void to_json(nlohmann::ordered_json& j, const EventsReadings& r);
void from_json(const nlohmann::ordered_json& j, EventsReadings& r);

// Every finding of the check, from the readings and events.* thresholds: one per event group
// (an Xid by the bucket of its row in xid_catalog; uncorrected machine checks, EDAC and fatal AER
// errors fail), counts of corrected errors against their limits, and notes for a log that
// could not be read or was read only in part. Pure.
std::vector<Finding> judge_events(const EventsReadings& readings, const Thresholds& thresholds);

}  // namespace preflight
