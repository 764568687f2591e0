#pragma once
// From kernel-log records to the events check's readings: which records count (the cursor, the
// window, a saved log whole), the events they hold grouped by kind and device, and the cursor
// kept in the state directory between runs (docs/checks/events.md, "Which events count").
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "checks/events/events_readings.hpp"
#include "checks/events/kernel_log.hpp"

namespace preflight {

// Where the live log is read and how this boot is told from the last: the kernel's files by
// default; tests point them at files of their own (PREFLIGHT_KMSG_PATH, PREFLIGHT_BOOT_ID_PATH,
// PREFLIGHT_SYSFS_ROOT).
struct KernelLogPaths {
  std::string kmsg = "/dev/kmsg";
  std::string boot_id = "/proc/sys/kernel/random/boot_id";
  std::string sysfs = "/sys";  // where the NICs' PCI addresses and EDAC's counts are read
  // The defaults, with the test seams' environment variables applied.
  static KernelLogPaths from_environment();
};

// The last record a healthy run (or an operator's `preflight acknowledge`) judged: records after
// it count in the next run of the same boot. Kept as "BOOT_ID SEQ\n" in DIR/kernel-log-cursor.
struct KernelLogCursor {
  std::string boot_id;
  std::uint64_t seq = 0;
};
inline constexpr const char* kCursorFile = "kernel-log-cursor";
std::optional<KernelLogCursor> parse_cursor(std::string_view text);  // nullopt: not a cursor
std::string cursor_text(const KernelLogCursor& cursor);

// Which records count.
struct CountingRule {
  enum class Mode { all, after_seq, since_usec } mode = Mode::all;
  std::uint64_t seq = 0;   // after_seq: records with a larger sequence number
  std::uint64_t usec = 0;  // since_usec: records logged at or after this time since boot
};

// The live log's rule for this run, and how readings name it ("cursor", "boot", "window"):
// after the cursor of this boot; this boot whole when the cursor is of another (the node
// rebooted); without a cursor the last `window_hours` before `now_usec` (since boot).
CountingRule live_counting_rule(const std::optional<KernelLogCursor>& cursor,
                                const std::string& boot_id, double window_hours,
                                std::uint64_t now_usec, std::string& counted);

class EventCollector {
 public:
  explicit EventCollector(CountingRule rule) : rule_(rule) {}
  // One record, in log order.
  void add(const LogRecord& record);
  // The groups, counts and sequence numbers gathered, into `out`.
  void finish(EventsReadings& out) const;

 private:
  bool counts(const LogRecord& record) const;

  CountingRule rule_;
  // Groups keyed by kind, device and Xid, in the order first seen.
  std::map<std::tuple<int, std::string, int>, std::size_t> index_;
  std::vector<EventGroup> groups_;
  bool truncated_ = false;
  std::string last_gpu_address_;    // the last address an NVRM line named
  std::set<std::string> ports_up_;  // network ports seen up: a later down is a flap
  std::uint64_t counted_ = 0;
  std::optional<std::uint64_t> first_seq_, last_seq_;
};

}  // namespace preflight
