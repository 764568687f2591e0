#pragma once
// Reading the kernel log, bounded: the live log (/dev/kmsg, one record per read, without
// blocking) or saved text (dmesg, `dmesg -T`, `journalctl -k`, syslog, or /dev/kmsg's own
// records), one record at a time to a callback. Neither a FIFO, a log of gigabytes nor binary
// garbage can hang or exhaust it: every read has a byte, record and time bound.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "preflight/engine/node_backend.hpp"  // SteadyClock

namespace preflight {

// One message of the kernel log. seq and usec are known for /dev/kmsg records (its sequence
// number and the microseconds since boot it was logged at), and usec for dmesg's "[  12.345]".
struct LogRecord {
  std::optional<std::uint64_t> seq;
  std::optional<std::uint64_t> usec;
  std::string_view text;  // the message, without its prefix; valid during the callback only
};

// The message of one line of saved text, in any of the formats above; nullopt for a blank line
// or a /dev/kmsg continuation line (" KEY=value"). Pure.
std::optional<LogRecord> parse_log_line(std::string_view line);

struct LogBounds {
  std::size_t max_bytes = std::size_t{64} << 20;  // a kernel ring buffer is at most 32 MiB
  std::size_t max_records = 2'000'000;
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
};

// How a read ended.
struct LogReadEnd {
  std::uint64_t records = 0;
  std::uint64_t lost = 0;  // /dev/kmsg records overwritten before they were read (EPIPE)
  bool bounded = false;    // stopped at a bound (bytes, records or time); the rest not read
  std::string bound;       // which: "64 MiB", "2000000 records", "its 0.5 s"
  std::string problem;     // the log could not be read at all: open or read error
};

using RecordSink = std::function<void(const LogRecord&)>;

// Every line of `text` that holds a message, in order.
LogReadEnd read_log_text(std::string_view text, const LogBounds& bounds, const RecordSink& sink);

// The live log at `path` (/dev/kmsg; a test passes a file of its records): read from its first
// record to its end without blocking. A character device is read a record per read(2), as the
// kernel hands them out; anything else is read as saved text. problem is set, and nothing
// read, when it cannot be opened (not root, dmesg_restrict, a container without it).
LogReadEnd read_live_log(const std::string& path, const LogBounds& bounds, const RecordSink& sink);

}  // namespace preflight
