// Placeholder: the HTML renderer lands in its own commit.
#include "preflight/report_documents.hpp"

namespace preflight {

std::string render_html_report(const std::vector<ReportDocument>& documents,
                               const HtmlReportOptions& options) {
  (void)options;
  std::string html =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>preflight "
      "report</title></head><body>";
  html += std::to_string(documents.size()) + " documents</body></html>\n";
  return html;
}

}  // namespace preflight
