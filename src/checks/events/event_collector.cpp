#include "checks/events/event_collector.hpp"

#include <cctype>
#include <cstdlib>

namespace preflight {

namespace {

// A kernel message for the verdict: printable ASCII, anything else (control bytes, bytes of a
// character the cut at kMaxEventText split, binary garbage) as '?', so it is always valid JSON
// text and one line.
std::string plain_text(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e) c = '?';
  }
  return out;
}

}  // namespace

KernelLogPaths KernelLogPaths::from_environment() {
  KernelLogPaths paths;
  if (const char* kmsg = std::getenv("PREFLIGHT_KMSG_PATH"); kmsg != nullptr && *kmsg != '\0') {
    paths.kmsg = kmsg;
  }
  if (const char* boot = std::getenv("PREFLIGHT_BOOT_ID_PATH"); boot != nullptr && *boot != '\0') {
    paths.boot_id = boot;
  }
  if (const char* sysfs = std::getenv("PREFLIGHT_SYSFS_ROOT"); sysfs != nullptr && *sysfs != '\0') {
    paths.sysfs = sysfs;
  }
  return paths;
}

std::optional<KernelLogCursor> parse_cursor(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())) != 0) {
    text.remove_suffix(1);
  }
  const std::size_t space = text.find(' ');
  if (space == 0 || space == std::string_view::npos || space > 64) return std::nullopt;
  KernelLogCursor cursor;
  cursor.boot_id = std::string(text.substr(0, space));
  const std::string_view number = text.substr(space + 1);
  if (number.empty() || number.size() > 19) return std::nullopt;
  for (char c : number) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return std::nullopt;
    cursor.seq = cursor.seq * 10 + static_cast<std::uint64_t>(c - '0');
  }
  for (char c : cursor.boot_id) {
    if (std::isxdigit(static_cast<unsigned char>(c)) == 0 && c != '-') return std::nullopt;
  }
  return cursor;
}

std::string cursor_text(const KernelLogCursor& cursor) {
  return cursor.boot_id + " " + std::to_string(cursor.seq) + "\n";
}

CountingRule live_counting_rule(const std::optional<KernelLogCursor>& cursor,
                                const std::string& boot_id, double window_hours,
                                std::uint64_t now_usec, std::string& counted) {
  CountingRule rule;
  if (cursor && !boot_id.empty() && cursor->boot_id == boot_id) {
    rule.mode = CountingRule::Mode::after_seq;
    rule.seq = cursor->seq;
    counted = "cursor";
  } else if (cursor && !boot_id.empty()) {
    // The cursor is of an earlier boot: everything this boot logged is newer than it.
    rule.mode = CountingRule::Mode::all;
    counted = "boot";
  } else {
    const double span = window_hours * 3600.0 * 1e6;
    rule.mode = CountingRule::Mode::since_usec;
    rule.usec =
        span >= static_cast<double>(now_usec) ? 0 : now_usec - static_cast<std::uint64_t>(span);
    counted = "window";
  }
  return rule;
}

bool EventCollector::counts(const LogRecord& record) const {
  switch (rule_.mode) {
    case CountingRule::Mode::all:
      return true;
    case CountingRule::Mode::after_seq:
      return !record.seq || *record.seq > rule_.seq;
    case CountingRule::Mode::since_usec:
      return !record.usec || *record.usec >= rule_.usec;
  }
  return true;
}

void EventCollector::add(const LogRecord& record) {
  if (record.seq) {
    if (!first_seq_) first_seq_ = record.seq;
    last_seq_ = record.seq;
  }
  const bool counted = counts(record);
  if (counted) ++counted_;
  auto event = recognise_event(record.text);
  // The driver may split "The NVIDIA GPU 0000:b3:00.0 ... has fallen off the bus" over lines,
  // the address on the first: the last NVRM line's address names the GPU.
  if (record.text.rfind("NVRM:", 0) == 0 && (!event || event->device.empty())) {
    const std::string address = normalize_pci_address(find_first_pci_address(record.text), false);
    if (event && event->kind == EventKind::xid) {
      event->device = last_gpu_address_;
    } else if (!address.empty()) {
      last_gpu_address_ = address;
    }
  }
  if (!event) return;
  // A port's first "Link down" is its bring-up at boot; only a down after an up is a flap. The
  // state follows the whole log read, counted or not.
  if (event->kind == EventKind::link_up) {
    ports_up_.insert(event->device);
    return;
  }
  if (event->kind == EventKind::link_down && ports_up_.erase(event->device) == 0) return;
  if (!counted) return;
  const auto key = std::make_tuple(static_cast<int>(event->kind), event->device, event->xid);
  auto it = index_.find(key);
  if (it == index_.end()) {
    if (groups_.size() >= kMaxEventGroups) {
      truncated_ = true;
      return;
    }
    EventGroup g;
    g.kind = event->kind;
    g.xid = event->xid;
    g.device = event->device;
    g.first_seq = record.seq;
    if (record.usec) g.first_s = static_cast<double>(*record.usec) / 1e6;
    g.text = plain_text(record.text.substr(0, kMaxEventText));
    it = index_.emplace(key, groups_.size()).first;
    groups_.push_back(std::move(g));
  }
  EventGroup& g = groups_[it->second];
  g.count += event->count;
  g.last_seq = record.seq;
  if (record.usec) g.last_s = static_cast<double>(*record.usec) / 1e6;
}

void EventCollector::finish(EventsReadings& out) const {
  out.counted_records = counted_;
  out.last_seq = last_seq_;
  out.events = groups_;
  out.events_truncated = truncated_;
  // The cursor's next record is gone from the ring buffer: what lay between was never read.
  if (rule_.mode == CountingRule::Mode::after_seq && first_seq_ && *first_seq_ > rule_.seq + 1) {
    out.missed = *first_seq_ - rule_.seq - 1;
  }
}

}  // namespace preflight
