#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "run/runner.hpp"

namespace preflight {

namespace {
double seconds_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}
}  // namespace

RunState::RunState(Verdict skeleton, const std::vector<PlannedCheck>& plan, bool strict)
    : verdict_(std::move(skeleton)),
      results_(plan.size()),
      started_(SteadyClock::now()),
      strict_(strict) {
  for (const auto& p : plan) names_.push_back(p.check->info().name);
}

void RunState::set_system(SystemInfo system) {
  std::lock_guard<std::mutex> lock(mutex_);
  verdict_.system = std::move(system);
}

void RunState::set_thresholds(ThresholdsRecord thresholds) {
  std::lock_guard<std::mutex> lock(mutex_);
  verdict_.thresholds = std::move(thresholds);
}

void RunState::set_plan(RunPlanRecord plan) {
  std::lock_guard<std::mutex> lock(mutex_);
  verdict_.plan = std::move(plan);
}

void RunState::check_started(std::size_t index) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_ = index;
  running_since_ = SteadyClock::now();
}

void RunState::check_finished(std::size_t index, CheckResult result) {
  std::lock_guard<std::mutex> lock(mutex_);
  results_.at(index) = std::move(result);
  if (running_ == index) running_.reset();
}

void RunState::add_run_finding(Finding finding) {
  std::lock_guard<std::mutex> lock(mutex_);
  verdict_.findings.push_back(std::move(finding));
}

void RunState::note_abandoned_thread() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++abandoned_;
}

void RunState::set_injection_marker(std::function<void(CheckResult&)> marker) {
  std::lock_guard<std::mutex> lock(mutex_);
  marker_ = std::move(marker);
}

int RunState::abandoned_threads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abandoned_;
}

void RunState::request_stop(StopCause cause, std::string why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_cause_ == StopCause::none) {
      stop_cause_ = cause;
      stop_why_ = std::move(why);
    }
    event_ = true;
  }
  cv_.notify_all();
}

StopCause RunState::stop_cause() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_cause_;
}

std::string RunState::stop_why() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_why_;
}

void RunState::wait_for_event(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, timeout, [this] { return event_; });
  event_ = false;
}

void RunState::notify() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    event_ = true;
  }
  cv_.notify_all();
}

Verdict RunState::compose() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Verdict v = verdict_;
  v.duration_s = seconds_between(started_, SteadyClock::now());
  const std::string why = stop_why_.empty() ? std::string("the run ended early") : stop_why_;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (results_[i]) {
      v.checks.push_back(*results_[i]);
      continue;
    }
    CheckResult r;
    r.name = names_[i];
    if (running_ == i) {
      r.duration_s = seconds_between(running_since_, SteadyClock::now());
      const bool by_deadline = stop_cause_ == StopCause::deadline;
      r.findings.push_back(make_finding(runner_findings(),
                                        by_deadline ? "CHECK_TIMEOUT" : "CHECK_INTERRUPTED", "node",
                                        "stopped while running: " + why));
      r.status = Status::fail;
      r.summary = by_deadline ? "timed out" : "interrupted";
    } else {
      r.status = Status::skip;
      r.skip_reason = std::string(kNotRunPrefix) + why;
      r.summary = "not run";
    }
    v.checks.push_back(std::move(r));
  }
  if (marker_) {
    for (auto& c : v.checks) marker_(c);
  }
  add_incompleteness(v);
  aggregate(v, strict_);
  return v;
}

RunProgress RunState::progress() const {
  std::lock_guard<std::mutex> lock(mutex_);
  RunProgress p;
  p.names = names_;
  p.finished.reserve(results_.size());
  for (const auto& r : results_) {
    if (!r) {
      p.finished.emplace_back();
      continue;
    }
    CheckResult brief;  // polled often: skip the metrics and matrices
    brief.name = r->name;
    brief.status = r->status;
    brief.duration_s = r->duration_s;
    brief.summary = r->summary;
    brief.skip_reason = r->skip_reason;
    p.finished.emplace_back(std::move(brief));
  }
  p.running = running_;
  if (running_) p.running_s = seconds_between(running_since_, SteadyClock::now());
  return p;
}

// Checks that never started leave the node unjudged, whatever the others found: say why as a
// run-level fail, so that an interrupted or cut-short run can never pass.
void RunState::add_incompleteness(Verdict& v) const {
  int not_run = 0;
  bool cut_short = false;  // a check was stopped while it ran
  std::string why;
  for (const auto& c : v.checks) {
    if (c.status == Status::skip && c.skip_reason.rfind(kNotRunPrefix, 0) == 0) {
      if (not_run++ == 0) why = c.skip_reason.substr(kNotRunPrefix.size());
    }
    for (const auto& f : c.findings) cut_short = cut_short || f.code == "CHECK_INTERRUPTED";
  }
  // A signal that arrives after the last check finished does not make the run incomplete.
  const bool signalled = stop_cause_ == StopCause::signal && (not_run > 0 || cut_short);
  if (not_run == 0 && !signalled) return;
  const std::string count = std::to_string(not_run) + (not_run == 1 ? " check" : " checks");
  if (signalled) {
    v.findings.push_back(make_finding(runner_findings(), "RUN_INTERRUPTED", "node",
                                      "stopped by " + stop_why_ + "; " + count + " not run"));
  } else {
    v.findings.push_back(
        make_finding(runner_findings(), "RUN_INCOMPLETE", "node", count + " not run: " + why));
  }
}

bool RunState::claim_finalize() {
  bool expected = false;
  return finalized_.compare_exchange_strong(expected, true);
}

}  // namespace preflight
