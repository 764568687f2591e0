#include "run/progress.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

#include "model/text_format.hpp"

namespace preflight {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::string tenths(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

}  // namespace

std::string progress_bar_line(double fraction, const std::string& what, double elapsed_s,
                              std::optional<double> eta_s, std::size_t width) {
  fraction = std::clamp(fraction, 0.0, 1.0);
  const std::string tail = "  elapsed " + format_clock(elapsed_s) +
                           (eta_s ? "  ETA " + format_clock(*eta_s) : std::string("  ETA -"));
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(fraction * 100.0));
  constexpr std::size_t kBar = 20;
  const auto filled = static_cast<std::size_t>(fraction * kBar + 0.5);
  std::string line = "[" + std::string(filled, '#') + std::string(kBar - filled, '-') + "] " +
                     percent + "  " + what;
  // The check name is what gives way on a narrow terminal; the times stay.
  if (line.size() + tail.size() > width && width > tail.size()) {
    line.resize(width - tail.size());
  }
  return line + tail;
}

ProgressDisplay::ProgressDisplay(ProgressOptions options) : options_(std::move(options)) {
  started_ = std::chrono::steady_clock::now();
  pass_started_ = started_;
  thread_ = std::thread([this] { loop(); });
}

ProgressDisplay::~ProgressDisplay() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  finish();
}

std::string ProgressDisplay::pass_label_locked() const {
  std::string label = "pass " + std::to_string(pass_);
  if (options_.request.repeat) label += "/" + std::to_string(*options_.request.repeat);
  return label;
}

std::optional<double> ProgressDisplay::eta_locked(double pass_elapsed_s) const {
  if (!options_.request.repeated()) return std::nullopt;
  EtaInput in;
  in.pass = std::max(pass_, 1);
  in.elapsed_s = seconds_since(started_);
  in.pass_elapsed_s = pass_elapsed_s;
  if (!pass_durations_.empty()) {
    in.mean_pass_s = std::accumulate(pass_durations_.begin(), pass_durations_.end(), 0.0) /
                     static_cast<double>(pass_durations_.size());
  }
  in.pass_budget_s = options_.pass_budget_s;
  in.repeat = options_.request.repeat;
  in.duration_s = options_.request.duration_s;
  return remaining_seconds(in);
}

void ProgressDisplay::print_line_locked(const std::string& line) {
  // On a terminal the bar is erased first, so the line stays and the bar is redrawn below it.
  if (options_.terminal && bar_shown_) std::fputs("\r\033[2K", options_.stream);
  bar_shown_ = false;
  std::fputs(line.c_str(), options_.stream);
  std::fputc('\n', options_.stream);
  std::fflush(options_.stream);
}

void ProgressDisplay::begin_pass(int index, const RunState* state) {
  std::lock_guard<std::mutex> lock(mutex_);
  pass_ = index;
  state_ = state;
  pass_started_ = std::chrono::steady_clock::now();
  reported_checks_ = 0;
  if (!options_.terminal) {
    print_line_locked("[" + format_clock(seconds_since(started_)) + "] " + pass_label_locked() +
                      " started");
  }
}

void ProgressDisplay::end_pass(int index, const Verdict& pass) {
  std::lock_guard<std::mutex> lock(mutex_);
  poll_locked(true);  // the last checks of the pass, in plain mode
  state_ = nullptr;
  pass_durations_.push_back(pass.duration_s);
  pass_ = index;
  std::string line = "[" + format_clock(seconds_since(started_)) + "] " + pass_label_locked() +
                     " " + upper(to_string(pass.verdict)) + " (" + tenths(pass.duration_s) + ")";
  if (!pass.reason.empty()) line += ": " + pass.reason;
  if (const auto eta = eta_locked(pass.duration_s); eta && *eta >= 1) {
    line += "; ETA " + format_clock(*eta);
  }
  print_line_locked(line);
}

void ProgressDisplay::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (options_.terminal && bar_shown_) {
    std::fputs("\r\033[2K", options_.stream);
    std::fflush(options_.stream);
  }
  bar_shown_ = false;
}

void ProgressDisplay::loop() {
  while (!stop_.load()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!finished_) poll_locked(false);
    }
    std::this_thread::sleep_for(options_.tick);
  }
}

void ProgressDisplay::poll_locked(bool force) {
  if (state_ == nullptr) return;
  const RunProgress p = state_->progress();
  if (!options_.terminal) {
    for (std::size_t i = 0; i < p.finished.size(); ++i) {
      if (!p.finished[i] || i < reported_checks_) continue;
      const CheckResult& r = *p.finished[i];
      const std::string summary =
          r.status == Status::skip && !r.skip_reason.empty() ? r.skip_reason : r.summary;
      print_line_locked("[" + format_clock(seconds_since(started_)) + "] " + pass_label_locked() +
                        "  " + padded(r.name, 10) + " " + padded(upper(to_string(r.status)), 5) +
                        " (" + tenths(r.duration_s) + ") " + summary);
      reported_checks_ = i + 1;
    }
    return;
  }
  (void)force;
  std::size_t done = 0;
  for (const auto& f : p.finished) done += f ? 1 : 0;
  std::string what = pass_label_locked() + "  ";
  if (p.running && *p.running < p.names.size()) {
    what += p.names[*p.running] + " (" + std::to_string(*p.running + 1) + "/" +
            std::to_string(p.names.size()) + ")";
  } else {
    what += done == 0 ? "discovery" : "between checks";
  }
  const double elapsed = seconds_since(started_);
  const std::optional<double> eta = eta_locked(seconds_since(pass_started_));
  double fraction = 0;
  if (eta) {
    fraction = elapsed + *eta > 0 ? elapsed / (elapsed + *eta) : 0;
  } else if (!p.names.empty()) {
    fraction = static_cast<double>(done) / static_cast<double>(p.names.size());
  }
  const std::string line = progress_bar_line(fraction, what, elapsed, eta, 100);
  std::fputs(("\r\033[2K" + line).c_str(), options_.stream);
  std::fflush(options_.stream);
  bar_shown_ = true;
}

}  // namespace preflight
