#pragma once
// Saved verdicts read back: `preflight report` loads node verdicts (preflight.verdict/1) and
// fleet verdicts (preflight.fleet/1) from files and renders them for people (one HTML page) or
// for scripts (key<TAB>value lines). Host-only; nothing here touches hardware.
//
// The files come from other machines and may be broken or hostile, so reading is bounded (a
// regular file or stdin, 64 MiB, 64 levels of nesting) and rendering is capped (rows per table,
// bytes per text, bytes per page; docs/report.md#limits), each cap saying what it left out.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/figures.hpp"

namespace preflight {

// The bounds on one input document. The same as a verdict's for `preflight judge`
// (load_verdict_file), since both read the same files.
inline constexpr std::size_t kMaxReportDocumentBytes = std::size_t{64} << 20;
inline constexpr int kMaxReportDocumentNesting = 64;

enum class DocumentKind { node_verdict, fleet_verdict };

struct ReportDocument {
  std::string path;  // as given on the command line ("-" for stdin)
  DocumentKind kind = DocumentKind::node_verdict;
  nlohmann::ordered_json doc;  // the whole document, schema already checked
};

// A document already in memory: the nesting bound, the parse and the schema check, everything
// load_report_document does after reading. `origin` names it in messages and becomes `path`.
// Throws InvalidInput "report: ORIGIN: ..." and nothing else; the result renders with every
// renderer below without throwing, whatever the types of its fields.
ReportDocument parse_report_document(std::string_view text, const std::string& origin);

// Reads one verdict file ("-": stdin) within kMaxReportDocumentBytes and parses it. Throws
// InvalidInput naming the path when the file cannot be read, is not a regular file (a FIFO, a
// device, a directory), is too large, nested too deep, not JSON, not an object, or has no
// known `schema`.
ReportDocument load_report_document(const std::string& path);

// Key<TAB>value lines for shell scripts (the Slurm hooks, the CI gate): tabs, newlines and other
// control characters in values become spaces, so every key is exactly one line. The keys are
// listed in docs/report.md; the first is always `file`. Values are written whole (a script
// needs all of `exclude`), so the lines are about as large as the document at most.
std::string report_fields_tsv(const ReportDocument& document);

// The caps of the HTML page (docs/report.md#limits). A node has a few dozen GPUs and a verdict
// a few dozen findings; these are far above that and far below what makes a page no browser
// opens, and every one of them shows a "N more not shown" line where it cuts.
inline constexpr std::size_t kReportMaxTableRows = 1000;    // rows of one table or chart
inline constexpr std::size_t kReportMaxFleetNodes = 10000;  // rows of a fleet's node table
inline constexpr std::size_t kReportMaxPageBytes = std::size_t{64} << 20;

struct HtmlReportOptions {
  std::string generated_at;  // UTC ISO-8601, shown in the page footer
  std::string tool_version;  // "0.1.0 (git abc123)"
  FigureCatalogue figures;   // the checks' declared bars (CheckRegistry::figure_catalogue())
  std::size_t max_table_rows = kReportMaxTableRows;
  std::size_t max_fleet_nodes = kReportMaxFleetNodes;
  std::size_t max_page_bytes = kReportMaxPageBytes;
};

// One self-contained HTML page (inline CSS and script, no network fetch) from node and fleet
// verdicts, in the order given: a summary first, then per document its details (docs/report.md).
std::string render_html_report(const std::vector<ReportDocument>& documents,
                               const HtmlReportOptions& options);

}  // namespace preflight
