// Reading a node's history (history.hpp, read_history): its earlier verdict files, each read
// with the bounds of `preflight judge`, and never trusted blindly. A file that is not this
// node's own measurement is skipped with a note, so that neither a drill, another node's
// verdict copied in, nor a verdict judged again with other limits can steer the judgement.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <utility>

#include "learned/history.hpp"
#include "learned/history_detail.hpp"
#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"
#include "report/verdict_reader.hpp"

namespace preflight {

namespace history_detail {

namespace {

// The digits text[at, at + count) as a number; nullopt when any is not a digit.
std::optional<int> history_digits(const std::string& text, std::size_t at, std::size_t count) {
  if (at + count > text.size()) return std::nullopt;
  int value = 0;
  for (std::size_t i = at; i < at + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

bool history_leap_year(int year) {
  return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
}

int history_days_in_month(int year, int month) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && history_leap_year(year) ? 29 : days[month - 1];
}

}  // namespace

std::optional<double> parse_utc_time(const std::string& text) {
  // YYYY-MM-DDTHH:MM:SS, then an optional fraction, then Z and nothing more.
  if (text.size() < 20 || text.size() > 40) return std::nullopt;
  const char* separators = "--T::";
  const std::size_t separator_at[] = {4, 7, 10, 13, 16};
  for (int i = 0; i < 5; ++i) {
    if (text[separator_at[i]] != separators[i]) return std::nullopt;
  }
  const auto year = history_digits(text, 0, 4);
  const auto month = history_digits(text, 5, 2);
  const auto day = history_digits(text, 8, 2);
  const auto hour = history_digits(text, 11, 2);
  const auto minute = history_digits(text, 14, 2);
  const auto second = history_digits(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second) return std::nullopt;
  if (*year < 1970 || *month < 1 || *month > 12 || *day < 1 ||
      *day > history_days_in_month(*year, *month) || *hour > 23 || *minute > 59 ||
      *second > 60) {  // 60: a leap second, as ISO-8601 allows
    return std::nullopt;
  }
  std::size_t at = 19;
  double fraction = 0;
  if (text[at] == '.') {
    ++at;
    double scale = 0.1;
    const std::size_t first_digit = at;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
      fraction += (text[at] - '0') * scale;
      scale /= 10;
      ++at;
    }
    if (at == first_digit) return std::nullopt;
  }
  if (at + 1 != text.size() || text[at] != 'Z') return std::nullopt;
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = *month - 1;
  tm.tm_mday = *day;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  const std::time_t seconds = timegm(&tm);
  if (seconds == static_cast<std::time_t>(-1)) return std::nullopt;
  return static_cast<double>(seconds) + fraction;
}

std::string shown_time(const Verdict& run) {
  return printable(run.started_at, 40);
}

}  // namespace history_detail

namespace {

// A note longer than this is cut (and ends in "..."): 200 characters at most, one line, as the
// notes go into the verdict and a finding's message.
constexpr std::size_t kHistoryNoteChars = 197;

// Where the time stamp of a Slurm hook's file name starts ("prolog-20261122T030405.1Z-fail.json":
// 7), so that the files of several hooks interleave by time; npos for a name without one.
std::size_t history_stamp_at(const std::string& name) {
  for (std::size_t at = 0; at + 9 <= name.size(); ++at) {
    if (at != 0 && name[at - 1] != '-') continue;
    if (history_detail::history_digits(name, at, 8) && name[at + 8] == 'T') return at;
  }
  return std::string::npos;
}

// The order "newest by name" follows: the stamp where the name has one, else the name itself.
bool history_name_older(const std::string& a, const std::string& b) {
  const std::size_t sa = history_stamp_at(a);
  const std::size_t sb = history_stamp_at(b);
  const std::string ka = sa == std::string::npos ? a : a.substr(sa);
  const std::string kb = sb == std::string::npos ? b : b.substr(sb);
  return ka != kb ? ka < kb : a < b;
}

bool history_json_name(const std::string& name) {
  const std::string suffix = ".json";
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string history_file_kind(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link, not followed";
  if (S_ISDIR(mode)) return "a directory, not a regular file";
  if (S_ISFIFO(mode)) return "a FIFO, not a regular file";
  if (S_ISSOCK(mode)) return "a socket, not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device, not a regular file";
  return "not a regular file";
}

// load_verdict_file's message names the whole path first; the note names the file already.
std::string history_why(std::string what, const std::string& path) {
  const std::string prefix = printable(path) + ": ";
  if (what.compare(0, prefix.size(), prefix) == 0) what.erase(0, prefix.size());
  return what;
}

struct HistoryNotes {
  std::vector<std::string>& out;
  void skip(const std::string& file, const std::string& why) const {
    out.push_back(printable(printable(file) + ": " + why, kHistoryNoteChars));
  }
};

// The .json names directly in `dir`; throws InvalidInput when it cannot be listed.
std::vector<std::string> history_json_names(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    throw InvalidInput("--history " + printable(dir) + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) throw InvalidInput("--history " + printable(dir) + ": not a directory");
  std::unique_ptr<DIR, int (*)(DIR*)> listing(::opendir(dir.c_str()), ::closedir);
  if (!listing) {
    throw InvalidInput("--history " + printable(dir) + ": cannot read: " + std::strerror(errno));
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(listing.get())) {
    const std::string name = entry->d_name;
    if (history_json_name(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end(), history_name_older);
  return names;
}

}  // namespace

History read_history(const std::string& dir, const std::string& host,
                     const HistoryOptions& options) {
  History history;
  history.dir = dir;
  const HistoryNotes notes{history.skipped};
  std::vector<std::string> names = history_json_names(dir);

  const std::size_t most = static_cast<std::size_t>(std::max(0, options.max_files));
  if (names.size() > most) {
    const std::size_t left_out = names.size() - most;
    notes.skip(names[left_out - 1], (left_out == 1 ? std::string("older than")
                                                   : "and " + std::to_string(left_out - 1) +
                                                         " older files: older than") +
                                        " the newest " + std::to_string(most) + " files read");
    names.erase(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(left_out));
  }

  struct Placed {
    HistoryRun run;
    double started = 0;
  };
  std::vector<Placed> placed;
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    // lstat: a link could point anywhere, at another node's verdict or at a device.
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      notes.skip(name, std::string("cannot stat: ") + std::strerror(errno));
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      notes.skip(name, history_file_kind(st.st_mode));
      continue;
    }
    Placed p;
    p.run.file = name;
    try {
      p.run.verdict = load_verdict_file(path);
    } catch (const std::exception& e) {
      notes.skip(name, history_why(e.what(), path));
      continue;
    }
    const Verdict& v = p.run.verdict;
    if (!host.empty() && v.host != host) {
      notes.skip(name, "another host's verdict (" + printable(v.host, 64) + ")");
      continue;
    }
    if (!v.injected_faults.empty()) {
      notes.skip(name, "a drill (--inject-fault " + printable(v.injected_faults.front(), 64) +
                           (v.injected_faults.size() > 1 ? ", ..." : "") + ")");
      continue;
    }
    if (v.rejudged) {
      notes.skip(name, "re-judged by preflight judge, not a measurement");
      continue;
    }
    const auto started = history_detail::parse_utc_time(v.started_at);
    if (!started) {
      notes.skip(name, "started_at \"" + printable(v.started_at, 40) + "\" is not a UTC time");
      continue;
    }
    p.started = *started;
    // A burn-in's passes each hold every check again; the history follows the reported pass
    // (the top level) only, and 200 burn-in verdicts must not hold all their passes.
    p.run.verdict.passes.clear();
    placed.push_back(std::move(p));
  }

  std::stable_sort(placed.begin(), placed.end(),
                   [](const Placed& a, const Placed& b) { return a.started < b.started; });
  for (std::size_t i = 0; i < placed.size(); ++i) {
    // One run saved twice (last.json next to its copy in history/) must count once.
    if (i > 0 && placed[i].run.verdict.started_at == history.runs.back().verdict.started_at) {
      notes.skip(placed[i].run.file, "the same run as " + printable(history.runs.back().file));
      continue;
    }
    history.runs.push_back(std::move(placed[i].run));
  }
  return history;
}

}  // namespace preflight
