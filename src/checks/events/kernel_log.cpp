#include "checks/events/kernel_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <vector>

#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

bool all_digits(std::string_view s) {
  if (s.empty() || s.size() > 19) return false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
  }
  return true;
}

std::uint64_t to_number(std::string_view s) {
  std::uint64_t v = 0;
  for (char c : s) v = v * 10 + static_cast<std::uint64_t>(c - '0');
  return v;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

// "6,1234,5678901,-;text" (/dev/kmsg: priority, sequence, microseconds since boot, flags).
std::optional<LogRecord> kmsg_record(std::string_view line) {
  const std::size_t semi = line.find(';');
  if (semi == std::string_view::npos || semi > 64) return std::nullopt;
  std::string_view head = line.substr(0, semi);
  std::string_view fields[4];
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = head.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    fields[i] = head.substr(0, comma);
    head.remove_prefix(comma + 1);
  }
  fields[3] = head;  // flags, and any fields a newer kernel adds
  if (!all_digits(fields[0]) || !all_digits(fields[1]) || !all_digits(fields[2])) {
    return std::nullopt;
  }
  LogRecord r;
  r.seq = to_number(fields[1]);
  r.usec = to_number(fields[2]);
  r.text = line.substr(semi + 1);
  return r;
}

// "[  123.456789] text" -> usec 123456789; "[Tue Nov 28 12:00:00 2026] text" (dmesg -T) -> no
// usec. The bracket must close within the first 40 characters.
std::optional<LogRecord> bracketed(std::string_view line) {
  if (line.empty() || line.front() != '[') return std::nullopt;
  const std::size_t close = line.find(']');
  if (close == std::string_view::npos || close > 40) return std::nullopt;
  LogRecord r;
  const std::string_view stamp = trim(line.substr(1, close - 1));
  const std::size_t dot = stamp.find('.');
  if (dot != std::string_view::npos && all_digits(stamp.substr(0, dot)) &&
      all_digits(stamp.substr(dot + 1)) && stamp.size() - dot - 1 <= 9) {
    std::string_view frac = stamp.substr(dot + 1);
    std::uint64_t micro = 0;
    for (std::size_t i = 0; i < 6; ++i) {
      micro = micro * 10 + (i < frac.size() ? static_cast<std::uint64_t>(frac[i] - '0') : 0);
    }
    r.usec = to_number(stamp.substr(0, dot)) * 1'000'000 + micro;
  }
  r.text = trim(line.substr(close + 1));
  return r;
}

}  // namespace

std::optional<LogRecord> parse_log_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // A /dev/kmsg continuation line carries a record's dictionary (" SUBSYSTEM=pci").
  if (!line.empty() && line.front() == ' ' && line.find('=') != std::string_view::npos &&
      line.find(':') == std::string_view::npos) {
    return std::nullopt;
  }
  if (trim(line).empty()) return std::nullopt;
  if (auto r = kmsg_record(line)) return r;
  std::string_view rest = trim(line);
  // dmesg -r: "<6>[    1.0] text".
  if (rest.size() > 2 && rest.front() == '<') {
    const std::size_t close = rest.find('>');
    if (close != std::string_view::npos && close < 6 && all_digits(rest.substr(1, close - 1))) {
      rest = trim(rest.substr(close + 1));
    }
  }
  // dmesg -x: "kern  :warn  : [    1.0] text".
  if (rest.rfind("kern", 0) == 0) {
    const std::size_t second = rest.find(':', rest.find(':') + 1);
    if (second != std::string_view::npos && second < 20) rest = trim(rest.substr(second + 1));
  }
  if (auto r = bracketed(rest)) return r;
  // journalctl -k / syslog: "Nov 28 12:00:00 host kernel: text", ISO-8601 stamps too. The
  // message may carry printk's own "[  12.3]" after it.
  const std::size_t kernel = rest.find(" kernel: ");
  if (kernel != std::string_view::npos && kernel < 120) {
    const std::string_view message = trim(rest.substr(kernel + 9));
    if (auto r = bracketed(message)) return r;
    LogRecord r;
    r.text = message;
    return r;
  }
  LogRecord r;
  r.text = rest;
  return r;
}

LogReadEnd read_log_text(std::string_view text, const LogBounds& bounds, const RecordSink& sink) {
  LogReadEnd end;
  if (text.size() > bounds.max_bytes) {
    text = text.substr(0, bounds.max_bytes);
    end.bounded = true;
    end.bound = std::to_string(bounds.max_bytes >> 20) + " MiB";
  }
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    const auto record = parse_log_line(line);
    if (!record) continue;
    if (end.records >= bounds.max_records) {
      end.bounded = true;
      end.bound = std::to_string(bounds.max_records) + " records";
      break;
    }
    // The clock is read once per thousand records: cheap, and a huge log still stops in time.
    if (end.records % 1024 == 0 && SteadyClock::now() >= bounds.deadline) {
      end.bounded = true;
      end.bound = "its time";
      break;
    }
    ++end.records;
    sink(*record);
  }
  return end;
}

LogReadEnd read_live_log(const std::string& path, const LogBounds& bounds, const RecordSink& sink) {
  LogReadEnd end;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    end.problem = path + ": " + std::strerror(errno);
    return end;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode)) {
    // A saved file of records (a test's stand-in for /dev/kmsg); a FIFO or directory is refused
    // by the bounded reader.
    ::close(fd);
    try {
      const std::string text = read_bounded_file(path, bounds.max_bytes);
      return read_log_text(text, bounds, sink);
    } catch (const InvalidInput& e) {
      end.problem = e.what();
      return end;
    }
  }
  // /dev/kmsg hands out one record per read; EAGAIN at its end, EPIPE where records were
  // overwritten since the last read (the next read returns the oldest one still held).
  std::vector<char> buffer(16384);
  std::size_t bytes = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EPIPE) {
        ++end.lost;
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINVAL) continue;  // a record larger than the buffer: skipped
      if (end.records == 0) end.problem = path + ": " + std::strerror(errno);
      break;
    }
    if (n == 0) break;
    bytes += static_cast<std::size_t>(n);
    std::string_view record(buffer.data(), static_cast<std::size_t>(n));
    const std::size_t nl = record.find('\n');  // continuation lines follow the first
    const auto parsed = parse_log_line(record.substr(0, nl));
    if (parsed) {
      ++end.records;
      sink(*parsed);
    }
    if (bytes >= bounds.max_bytes || end.records >= bounds.max_records ||
        (end.records % 1024 == 0 && SteadyClock::now() >= bounds.deadline)) {
      end.bounded = true;
      end.bound = bytes >= bounds.max_bytes ? std::to_string(bounds.max_bytes >> 20) + " MiB"
                  : end.records >= bounds.max_records
                      ? std::to_string(bounds.max_records) + " records"
                      : "its time";
      break;
    }
  }
  ::close(fd);
  return end;
}

}  // namespace preflight
