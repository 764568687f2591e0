// A node verdict (preflight.verdict/1, docs/verdict.md) as a section of the HTML report.
#include <algorithm>
#include <string>
#include <vector>

#include "report/html/html_common.hpp"
#include "report/html/html_sections.hpp"

namespace preflight::html {

namespace {

int severity_rank(const std::string& severity) {
  if (severity == "fail") return 0;
  if (severity == "warn") return 1;
  if (severity == "info") return 2;
  return 3;
}

// "1 fail, 2 warn" over the findings of one check (or the run-level ones).
std::string finding_counts(const Json& findings) {
  std::size_t fail = 0, warn = 0, info = 0;
  for (const Json& f : findings) {
    const std::string s = text(f, "severity");
    if (s == "fail") ++fail;
    if (s == "warn") ++warn;
    if (s == "info") ++info;
  }
  std::vector<std::string> parts;
  if (fail > 0) parts.push_back(std::to_string(fail) + " fail");
  if (warn > 0) parts.push_back(std::to_string(warn) + " warn");
  if (info > 0) parts.push_back(std::to_string(info) + " info");
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::size_t serious_findings(const Json& run_findings, const Json& checks) {
  std::size_t n = 0;
  const auto count = [&n](const Json& findings) {
    for (const Json& f : findings) {
      const std::string s = text(f, "severity");
      if (s == "fail" || s == "warn") ++n;
    }
  };
  count(run_findings);
  for (const Json& c : checks) count(array(c, "findings"));
  return n;
}

std::string value_with_unit(const Json& finding, const char* key) {
  const std::optional<double> v = number(finding, key);
  if (!v) return "<span class=\"none\">-</span>";
  const std::string unit = text(finding, "unit");
  return breakable(format_number(v) + (unit.empty() ? "" : " " + unit));
}

std::string system_part(const Json& doc, PageBudget& budget) {
  const Json& sys = object(doc, "system");
  const Json& gpus = array(sys, "gpus");
  std::string out = "<h3>System</h3>\n<table><tbody>\n";
  out += "<tr><th>Driver</th><td>" + cell(text(sys, "driver_version")) + "</td></tr>\n";
  out += "<tr><th>CUDA (driver)</th><td>" + cell(text(sys, "cuda_driver")) + "</td></tr>\n";
  out += "<tr><th>CUDA (runtime)</th><td>" + cell(text(sys, "cuda_runtime")) + "</td></tr>\n";
  out += "<tr><th>NCCL</th><td>" + cell(text(sys, "nccl")) + "</td></tr>\n";
  out += "<tr><th>GPUs</th><td>" + std::to_string(gpus.size()) + "</td></tr>\n";
  out += "</tbody></table>\n";
  if (gpus.empty()) return out;
  out +=
      "<table><thead><tr><th class=\"num\">GPU</th><th>Name</th><th>UUID</th>"
      "<th>PCI bus id</th><th>Serial</th></tr></thead><tbody>\n";
  Rows rows(budget, budget.max_rows());
  for (const Json& g : gpus) {
    if (!rows.open()) break;
    rows.add(out, "<tr><td class=\"num\">" + format_integer(integer(g, "index")) + "</td><td>" +
                      cell(text(g, "name")) + "</td><td class=\"mono\">" + cell(text(g, "uuid")) +
                      "</td><td class=\"mono\">" + cell(text(g, "pci_bus_id")) +
                      "</td><td class=\"mono\">" + cell(text(g, "serial")) + "</td></tr>\n");
  }
  return out + rows.more_row(gpus.size(), 5) + "</tbody></table>\n";
}

std::string passes_part(const Json& doc, PageBudget& budget) {
  const Json& passes = array(doc, "passes");
  if (passes.empty()) return "";
  const BurnIn b = burn_in_of(doc);
  std::string out = "<h3>Burn-in passes</h3>\n<p class=\"meta\">" + burn_in_text(b);
  // How the repeated run was asked for and which pass the sections below show (the top-level
  // checks are one pass's); written only by versions that record it.
  const Json& info = object(doc, "burnin");
  if (const auto requested = integer(info, "passes_requested")) {
    out += "; " + std::to_string(*requested) + " requested";
  }
  if (const auto seconds = number(info, "duration_requested_s")) {
    out += "; " + format_seconds(seconds) + " requested";
  }
  if (const std::string by = text(info, "stopped_by"); !by.empty()) {
    out += "; stopped by " + escape(by);
  }
  if (const auto shown = integer(info, "reported_pass")) {
    out += "; the checks and findings below are those of pass " + std::to_string(*shown);
  }
  out += "</p>\n";
  out +=
      "<table class=\"wide\"><thead><tr><th class=\"num\">Pass</th><th>Verdict</th>"
      "<th class=\"num\">Exit</th><th>Started (UTC)</th><th class=\"num\">Duration</th>"
      "<th>Reason</th><th class=\"num\">Fail/warn findings</th></tr></thead><tbody>\n";
  std::string details;
  Rows rows(budget, budget.max_rows());
  for (const Json& p : passes) {
    if (!rows.open()) break;
    const std::optional<long long> index = integer(p, "index");
    const bool first_fail = index && b.first_failed && *index == *b.first_failed;
    std::string row = first_fail ? "<tr class=\"first-fail\">" : "<tr>";
    row += "<td class=\"num\">" + format_integer(index) + "</td><td class=\"nowrap\">" +
           badge(text(p, "verdict")) + (first_fail ? " <strong>first failure</strong>" : "") +
           "</td><td class=\"num\">" + format_integer(integer(p, "exit_code")) +
           "</td><td class=\"time\">" + cell(text(p, "started_at")) + "</td><td class=\"num\">" +
           format_seconds(number(p, "duration_s")) + "</td><td>" + cell(text(p, "reason")) +
           "</td><td class=\"num\">" +
           std::to_string(serious_findings(array(p, "findings"), array(p, "checks"))) +
           "</td></tr>\n";
    if (!rows.add(out, row)) break;
    // The details of a pass whose row is shown; their tables charge their own rows.
    details += "<details><summary>Pass " + format_integer(index) + ": checks and findings" +
               "</summary>\n" + checks_table(array(p, "checks"), budget) +
               findings_table(array(p, "findings"), array(p, "checks"), budget) + "</details>\n";
  }
  return out + rows.more_row(passes.size(), 7) + "</tbody></table>\n" + details;
}

std::string drill_banner(const Json& doc) {
  if (!is_drill(doc)) return "";
  const Json& faults = array(doc, "injected_faults");
  std::string specs;
  std::size_t shown = 0;
  for (; shown < faults.size() && shown < kMaxCellItems; ++shown) {
    specs += (specs.empty() ? "" : ", ") + std::string("<code>") + cell(text_of(faults[shown])) +
             "</code>";
  }
  specs += more_in_cell(faults.size() - shown);
  return "<div class=\"banner\">" + drill_badge() +
         " <strong>Drill:</strong> this run injected faults" + (specs.empty() ? "" : ": " + specs) +
         ". Findings marked injected were produced by the drill, not by the hardware.</div>\n";
}

}  // namespace

std::string section_id(std::size_t n) {
  return "doc-" + std::to_string(n);
}

BurnIn burn_in_of(const Json& doc) {
  BurnIn b;
  const Json& passes = array(doc, "passes");
  b.passes = passes.size();
  // Unhealthy as docs/burnin.md counts it: an exit code other than 0 (a failing pass, or a
  // warning one under --strict); without an exit code, a fail verdict.
  std::optional<long long> first_unhealthy;
  for (const Json& p : passes) {
    const std::optional<long long> code = integer(p, "exit_code");
    if (code ? *code != 0 : text(p, "verdict") == "fail") {
      ++b.unhealthy;
      if (!first_unhealthy) first_unhealthy = integer(p, "index");
    }
  }
  const Json* f = member(doc, "first_failed_pass");
  b.first_failed = f ? integer_of(*f) : std::nullopt;
  // An older writer, or a mistyped field: what the passes themselves say.
  if (!b.first_failed && !(f && f->is_null())) b.first_failed = first_unhealthy;
  return b;
}

std::string burn_in_text(const BurnIn& b) {
  return count_of(b.passes, "pass", "passes") + ", " + std::to_string(b.unhealthy) +
         " unhealthy, " +
         (b.first_failed ? "first failed: pass " + std::to_string(*b.first_failed)
                         : std::string("none failed"));
}

bool is_drill(const Json& doc) {
  if (!array(doc, "injected_faults").empty()) return true;
  const auto marked = [](const Json& findings) {
    return std::any_of(findings.begin(), findings.end(),
                       [](const Json& f) { return boolean(f, "injected").value_or(false); });
  };
  if (marked(array(doc, "findings"))) return true;
  const Json& checks = array(doc, "checks");
  return std::any_of(checks.begin(), checks.end(),
                     [&](const Json& c) { return marked(array(c, "findings")); });
}

std::string checks_table(const Json& checks, PageBudget& budget) {
  if (checks.empty()) return "<p class=\"none\">No checks recorded.</p>\n";
  std::string out =
      "<table class=\"wide\"><thead><tr><th>Check</th><th>Status</th>"
      "<th class=\"num\">Time</th><th>Summary</th><th>Skip reason</th><th>Findings</th>"
      "</tr></thead><tbody>\n";
  Rows rows(budget, budget.max_rows());
  for (const Json& c : checks) {
    if (!rows.open()) break;
    rows.add(out, "<tr><td><strong>" + cell(text(c, "name")) + "</strong></td><td>" +
                      badge(text(c, "status")) + "</td><td class=\"num\">" +
                      format_seconds(number(c, "duration_s")) + "</td><td>" +
                      cell(text(c, "summary")) + "</td><td>" + cell(text(c, "skip_reason")) +
                      "</td><td>" + cell(finding_counts(array(c, "findings"))) + "</td></tr>\n");
  }
  return out + rows.more_row(checks.size(), 6) + "</tbody></table>\n";
}

std::string findings_table(const Json& run_findings, const Json& checks, PageBudget& budget) {
  // Only pointers and the rank: a verdict may hold a million findings, and all of them are
  // ordered although at most max_rows are shown.
  struct Row {
    const Json* finding;
    const Json* check;  // nullptr: a run-level finding
    int rank;
  };
  std::vector<Row> rows;
  for (const Json& f : run_findings) {
    rows.push_back({&f, nullptr, severity_rank(text(f, "severity"))});
  }
  for (const Json& c : checks) {
    for (const Json& f : array(c, "findings")) {
      rows.push_back({&f, &c, severity_rank(text(f, "severity"))});
    }
  }
  if (rows.empty()) return "<p class=\"none\">No findings.</p>\n";
  // Worst first; stable, so the order within a severity is the document's (the reason's).
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.rank < b.rank; });
  std::string out =
      "<table class=\"wide\"><thead><tr><th>Severity</th><th>Check</th><th>Entity</th>"
      "<th>Code</th><th>Message</th><th class=\"val\">Value</th><th class=\"val\">Threshold</th>"
      "<th>Action</th><th>Remediation</th></tr></thead><tbody>\n";
  Rows shown(budget, budget.max_rows());
  for (const Row& r : rows) {
    if (!shown.open()) break;
    const Json& f = *r.finding;
    std::string row = "<tr><td class=\"nowrap\">" + badge(text(f, "severity"));
    if (boolean(f, "injected").value_or(false)) row += " " + drill_badge();
    row += "</td><td>" + cell(r.check ? text(*r.check, "name") : "run") +
           "</td><td class=\"mono\">" + cell(text(f, "entity")) + "</td><td class=\"mono\">" +
           cell(text(f, "code")) + "</td><td>" + cell(text(f, "message")) +
           "</td><td class=\"val\">" + value_with_unit(f, "value") + "</td><td class=\"val\">" +
           value_with_unit(f, "threshold") + "</td><td class=\"nowrap\">" +
           cell(text(f, "action")) + "</td><td>" + cell(text(f, "remediation")) + "</td></tr>\n";
    shown.add(out, row);
  }
  return out + shown.more_row(rows.size(), 9) + "</tbody></table>\n";
}

std::string node_section(const ReportDocument& document, std::size_t n,
                         const FigureCatalogue& figures, PageBudget& budget) {
  const Json& doc = document.doc;
  const std::string host = text(doc, "host");
  const Json& tool = object(doc, "tool");
  std::string out =
      "<section class=\"doc\" id=\"" + section_id(n) + "\">\n<h2>" + std::to_string(n) + ". Node " +
      (host.empty() ? std::string("<span class=\"none\">(no host name)</span>") : escape(host)) +
      " " + badge(text(doc, "verdict")) + "</h2>\n";
  out +=
      "<p class=\"meta\"><span>exit code " + format_integer(integer(doc, "exit_code")) + "</span>";
  // The node's recommended action; absent from verdicts of versions before it.
  if (const std::string action = text(doc, "action"); !action.empty()) {
    out += "<span>action " + cell(action) + "</span>";
  }
  out += "<span>started " + cell(text(doc, "started_at")) + "</span><span>took " +
         format_seconds(number(doc, "duration_s")) + "</span><span>profile " +
         cell(text(doc, "profile")) + "</span><span>preflight " + cell(text(tool, "version")) +
         " (git " + cell(text(tool, "git")) + ")</span><span class=\"mono\">" +
         cell(document.path) + "</span></p>\n";
  out += drill_banner(doc);
  const std::string reason = text(doc, "reason");
  out += "<p class=\"reason\">Reason: " + cell(reason) + "</p>\n";
  const BurnIn b = burn_in_of(doc);
  if (b.passes > 0) {
    out += "<p class=\"reason\">Burn-in: " + burn_in_text(b) + "</p>\n";
  }
  out += system_part(doc, budget);
  out += passes_part(doc, budget);
  const Json& checks = array(doc, "checks");
  out += "<h3>Checks</h3>\n" + checks_table(checks, budget);
  out += "<h3>Findings</h3>\n" + findings_table(array(doc, "findings"), checks, budget);
  out += bar_charts(checks, figures, budget);
  out += matrix_heat_maps(checks, budget);
  out += metrics_details(checks, figures, budget);
  out += command_line_details(doc, "Command line") + "</section>\n";
  return out;
}

}  // namespace preflight::html
