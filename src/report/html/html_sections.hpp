#pragma once
// The parts of the HTML report page (docs/report.md). Each returns a fragment of HTML in which
// every string from the document is escaped; none throws on a missing or mistyped field. Each
// adds its rows through Rows on the page's budget (html_common.hpp), so none grows past the
// page's caps, and each says how many rows it left out.
//   html_report.cpp  the page: head, style, script, summary, then one section per document
//   html_node.cpp    a node verdict: system, burn-in passes, checks, findings
//   html_charts.cpp  per-GPU bars (TFLOP/s), matrices as heat maps, metrics tables
//   html_fleet.cpp   a fleet verdict: conclusions, nodes, rounds
#include <cstddef>
#include <optional>
#include <string>

#include "preflight/figures.hpp"
#include "report/html/html_common.hpp"
#include "report/report_documents.hpp"

namespace preflight::html {

// The anchor of the n-th document (from 1); the summary links to it. Built from the index only,
// never from document text.
std::string section_id(std::size_t n);

// A burn-in run (several passes) as the summary and the node section describe it.
struct BurnIn {
  std::size_t passes = 0;                 // 0: a single run (or no `passes` field)
  std::size_t unhealthy = 0;              // passes whose exit code is not 0
  std::optional<long long> first_failed;  // the pass index, from 1
};
BurnIn burn_in_of(const Json& doc);
// "3 passes, 2 unhealthy, first failed: pass 2" (text, nothing from the document).
std::string burn_in_text(const BurnIn& burn_in);

// Whether the document comes from an --inject-fault drill: `injected_faults` is not empty, or a
// finding says `injected` (a drill's marks survive even if the list was lost).
bool is_drill(const Json& doc);

std::string node_section(const ReportDocument& document, std::size_t n,
                         const FigureCatalogue& figures, PageBudget& budget);
std::string fleet_section(const ReportDocument& document, std::size_t n, PageBudget& budget);

// A checks table (status, time, summary, skip reason, findings count) for `checks[]` of a node
// verdict or of one burn-in pass.
std::string checks_table(const Json& checks, PageBudget& budget);
// Every finding, run-level (`findings`) first then per check, worst severity first.
std::string findings_table(const Json& run_findings, const Json& checks, PageBudget& budget);

// Per-GPU bars of every check that declares them (CheckInfo::bars; the gemm check's
// `gpuN.<dtype>.tflops_median`, one bar group per dtype); "" when none.
std::string bar_charts(const Json& checks, const FigureCatalogue& figures, PageBudget& budget);
// Every `checks[].matrices` entry as a heat-map table; "" when there is none.
std::string matrix_heat_maps(const Json& checks, PageBudget& budget);
// The metrics not drawn above, per check, in collapsed <details>; "" when there are none.
std::string metrics_details(const Json& checks, const FigureCatalogue& figures, PageBudget& budget);

}  // namespace preflight::html
