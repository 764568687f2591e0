#include "run/burnin.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"

namespace preflight {

double parse_duration(std::string_view text, std::string_view flag) {
  const std::string s(text);
  const auto bad = [&](const std::string& why) -> double {
    throw InvalidInput(std::string(flag) + ": '" + s + "' " + why +
                       " (expected seconds, or a number with s, m, h or d, e.g. 90m)");
  };
  if (s.empty()) return bad("is empty");
  char* end = nullptr;
  const double number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(number)) return bad("is not a duration");
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else if (unit == "d") {
    scale = 86400;
  } else {
    return bad("has an unknown unit '" + unit + "'");
  }
  const double seconds = number * scale;
  if (!(seconds > 0)) return bad("is not positive");
  if (seconds > kMaxDurationS) return bad("is longer than 30 days");
  return seconds;
}

std::optional<std::string> burnin_stop(const BurninRequest& request, const PassEnd& end) {
  if (end.signalled) return "signal";
  if (end.stuck) return "stuck";
  if (request.stop_on_fail && end.unhealthy) return "failure";
  if (!request.repeated()) return "repeat";  // a plain run is one pass
  if (request.repeat && end.passes_done >= *request.repeat) return "repeat";
  if (request.duration_s && end.elapsed_s >= *request.duration_s) return "duration";
  return std::nullopt;
}

namespace {

PassRecord record_of(const Verdict& pass, int index) {
  PassRecord r;
  r.index = index;
  r.started_at = pass.started_at;
  r.duration_s = pass.duration_s;
  r.verdict = pass.verdict;
  r.exit_code = pass.exit_code;
  r.reason = pass.reason;
  r.findings = pass.findings;
  r.checks = pass.checks;
  return r;
}

}  // namespace

Verdict combine_passes(const std::vector<Verdict>& passes, const BurninRequest& request,
                       const std::string& stopped_by, double total_s, bool strict,
                       const std::string& signal) {
  // The pass the top level reports: what an operator must look at first.
  std::size_t reported = passes.size() - 1;
  const auto first_with = [&passes](Status s) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < passes.size(); ++i) {
      if (passes[i].verdict == s) return i;
    }
    return std::nullopt;
  };
  if (const auto f = first_with(Status::fail)) {
    reported = *f;
  } else if (const auto w = first_with(Status::warn)) {
    reported = *w;
  }

  Verdict v = passes[reported];
  v.started_at = passes.front().started_at;
  v.duration_s = total_s;
  BurninInfo info;
  info.passes_requested = request.repeat;
  info.duration_requested_s = request.duration_s;
  info.passes_run = static_cast<int>(passes.size());
  info.stopped_by = stopped_by;
  info.reported_pass = static_cast<int>(reported) + 1;
  v.burnin = info;
  v.passes.clear();
  v.first_failed_pass.reset();
  for (std::size_t i = 0; i < passes.size(); ++i) {
    const int index = static_cast<int>(i) + 1;
    v.passes.push_back(record_of(passes[i], index));
    if (!v.first_failed_pass && passes[i].exit_code != kExitHealthy) v.first_failed_pass = index;
  }
  if (stopped_by == "signal") {
    const bool said = std::any_of(v.findings.begin(), v.findings.end(),
                                  [](const Finding& f) { return f.code == "RUN_INTERRUPTED"; });
    if (!said) {
      std::string what = "burn-in stopped by " +
                         (signal.empty() ? std::string("a signal") : signal) + " after " +
                         std::to_string(passes.size()) + " passes";
      if (request.repeat) what += " of " + std::to_string(*request.repeat);
      v.findings.push_back(make_finding(runner_findings(), "RUN_INTERRUPTED", "node", what));
    }
  }
  aggregate(v, strict);
  return v;
}

double remaining_seconds(const EtaInput& in) {
  const double per_pass = in.mean_pass_s.value_or(in.pass_budget_s);
  const double current_left = std::max(per_pass - in.pass_elapsed_s, 0.0);
  double left = current_left;
  if (in.repeat) {
    left = current_left + std::max(*in.repeat - in.pass, 0) * per_pass;
  }
  if (in.duration_s) {
    // A new pass starts only while the duration has not passed; the one under way finishes.
    const double current_ends = in.elapsed_s + current_left;
    double by_duration = current_left;
    if (current_ends < *in.duration_s && per_pass > 0) {
      by_duration += std::ceil((*in.duration_s - current_ends) / per_pass) * per_pass;
    }
    left = in.repeat ? std::min(left, by_duration) : by_duration;
  }
  return left;
}

std::string format_clock(double seconds) {
  long total = seconds > 0 ? std::lround(seconds) : 0;
  const long days = total / 86400;
  total %= 86400;
  char buf[48];
  if (days > 0) {
    std::snprintf(buf, sizeof buf, "%ldd %ld:%02ld:%02ld", days, total / 3600, total / 60 % 60,
                  total % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  }
  return buf;
}

}  // namespace preflight
