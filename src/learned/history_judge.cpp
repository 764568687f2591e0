// What a node's history says of its current run (history.hpp, judge_history): figures that
// dropped and stayed down, counters that rose (history_counters.cpp), failures that repeat.
// Every finding is added; none of the run's own is removed or softened, so the history never
// makes a failing node pass.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <utility>

#include "learned/figure_samples.hpp"
#include "learned/history.hpp"
#include "learned/history_detail.hpp"
#include "learned/learned_findings.hpp"
#include "model/bounded_input.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace history_detail {

namespace {

// The codes the history itself adds to a run. A run's own health is judged without them.
bool history_added_code(const std::string& code) {
  return code == "FIGURE_REGRESSED" || code == "COUNTER_ROSE" || code == "REPEATED_FAILURES";
}

// `preflight run --strict` makes a warning unhealthy; the run's command line says whether it
// was given (a re-judged verdict, whose strictness is judge's, is never in the history).
bool history_run_was_strict(const Verdict& run) {
  for (const std::string& arg : run.argv) {
    if (arg == "--strict") return true;
    if (arg.rfind("--strict=", 0) == 0) {
      const std::string value = arg.substr(9);
      return value != "false" && value != "0" && value != "no" && value != "off";
    }
  }
  return false;
}

// The first finding that made the run unhealthy of its own: a fail, else (strict) a warning.
const Finding* history_own_failure(const Verdict& run) {
  const bool strict = history_run_was_strict(run);
  const Finding* warning = nullptr;
  const auto consider = [&](const Finding& f) {
    if (history_added_code(f.code)) return false;
    if (f.severity == Severity::warn && strict && warning == nullptr) warning = &f;
    return f.severity == Severity::fail;
  };
  for (const Finding& f : run.findings) {
    if (consider(f)) return &f;
  }
  for (const CheckResult& check : run.checks) {
    for (const Finding& f : check.findings) {
      if (consider(f)) return &f;
    }
  }
  return warning;
}

}  // namespace

bool unhealthy_of_its_own(const Verdict& run) {
  return run.exit_code == kExitUnhealthy && history_own_failure(run) != nullptr;
}

bool healthy_of_its_own(const Verdict& run) {
  return run.exit_code == kExitHealthy ||
         (run.exit_code == kExitUnhealthy && history_own_failure(run) == nullptr);
}

bool check_drilled(const Verdict& verdict, const std::string& check) {
  for (const CheckResult& r : verdict.checks) {
    if (r.name != check) continue;
    for (const Finding& f : r.findings) {
      if (f.injected) return true;
    }
  }
  return false;
}

std::vector<EarlierRun> earlier_runs(const Verdict& current, const History& history) {
  const auto current_start = parse_utc_time(current.started_at);
  std::vector<EarlierRun> earlier;
  for (const HistoryRun& run : history.runs) {
    if (run.verdict.started_at == current.started_at) continue;
    const auto started = parse_utc_time(run.verdict.started_at);
    if (!started) continue;  // read_history skipped it with a note already
    if (current_start && !(*started < *current_start)) continue;
    earlier.push_back({&run.verdict, *started});
  }
  std::stable_sort(earlier.begin(), earlier.end(),
                   [](const EarlierRun& a, const EarlierRun& b) { return a.started < b.started; });
  return earlier;
}

}  // namespace history_detail

namespace {

using history_detail::EarlierRun;

std::string history_figure_key(const FigureSample& s) {
  return s.check + '\n' + s.entity + '\n' + s.metric;
}

struct HistoryPoint {
  const Verdict* run;
  double value;
};

std::string history_regression_message(const FigureSample& s, const RegressionResult& r,
                                       const BaselineGroup* fleet, std::size_t window_runs,
                                       const std::string& since) {
  char reference[200];
  if (r.reference_runs > 0) {
    std::snprintf(reference, sizeof reference,
                  "its own history (median %.4g of %d runs, noise %.1f%%)", r.reference,
                  r.reference_runs, 100.0 * r.noise);
  } else {
    std::snprintf(reference, sizeof reference,
                  "the fleet baseline of %s (median %.4g, spread %.1f%%)",
                  fleet != nullptr ? printable(fleet->id, 40).c_str() : "the site", r.reference,
                  100.0 * r.noise);
  }
  char text[512];
  std::snprintf(text, sizeof text,
                "%s %.4g %s: %.1f%% below %s, low in each of the last %zu runs since %s",
                s.key().c_str(), s.value, s.unit.c_str(), 100.0 * r.drop, reference, window_runs,
                since.c_str());
  return text;
}

void history_regressions(const Verdict& current, const std::vector<EarlierRun>& earlier,
                         const FigureCatalogue& catalogue, const BaselineGroup* fleet,
                         const RegressionOptions& options, HistoryJudgement& out) {
  std::vector<std::unordered_map<std::string, double>> earlier_values(earlier.size());
  for (std::size_t i = 0; i < earlier.size(); ++i) {
    for (const FigureSample& s : limited_figures(*earlier[i].verdict, catalogue)) {
      earlier_values[i].emplace(history_figure_key(s), s.value);
    }
  }
  // The runs of the window before the current one.
  const std::size_t window_before = static_cast<std::size_t>(std::max(0, options.window - 1));
  for (const FigureSample& s : limited_figures(current, catalogue)) {
    const std::string key = history_figure_key(s);
    std::vector<HistoryPoint> points;
    for (std::size_t i = 0; i < earlier.size(); ++i) {
      const auto found = earlier_values[i].find(key);
      if (found != earlier_values[i].end()) points.push_back({earlier[i].verdict, found->second});
    }
    const std::size_t split = points.size() > window_before ? points.size() - window_before : 0;
    std::vector<double> window;
    for (std::size_t i = split; i < points.size(); ++i) window.push_back(points[i].value);
    window.push_back(s.value);
    // The reference is what the node did when it was well: figures of an unhealthy run (a GPU
    // that throttled, a link that failed) are not what the node should reach.
    std::vector<double> reference;
    for (std::size_t i = 0; i < split; ++i) {
      if (history_detail::healthy_of_its_own(*points[i].run)) reference.push_back(points[i].value);
    }
    std::optional<FleetReference> fleet_reference;
    if (fleet != nullptr) {
      if (const FigureBaseline* b = fleet->find(s.check, s.entity, s.metric)) {
        fleet_reference = FleetReference{b->median, std::hypot(b->node_spread, b->run_spread)};
      }
    }
    const RegressionResult r = judge_regression(reference, window, fleet_reference, options);
    if (r.outcome == RegressionResult::Outcome::not_judged) continue;
    const bool regressed = r.outcome == RegressionResult::Outcome::regressed;
    RegressionRecord record;
    record.check = s.check;
    record.entity = s.entity;
    record.metric = s.metric;
    record.unit = s.unit;
    record.current = s.value;
    record.reference = r.reference;
    record.drop = r.drop;
    record.noise = r.noise;
    record.reference_runs = r.reference_runs;
    record.reference_by = r.reference_by;
    record.regressed = regressed;
    out.records.push_back(std::move(record));
    if (!regressed) continue;

    const std::string since =
        history_detail::shown_time(split < points.size() ? *points[split].run : current);
    Finding f =
        make_finding(learned_findings(), "FIGURE_REGRESSED", s.entity.empty() ? "node" : s.entity,
                     history_regression_message(s, r, fleet, window.size(), since));
    f.judged = true;
    f.injected = history_detail::check_drilled(current, s.check);
    // The limit is the value at or below which a run counts as down (regression.cpp's
    // threshold T): a majority of the window was there, every run near it.
    const double low_below = r.reference * (1.0 - r.threshold);
    f.measured(s.value, s.unit, low_below);
    out.findings.push_back(std::move(f));
  }
}

// "2026-11-20T03:04:05Z (GPU_FELL_OFF_BUS on gpu3)": the run and the first finding of its
// own that made it unhealthy (a fail, else a warning of a strict run).
std::string history_failed_run(const Verdict& run) {
  std::string text = history_detail::shown_time(run);
  const Finding* cause = nullptr;
  for (const Severity severity : {Severity::fail, Severity::warn}) {
    const auto first_of = [&](const std::vector<Finding>& findings) {
      for (const Finding& f : findings) {
        if (cause == nullptr && f.severity == severity &&
            !history_detail::history_added_code(f.code)) {
          cause = &f;
        }
      }
    };
    first_of(run.findings);
    for (const CheckResult& check : run.checks) first_of(check.findings);
    if (cause != nullptr) break;
  }
  if (cause != nullptr) {
    text += " (" + printable(cause->code, 40) + " on " + printable(cause->entity, 40) + ")";
  }
  return text;
}

void history_repeated_failures(const Verdict& current, const std::vector<EarlierRun>& earlier,
                               const std::optional<double>& current_start,
                               const HistoryOptions& options, HistoryJudgement& out) {
  if (!current_start || options.repeat_failures < 1) return;
  const double window_s = options.repeat_window_days * 86400.0;
  std::vector<const Verdict*> failed;  // newest first
  // The current run as it stands: judged by its checks (and the baseline), not yet by the
  // history. A drill's failure is the drill's, not the node's.
  if (current.exit_code == kExitUnhealthy && current.injected_faults.empty()) {
    failed.push_back(&current);
  }
  for (auto it = earlier.rbegin(); it != earlier.rend(); ++it) {
    if (*current_start - it->started > window_s) break;
    if (history_detail::unhealthy_of_its_own(*it->verdict)) failed.push_back(it->verdict);
  }
  if (failed.size() < static_cast<std::size_t>(options.repeat_failures)) return;
  constexpr std::size_t kNamed = 5;
  std::string named;
  for (std::size_t i = 0; i < failed.size() && i < kNamed; ++i) {
    named += (i == 0 ? "" : ", ") + history_failed_run(*failed[i]);
  }
  if (failed.size() > kNamed) named += " and " + std::to_string(failed.size() - kNamed) + " more";
  char days[32];
  std::snprintf(days, sizeof days, "%g", options.repeat_window_days);
  Finding f = make_finding(learned_findings(), "REPEATED_FAILURES", "node",
                           "unhealthy in " + std::to_string(failed.size()) +
                               " of its runs within " + days + " days: " + named);
  f.judged = true;
  f.measured(static_cast<double>(failed.size()), "runs", options.repeat_failures);
  out.findings.push_back(std::move(f));
}

void history_skipped_files(const History& history, HistoryJudgement& out) {
  if (history.skipped.empty()) return;
  constexpr std::size_t kNamed = 3;
  std::string named;
  for (std::size_t i = 0; i < history.skipped.size() && i < kNamed; ++i) {
    named += (i == 0 ? "" : "; ") + history.skipped[i];
  }
  if (history.skipped.size() > kNamed) {
    named += "; and " + std::to_string(history.skipped.size() - kNamed) + " more";
  }
  Finding f = make_finding(learned_findings(), "HISTORY_FILE_SKIPPED", "node",
                           std::to_string(history.skipped.size()) + " file" +
                               (history.skipped.size() == 1 ? "" : "s") + " in " +
                               printable(history.dir, 80) + " not used: " + named);
  f.judged = true;
  f.measured(static_cast<double>(history.skipped.size()), "files");
  out.findings.push_back(std::move(f));
}

}  // namespace

HistoryJudgement judge_history(const Verdict& current, const History& history,
                               const FigureCatalogue& catalogue, const BaselineGroup* fleet,
                               const HistoryOptions& options) {
  HistoryJudgement out;
  const auto current_start = history_detail::parse_utc_time(current.started_at);
  const std::vector<EarlierRun> earlier = history_detail::earlier_runs(current, history);
  history_regressions(current, earlier, catalogue, fleet, options.regression, out);
  for (Finding& f : history_detail::counter_findings(current, earlier)) {
    out.findings.push_back(std::move(f));
  }
  history_repeated_failures(current, earlier, current_start, options, out);
  history_skipped_files(history, out);
  return out;
}

}  // namespace preflight
