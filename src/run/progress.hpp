#pragma once
// Progress of a burn-in on stderr: on a terminal one bar line, redrawn in place, with the pass,
// the running check, elapsed time and ETA; otherwise (a log file, a pipe) plain lines, one per
// finished check and pass, so that logs stay readable. It only reads RunState: a stuck check
// cannot stop it, and it never decides anything.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "run/burnin.hpp"
#include "run/runner.hpp"

namespace preflight {

struct ProgressOptions {
  FILE* stream = stderr;
  bool terminal = false;  // redraw a bar in place (a TTY) or print lines
  BurninRequest request;
  double pass_budget_s = 0;  // the planned checks' budgets, for the first ETA
  std::chrono::milliseconds tick{200};
};

// One bar line, at most `width` columns: "[#####-----]  42%  pass 3/10  gemm (2/7)  elapsed
// 0:12:34  ETA 0:17:10".
std::string progress_bar_line(double fraction, const std::string& what, double elapsed_s,
                              std::optional<double> eta_s, std::size_t width);

class ProgressDisplay {
 public:
  explicit ProgressDisplay(ProgressOptions options);
  ~ProgressDisplay();
  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

  // The pass `index` (from 1) starts on `state`, which must outlive the matching end_pass.
  void begin_pass(int index, const RunState* state);
  // Prints the pass's result and forgets the state.
  void end_pass(int index, const Verdict& pass);
  // Clears the bar; the final table follows on a clean line.
  void finish();

 private:
  void loop();
  void poll_locked(bool force);
  std::string pass_label_locked() const;
  std::optional<double> eta_locked(double pass_elapsed_s) const;
  void print_line_locked(const std::string& line);

  ProgressOptions options_;
  std::mutex mutex_;
  const RunState* state_ = nullptr;
  int pass_ = 0;
  std::chrono::steady_clock::time_point started_;
  std::chrono::steady_clock::time_point pass_started_;
  std::vector<double> pass_durations_;
  std::size_t reported_checks_ = 0;  // finished checks of this pass already printed
  bool bar_shown_ = false;
  bool finished_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace preflight
