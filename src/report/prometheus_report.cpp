#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <utility>
#include <vector>

#include "report/prometheus.hpp"

namespace preflight {

namespace {

struct Sample {
  Labels labels;
  double value = 0;
};

struct Family {
  std::string help;
  std::vector<Sample> samples;
};

// Families in the order first added: the exposition format wants each family's samples together.
class Exposition {
 public:
  void add(const std::string& name, const std::string& help, Labels labels, double value) {
    if (!std::isfinite(value)) return;  // a figure that is not a number is left out
    auto [it, inserted] = index_.emplace(name, families_.size());
    if (inserted) families_.push_back({name, Family{help, {}}});
    // One series per label set: the same finding twice must not make the file invalid.
    auto& samples = families_[it->second].second.samples;
    for (const Sample& s : samples) {
      if (s.labels == labels) return;
    }
    samples.push_back({std::move(labels), value});
  }

  std::string text() const {
    std::string out;
    for (const auto& [name, family] : families_) {
      out += "# HELP " + name + " " + family.help + "\n# TYPE " + name + " gauge\n";
      for (const Sample& s : family.samples) {
        out += name;
        if (!s.labels.empty()) {
          out += '{';
          for (std::size_t i = 0; i < s.labels.size(); ++i) {
            out += (i ? "," : "") + s.labels[i].first + "=\"" + escaped(s.labels[i].second) + '"';
          }
          out += '}';
        }
        out += ' ' + number(s.value) + '\n';
      }
    }
    return out;
  }

 private:
  static std::string escaped(const std::string& value) {
    std::string out;
    for (char c : value) {
      if (c == '\\') {
        out += "\\\\";
      } else if (c == '"') {
        out += "\\\"";
      } else if (c == '\n') {
        out += "\\n";
      } else {
        out += c;
      }
    }
    return out;
  }
  // The shortest text that reads back as the same double: 0.305, not 0.30471969900000001.
  static std::string number(double v) {
    char buf[40];
    for (int precision = 15; precision <= 17; ++precision) {
      std::snprintf(buf, sizeof buf, "%.*g", precision, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
  }

  std::map<std::string, std::size_t> index_;
  std::vector<std::pair<std::string, Family>> families_;
};

constexpr Status kStatuses[] = {Status::pass, Status::warn, Status::fail, Status::skip,
                                Status::error};

void add_figures(Exposition& out, const CheckResult& check, const FigureCatalogue& catalogue) {
  if (const CheckFigures* declared = figures_of(catalogue, check.name)) {
    for (const Metric& metric : check.metrics) {
      for (const FigureExport& figure : declared->exports) {
        auto labels = figure_labels(figure, metric);
        if (!labels) continue;
        out.add(figure.family, figure.help, std::move(*labels), metric.value * figure.scale);
        break;
      }
    }
  }
  // Pair tables (nvlink): every ordered GPU pair's bandwidth, so a dashboard can find the link.
  for (const Matrix& matrix : check.matrices) {
    if (matrix.unit != "GB/s") continue;
    std::string mode = matrix.name;
    if (const auto cut = mode.rfind("_gbps"); cut != std::string::npos) mode.resize(cut);
    for (std::size_t i = 0; i < matrix.values.size() && i < matrix.labels.size(); ++i) {
      for (std::size_t j = 0; j < matrix.values[i].size() && j < matrix.labels.size(); ++j) {
        if (!matrix.values[i][j]) continue;
        out.add("preflight_" + check.name + "_pair_bandwidth_bytes_per_second",
                "verified copy bandwidth from src to dst",
                {{"src", matrix.labels[i]}, {"dst", matrix.labels[j]}, {"mode", mode}},
                *matrix.values[i][j] * 1e9);
      }
    }
  }
}

void add_findings(Exposition& out, const std::string& where, const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.severity == Severity::info) continue;
    out.add("preflight_finding",
            "a warn or fail finding of the last run (docs/findings.md); 1 while it stands",
            {{"check", where},
             {"code", f.code},
             {"entity", f.entity},
             {"severity", std::string(to_string(f.severity))},
             {"injected", f.injected ? "true" : "false"}},
            1);
  }
}

// The figures `--history` compared with the node's own runs (docs/baseline.md): how far each
// stands below its reference, so a dashboard sees a slow drift before it becomes a finding.
void add_regressions(Exposition& out, const LearnedRecord& learned) {
  for (const RegressionRecord& r : learned.regressions) {
    Labels labels{{"check", r.check},
                  {"entity", r.entity},
                  {"metric", r.metric},
                  {"reference", r.reference_by}};
    out.add("preflight_history_drop_ratio",
            "a figure's median drop below its reference over the last runs (0.06: 6% lower; "
            "negative: higher), from --history",
            labels, r.drop);
    out.add("preflight_history_regressed",
            "1 where the figure's drop held over the window and beyond its noise "
            "(FIGURE_REGRESSED)",
            std::move(labels), r.regressed ? 1 : 0);
  }
  if (!learned.history_dir.empty()) {
    out.add("preflight_history_runs", "earlier verdicts of this node that --history used", {},
            learned.history_runs);
  }
}

}  // namespace

double epoch_seconds_of(const std::string& utc_iso8601) {
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  char zone = 0;
  if (std::sscanf(utc_iso8601.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &year, &month, &day, &hour,
                  &minute, &second, &zone) != 7 ||
      zone != 'Z') {
    return 0;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return static_cast<double>(timegm(&tm));
}

std::string verdict_to_prometheus(const Verdict& v, const FigureCatalogue& figures) {
  Exposition out;
  for (Status s : {Status::pass, Status::warn, Status::fail}) {
    out.add("preflight_verdict", "node verdict of the last run: 1 for the verdict it had",
            {{"verdict", std::string(to_string(s))}}, v.verdict == s ? 1 : 0);
  }
  for (Action a : kAllActions) {
    out.add("preflight_action",
            "recommended action for the node from the last run: 1 for the action it had "
            "(docs/findings.md)",
            {{"action", std::string(to_string(a))}}, v.action == a ? 1 : 0);
  }
  out.add("preflight_healthy", "1 when the last run's exit code was 0 (healthy)", {},
          v.exit_code == kExitHealthy ? 1 : 0);
  out.add("preflight_exit_code", "exit code of the last run (docs/verdict.md)", {}, v.exit_code);
  out.add("preflight_injected", "1 when the last run was an --inject-fault drill", {},
          v.injected_faults.empty() ? 0 : 1);
  out.add("preflight_last_run_timestamp_seconds", "start of the last run, seconds since the epoch",
          {}, epoch_seconds_of(v.started_at));
  out.add("preflight_last_run_duration_seconds", "wall time of the last run", {}, v.duration_s);
  out.add("preflight_info", "the tool, profile and software stack of the last run",
          {{"version", v.tool.version},
           {"git", v.tool.git},
           {"profile", v.profile},
           {"driver", v.system.driver_version},
           {"cuda_driver", v.system.cuda_driver},
           {"nccl", v.system.nccl}},
          1);
  if (v.burnin) {
    out.add("preflight_burnin_passes", "passes the last burn-in ran", {}, v.burnin->passes_run);
    out.add("preflight_burnin_failed_passes", "passes of the last burn-in that were unhealthy", {},
            [&v] {
              int n = 0;
              for (const auto& p : v.passes) n += p.exit_code != kExitHealthy ? 1 : 0;
              return n;
            }());
  }
  for (const CheckResult& c : v.checks) {
    for (Status s : kStatuses) {
      out.add("preflight_check_status", "status of each check in the last run: 1 for its status",
              {{"check", c.name}, {"status", std::string(to_string(s))}}, c.status == s ? 1 : 0);
    }
  }
  for (const CheckResult& c : v.checks) {
    if (c.status == Status::skip) continue;
    out.add("preflight_check_duration_seconds", "wall time of each check that ran",
            {{"check", c.name}}, c.duration_s);
  }
  add_findings(out, "run", v.findings);
  for (const CheckResult& c : v.checks) add_findings(out, c.name, c.findings);
  for (const CheckResult& c : v.checks) add_figures(out, c, figures);
  if (v.learned) add_regressions(out, *v.learned);
  return out.text();
}

}  // namespace preflight
