#pragma once
// Saved verdicts read back: `preflight report` loads node verdicts (preflight.verdict/1) and
// fleet verdicts (preflight.fleet/1) from files and renders them for people (one HTML page) or
// for scripts (key<TAB>value lines). Host-only; nothing here touches hardware.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/figures.hpp"

namespace preflight {

enum class DocumentKind { node_verdict, fleet_verdict };

struct ReportDocument {
  std::string path;  // as given on the command line ("-" for stdin)
  DocumentKind kind = DocumentKind::node_verdict;
  nlohmann::ordered_json doc;  // the whole document, schema already checked
};

// Reads and parses one verdict file ("-": stdin). Throws InvalidInput naming the path when the
// file cannot be read, is not JSON, is not an object, or has no known `schema`.
ReportDocument load_report_document(const std::string& path);

// Key<TAB>value lines for shell scripts (the Slurm hooks, the CI gate): tabs, newlines and other
// control characters in values become spaces, so every key is exactly one line. The keys are
// listed in docs/report.md; the first is always `file`.
std::string report_fields_tsv(const ReportDocument& document);

struct HtmlReportOptions {
  std::string generated_at;  // UTC ISO-8601, shown in the page footer
  std::string tool_version;  // "0.1.0 (git abc123)"
  FigureCatalogue figures;   // the checks' declared bars (CheckRegistry::figure_catalogue())
};

// One self-contained HTML page (inline CSS and script, no network fetch) from node and fleet
// verdicts, in the order given: a summary first, then per document its details (docs/report.md).
std::string render_html_report(const std::vector<ReportDocument>& documents,
                               const HtmlReportOptions& options);

}  // namespace preflight
