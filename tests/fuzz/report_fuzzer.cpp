// `preflight report FILE...`: a saved node or fleet verdict parsed as load_report_document parses
// a file's text (parse_report_document: the nesting bound, the parse, the schema), then every
// renderer `preflight report` has (src/app/report_command.cpp): the tsv lines, and the HTML page
// with the checks' declared bars, once with the default caps and once with caps small enough
// that the seeds hit every "N more not shown" cut. parse_report_document promises that what it
// accepts renders without throwing, whatever the types of its fields.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "json_mutator.hpp"
#include "preflight/errors.hpp"
#include "report/report_documents.hpp"

using namespace preflight;

namespace {

HtmlReportOptions options(bool small_caps) {
  HtmlReportOptions o;
  o.generated_at = "2025-01-01T00:00:00Z";
  o.tool_version = "0.0.0 (fuzz)";
  o.figures = fuzz::builtin_registry().figure_catalogue();
  if (small_caps) {
    o.max_table_rows = 2;
    o.max_fleet_nodes = 2;
    o.max_page_bytes = 16 * 1024;
  }
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<ReportDocument> documents;
  try {
    documents.push_back(parse_report_document(fuzz::as_text(data, size), "fuzz"));
  } catch (const InvalidInput&) {
    return 0;
  }
  static const HtmlReportOptions defaults = options(false);
  static const HtmlReportOptions small = options(true);
  (void)report_fields_tsv(documents.front());
  (void)render_html_report(documents, defaults);
  (void)render_html_report(documents, small);
  return 0;
}

// Structure-aware mutations (json_mutator.hpp).
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  return preflight::fuzz::mutate_json(data, size, max_size, seed);
}
