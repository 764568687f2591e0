// The fleet verdict model: a node verdict condensed for rank 0, and the aggregation from node
// conclusions to lists, exclude list, verdict and exit code (docs/fleet-verdict.md). The
// document and the table are in fleet_report.cpp.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include "fleet/logic/fleet_verdict.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// The fleet figure a node-verdict metric feeds under its check's declarations, or empty.
std::string fleet_figure_of(const CheckFigures* declared, const Metric& metric) {
  if (declared == nullptr) return {};
  for (const FigureExport& figure : declared->exports) {
    if (figure.fleet_figure.empty()) continue;
    if (const auto labels = figure_labels(figure, metric)) {
      return with_labels(figure.fleet_figure, *labels);
    }
  }
  return {};
}

void add_finding_keys(const std::vector<Finding>& findings, std::vector<std::string>& out) {
  for (const Finding& f : findings) {
    if (f.severity == Severity::info) continue;
    std::string key = f.code + "@" + f.entity;
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(std::move(key));
  }
}

bool is_local_verdict(const std::string& s) {
  return s == "pass" || s == "warn" || s == "fail" || s == "error" || s == "skip" || s == "missing";
}

[[noreturn]] void malformed(const std::string& what) {
  throw InvalidInput("malformed local summary: " + what);
}

// Slurm node names: what `sbatch --exclude` takes. Anything else (a comma would name two
// nodes, a quote or newline breaks the command line) stays out of the list.
bool is_slurm_host_name(const std::string& host) {
  if (host.empty()) return false;
  return std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
  });
}

bool is_node_verdict(const std::string& s) {
  return s == "healthy" || s == "faulty" || s == "straggler" || s == "ambiguous";
}

std::string node_label(const FleetNode& n) {
  const std::string rank = "rank " + std::to_string(n.rank);
  return n.host.empty() ? rank : n.host + " (" + rank + ")";
}

// The listed reason: the planner's reasons, else what the node said of itself.
std::string listed_reason(const FleetNode& n) {
  std::string text;
  for (const std::string& r : n.reasons) text += (text.empty() ? "" : "; ") + r;
  if (text.empty() && !n.local.verdict.empty() && n.local.verdict != "pass") {
    text = "local verdict " + n.local.verdict;
    if (!n.local.reason.empty()) text += ": " + n.local.reason;
  }
  if (text.empty()) text = n.verdict;
  return sanitize_reason(text);
}

// "38%": a share as a whole percentage.
std::string percent(double share) {
  return std::to_string(static_cast<long>(std::lround(share * 100.0))) + "%";
}

void add_note_once(std::vector<std::string>& notes, std::string note) {
  if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(std::move(note));
}

// "2 faulty: a (rank 3), b (rank 7), c (rank 9), +4 more": at most three names per class, so
// every class keeps its place in a 200-character line.
constexpr std::size_t kNamedPerClass = 3;

std::string class_part(std::size_t count, const std::string& singular, const std::string& plural,
                       const std::vector<std::string>& names) {
  std::string part = std::to_string(count) + " " + (count == 1 ? singular : plural) + ": ";
  for (std::size_t i = 0; i < names.size() && i < kNamedPerClass; ++i) {
    part += (i == 0 ? "" : ", ") + names[i];
  }
  if (names.size() > kNamedPerClass) {
    part += ", +" + std::to_string(names.size() - kNamedPerClass) + " more";
  }
  return part;
}

}  // namespace

LocalSummary summarize_local(const Verdict& v, const FigureCatalogue& figures) {
  LocalSummary s;
  s.verdict = std::string(to_string(v.verdict));
  s.exit_code = v.exit_code;
  s.reason = v.reason;
  s.duration_s = v.duration_s;
  add_finding_keys(v.findings, s.findings);
  for (const CheckResult& c : v.checks) {
    add_finding_keys(c.findings, s.findings);
    const CheckFigures* declared = figures_of(figures, c.name);
    for (const Metric& metric : c.metrics) {
      const double value = metric.value;
      if (!std::isfinite(value)) continue;
      std::string figure = fleet_figure_of(declared, metric);
      if (figure.empty()) continue;
      // A node is as slow as its slowest GPU: a job waits for it at every step.
      auto it = std::find_if(s.figures.begin(), s.figures.end(),
                             [&figure](const auto& f) { return f.first == figure; });
      if (it == s.figures.end()) {
        s.figures.emplace_back(std::move(figure), value);
      } else {
        it->second = std::min(it->second, value);
      }
    }
  }
  return s;
}

Json local_summary_to_json(const LocalSummary& s) {
  Json j;
  j["verdict"] = s.verdict;
  j["exit_code"] = s.exit_code;
  j["reason"] = s.reason;
  // Milliseconds. A duration too large to scale (1e306 s, from a hostile peer) stays as it is:
  // scaled, it would be infinity, which JSON writes as null, and the message would no longer
  // decode (found by tests/fuzz, target protocol).
  const double ms = std::round(s.duration_s * 1000.0) / 1000.0;
  j["duration_s"] = !std::isfinite(s.duration_s) ? 0.0 : std::isfinite(ms) ? ms : s.duration_s;
  j["findings"] = s.findings;
  Json figures = Json::object();
  for (const auto& [name, value] : s.figures) {
    if (std::isfinite(value)) {
      figures[name] = value;
    } else {
      figures[name] = nullptr;  // JSON has no NaN; null reads back as not measured
    }
  }
  j["figures"] = figures;
  return j;
}

LocalSummary local_summary_from_json(const Json& j) {
  if (!j.is_object()) malformed("not a JSON object");
  LocalSummary s;
  const auto verdict = j.find("verdict");
  if (verdict == j.end() || !verdict->is_string()) malformed("verdict is not a string");
  s.verdict = verdict->get<std::string>();
  if (!is_local_verdict(s.verdict)) malformed("unknown verdict \"" + s.verdict + "\"");
  const auto exit_code = j.find("exit_code");
  if (exit_code == j.end() || !exit_code->is_number_integer()) {
    malformed("exit_code is not an integer");
  }
  const auto code = exit_code->get<long long>();
  if (code < 0 || code > 255) malformed("exit_code out of range");
  s.exit_code = static_cast<int>(code);
  if (const auto it = j.find("reason"); it != j.end()) {
    if (!it->is_string()) malformed("reason is not a string");
    s.reason = it->get<std::string>();
  }
  if (const auto it = j.find("duration_s"); it != j.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      malformed("duration_s is not a number >= 0");
    }
    s.duration_s = it->get<double>();
  }
  if (const auto it = j.find("findings"); it != j.end()) {
    if (!it->is_array()) malformed("findings is not an array");
    for (const Json& f : *it) {
      if (!f.is_string()) malformed("a finding is not a string");
      s.findings.push_back(f.get<std::string>());
    }
  }
  if (const auto it = j.find("figures"); it != j.end()) {
    if (!it->is_object()) malformed("figures is not an object");
    for (const auto& [name, value] : it->items()) {
      if (value.is_null()) continue;  // not measured
      if (!value.is_number() || !std::isfinite(value.get<double>())) {
        malformed("figure \"" + name + "\" is not a finite number");
      }
      s.figures.emplace_back(name, value.get<double>());
    }
  }
  return s;
}

LocalSummary local_summary_from_json_text(const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    malformed(std::string("not JSON: ") + e.what());
  }
  return local_summary_from_json(j);
}

void finalize_fleet_verdict(FleetVerdict& v) {
  std::stable_sort(v.nodes.begin(), v.nodes.end(),
                   [](const FleetNode& a, const FleetNode& b) { return a.rank < b.rank; });
  v.faulty.clear();
  v.stragglers.clear();
  v.ambiguous.clear();
  v.exclude.clear();

  v.systemic.clear();

  for (FleetNode& n : v.nodes) {
    if (!is_node_verdict(n.verdict)) {
      // An unknown conclusion is a bug upstream; failing safe keeps the node out of the job.
      n.reasons.push_back("unknown node verdict \"" + n.verdict + "\", treated as ambiguous");
      n.verdict = "ambiguous";
    }
  }
  v.systemic = systemic_causes(v.nodes, v.rounds, v.max_exclude_share);
  const auto by_systemic_cause = [&](const FleetNode& n) {
    for (const std::string& cause : node_causes(n, v.rounds)) {
      for (const SystemicCause& s : v.systemic) {
        if (s.cause == cause) return true;
      }
    }
    return false;
  };

  std::vector<std::string> faulty_names, straggler_names, ambiguous_names, apart_names;
  std::vector<std::string> excluded;
  int common = 0;
  for (FleetNode& n : v.nodes) {
    if (n.verdict == "healthy") continue;
    const FleetListed listed{n.rank, n.host, listed_reason(n)};
    if (n.verdict == "faulty") {
      v.faulty.push_back(listed);
      faulty_names.push_back(node_label(n));
    } else if (n.verdict == "straggler") {
      v.stragglers.push_back(listed);
      // The figure that made it one says more than the name alone.
      const std::string rank = "rank " + std::to_string(n.rank);
      const std::string detail = n.reasons.empty() ? "" : n.reasons.front();
      const std::string inside =
          n.host.empty() ? detail : rank + (detail.empty() ? "" : ", " + detail);
      straggler_names.push_back((n.host.empty() ? rank : n.host) +
                                (inside.empty() ? "" : " (" + inside + ")"));
    } else {
      v.ambiguous.push_back(listed);
      ambiguous_names.push_back(node_label(n));
    }
    if (by_systemic_cause(n)) {
      // Not this node's fault as far as the run can tell: no exclusion on a common cause.
      ++common;
      continue;
    }
    apart_names.push_back(node_label(n));
    if (!is_slurm_host_name(n.host)) {
      add_note_once(v.notes,
                    "rank " + std::to_string(n.rank) +
                        (n.host.empty() ? " has no host name"
                                        : " has a host name that is not a Slurm node name") +
                        ": it is not in exclude");
    } else if (std::find(excluded.begin(), excluded.end(), n.host) == excluded.end()) {
      excluded.push_back(n.host);  // several ranks on one host: the host once
    }
  }
  for (const std::string& host : excluded) v.exclude += (v.exclude.empty() ? "" : ",") + host;

  std::vector<std::string> pair_names;
  for (const FleetBadPair& p : v.bad_pairs) {
    std::string label;
    for (std::size_t i = 0; i < p.ranks.size(); ++i) {
      const std::string host = i < p.hosts.size() ? p.hosts[i] : "";
      const std::string rank = "rank " + std::to_string(p.ranks[i]);
      label += (i == 0 ? "" : " - ") + (host.empty() ? rank : host + " (" + rank + ")");
    }
    pair_names.push_back(label);
  }

  if (v.nodes.empty()) {
    // Rank 0 is always a node: an empty fleet is a bug of the caller, not a healthy fleet.
    v.verdict = "fail";
    v.exit_code = kExitInternalError;
    v.reason = "no node in the fleet verdict";
    return;
  }
  std::vector<std::string> parts;
  if (!faulty_names.empty()) {
    parts.push_back(class_part(faulty_names.size(), "faulty", "faulty", faulty_names));
  }
  if (!straggler_names.empty()) {
    parts.push_back(class_part(straggler_names.size(), "straggler", "stragglers", straggler_names));
  }
  if (!ambiguous_names.empty()) {
    parts.push_back(class_part(ambiguous_names.size(), "ambiguous", "ambiguous", ambiguous_names));
  }
  if (!pair_names.empty()) {
    parts.push_back(class_part(pair_names.size(), "bad pair", "bad pairs", pair_names));
  }
  if (!v.systemic.empty()) {
    const SystemicCause& top = v.systemic.front();
    add_note_once(v.notes, std::to_string(common) +
                               " nodes failed by a cause more than the --max-exclude-share of " +
                               percent(v.max_exclude_share) +
                               " of the fleet share; they are not in exclude");
    std::string reason = (v.injected_faults.empty() ? "" : "injected fault: ") +
                         std::string("systemic: ") + std::to_string(top.nodes) + " of " +
                         std::to_string(v.nodes.size()) + " nodes (" + percent(top.share) +
                         ") failed by " + top.cause + ", over the " + percent(v.max_exclude_share) +
                         " limit: a common cause (environment, driver, thresholds, time), not "
                         "excluded";
    if (!apart_names.empty()) {
      reason +=
          "; " + class_part(apart_names.size(), "other excluded", "others excluded", apart_names);
    }
    v.verdict = "fail";
    v.exit_code = kExitInternalError;
    v.reason = sanitize_reason(reason);
    return;
  }
  if (parts.empty()) {
    v.verdict = "pass";
    v.exit_code = kExitHealthy;
    v.reason.clear();
    return;
  }
  std::string reason = v.injected_faults.empty() ? "" : "injected fault: ";
  for (std::size_t i = 0; i < parts.size(); ++i) reason += (i == 0 ? "" : "; ") + parts[i];
  v.verdict = "fail";
  v.exit_code = kExitUnhealthy;
  v.reason = sanitize_reason(reason);
}

void mark_fleet_internal_error(FleetVerdict& v, const std::string& what) {
  v.notes.push_back("internal error: " + what);
  v.verdict = "fail";
  v.exit_code = kExitInternalError;
  v.reason = sanitize_reason("internal error: " + what + (v.reason.empty() ? "" : "; " + v.reason));
}

void mark_fleet_launch_problem(FleetVerdict& v, const std::string& why) {
  v.nodes.clear();
  v.rounds.clear();
  v.bad_pairs.clear();
  v.faulty.clear();
  v.stragglers.clear();
  v.ambiguous.clear();
  v.exclude.clear();
  v.notes.push_back(why);
  v.verdict = "fail";
  v.exit_code = kExitInternalError;
  v.reason = sanitize_reason((v.injected_faults.empty() ? "" : "injected fault: ") + why);
}

}  // namespace preflight
