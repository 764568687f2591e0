#include <cstdio>
#include <sstream>

#include "model/text_format.hpp"
#include "report/report.hpp"

namespace preflight {

namespace {

const char* colour_of(Status s) {
  switch (s) {
    case Status::pass:
      return "\033[32m";
    case Status::warn:
      return "\033[33m";
    case Status::fail:
    case Status::error:
      return "\033[31m";
    case Status::skip:
      return "\033[90m";
  }
  return "";
}

std::string status_cell(Status s, const TextStyle& style, std::size_t width) {
  const std::string text = padded(upper(to_string(s)), width);
  if (!style.colour) return text;
  return std::string(colour_of(s)) + text + "\033[0m";
}

Status status_of(Severity s) {
  return s == Severity::fail ? Status::fail : s == Severity::warn ? Status::warn : Status::pass;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

void finding_lines(std::ostringstream& os, const std::string& where, const Finding& f,
                   const TextStyle& style) {
  os << "  " << status_cell(status_of(f.severity), style, 5) << padded(where, 11) << ' '
     << padded(f.entity, 8) << ' ' << f.code << (f.injected ? " [injected]" : "") << ": "
     << f.message << '\n';
  // The action beside the remediation, where there is one to take: "fix (reset_gpu): ...".
  if (f.remediation.empty()) return;
  os << "        fix";
  if (f.action != Action::none) os << " (" << to_string(f.action) << ')';
  os << ": " << f.remediation << '\n';
}

// A check's matrices as grids (rows: from, columns: to), "-" where there is no figure.
void matrix_lines(std::ostringstream& os, const CheckResult& c) {
  for (const Matrix& m : c.matrices) {
    bool any = false;
    for (const auto& row : m.values) {
      for (const auto& cell : row) any = any || cell.has_value();
    }
    if (!any) continue;
    os << '\n' << c.name << ' ' << m.name << " (" << m.unit << "), row to column:\n";
    os << padded("", 8);
    for (const auto& label : m.labels) os << padded(label, 9);
    os << '\n';
    for (std::size_t i = 0; i < m.values.size(); ++i) {
      os << padded(i < m.labels.size() ? m.labels[i] : "", 8);
      for (const auto& cell : m.values[i]) {
        char buf[32];
        if (cell) {
          std::snprintf(buf, sizeof buf, "%.1f", *cell);
        } else {
          std::snprintf(buf, sizeof buf, "-");
        }
        os << padded(buf, 9);
      }
      os << '\n';
    }
  }
}

std::string why_stopped(const std::string& stopped_by) {
  if (stopped_by == "repeat") return "every pass run";
  if (stopped_by == "duration") return "--duration reached";
  if (stopped_by == "failure") return "stopped at the first unhealthy pass: --stop-on-fail";
  if (stopped_by == "signal") return "stopped by a signal";
  if (stopped_by == "stuck") return "stopped: a check did not return";
  return stopped_by;
}

// A burn-in's passes in one glance: how many, which were unhealthy, which one the table shows.
void burnin_lines(std::ostringstream& os, const Verdict& v) {
  const BurninInfo& b = *v.burnin;
  std::string unhealthy;
  int count = 0;
  for (const PassRecord& p : v.passes) {
    if (p.exit_code == kExitHealthy) continue;
    if (count++ < 10) unhealthy += (unhealthy.empty() ? "" : ", ") + std::to_string(p.index);
  }
  if (count > 10) unhealthy += ", ...";
  os << "\nBurn-in: " << b.passes_run << (b.passes_run == 1 ? " pass" : " passes");
  if (b.passes_requested) os << " of " << *b.passes_requested;
  os << " in " << seconds(v.duration_s) << " (" << why_stopped(b.stopped_by) << "); ";
  if (count == 0) {
    os << "every pass healthy";
  } else {
    os << count << " unhealthy (" << unhealthy << "), first failed: pass "
       << v.first_failed_pass.value_or(0);
  }
  os << "; the table shows pass " << b.reported_pass << '\n';
}

// Work the time did not allow, or pairs left to later runs: shown, never silent (docs/plan.md).
void coverage_lines(std::ostringstream& os, const Verdict& v) {
  bool header = false;
  for (const auto& c : v.checks) {
    if (!c.plan || (!c.plan->reduced && c.plan->rotation_steps <= 1)) continue;
    if (!header) {
      os << "\nCoverage";
      if (v.plan) {
        os << " (--timeout " << seconds(v.plan->timeout_s)
           << (v.plan->timeout_given ? "" : " by default") << ", modelled "
           << seconds(v.plan->expected_s) << ")";
      }
      os << ":\n";
      header = true;
    }
    os << "  " << padded(c.name, 10) << (c.plan->reduced ? "reduced to fit the time: " : "")
       << c.plan->coverage << '\n';
  }
}

}  // namespace

std::string verdict_to_text(const Verdict& v, const TextStyle& style) {
  std::ostringstream os;
  os << "preflight " << v.tool.version << " on " << v.host << ", profile " << v.profile << ", "
     << v.system.gpus.size() << " GPU" << (v.system.gpus.size() == 1 ? "" : "s");
  if (!v.system.driver_version.empty()) os << ", driver " << v.system.driver_version;
  os << '\n';
  if (!v.injected_faults.empty()) {
    os << "injected faults:";
    for (const auto& f : v.injected_faults) os << ' ' << f;
    os << '\n';
  }
  if (v.rejudged) {
    // A re-judged verdict must never pass for a fresh measurement.
    os << "re-judged " << v.rejudged->judged_at << " from " << v.rejudged->source << " (measured "
       << v.started_at << "), thresholds: " << v.rejudged->thresholds_by << "; "
       << v.rejudged->checks_rejudged << " checks judged again";
    if (!v.rejudged->checks_kept.empty()) {
      os << ", kept as recorded:";
      for (const auto& name : v.rejudged->checks_kept) os << ' ' << name;
    }
    os << '\n';
  }
  os << '\n' << padded("CHECK", 12) << padded("STATUS", 8) << padded("TIME", 8) << "SUMMARY\n";
  for (const auto& c : v.checks) {
    const std::string summary =
        c.status == Status::skip && !c.skip_reason.empty() ? c.skip_reason : c.summary;
    os << padded(c.name, 12) << status_cell(c.status, style, 8) << padded(seconds(c.duration_s), 8)
       << summary << '\n';
  }

  coverage_lines(os, v);
  for (const auto& c : v.checks) matrix_lines(os, c);

  bool header = false;
  const auto heading = [&] {
    if (!header) os << "\nFindings:\n";
    header = true;
  };
  for (const auto& f : v.findings) {
    if (f.severity == Severity::info) continue;
    heading();
    finding_lines(os, "run", f, style);
  }
  for (const auto& c : v.checks) {
    for (const auto& f : c.findings) {
      if (f.severity == Severity::info) continue;
      heading();
      finding_lines(os, c.name, f, style);
    }
  }
  if (v.burnin) burnin_lines(os, v);
  os << "\nVerdict: " << status_cell(v.verdict, style, 0) << " (exit " << v.exit_code << ", "
     << seconds(v.duration_s);
  if (v.action != Action::none) os << ", action " << to_string(v.action);
  os << ")";
  if (!v.reason.empty()) os << ": " << v.reason;
  os << '\n';
  return os.str();
}

}  // namespace preflight
