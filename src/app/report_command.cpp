// `preflight report`: saved verdicts rendered as one HTML page or as key/value lines.
#include <chrono>
#include <iostream>

#include "app/commands.hpp"
#include "model/host_info.hpp"
#include "preflight/errors.hpp"
#include "preflight/verdict.hpp"
#include "report/atomic_file.hpp"
#include "report/report_documents.hpp"

namespace preflight {

CommandResult report_command(const Invocation& inv) {
  const ReportArgs& args = inv.report;
  const bool to_stdout = args.output.empty() || args.output == "-";
  // Every problem with the input or the output path is found before anything is written.
  if (!to_stdout) ensure_writable(args.output, "--output");
  std::vector<ReportDocument> documents;
  for (const auto& path : args.files) documents.push_back(load_report_document(path));

  std::string text;
  if (args.format == "tsv") {
    for (const auto& d : documents) text += report_fields_tsv(d);
  } else {
    HtmlReportOptions options;
    options.generated_at = utc_iso8601(std::chrono::system_clock::now());
    options.tool_version = version_string();
    CheckRegistry registry;
    register_builtin_checks(registry);
    options.figures = registry.figure_catalogue();
    text = render_html_report(documents, options);
  }
  if (to_stdout) {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "preflight: internal error: cannot write the report to stdout\n";
      return {kExitInternalError, false};
    }
  } else {
    try {
      write_file_atomically(args.output, text);
    } catch (const std::exception& e) {
      std::cerr << "preflight: internal error: cannot write the report: " << e.what() << '\n';
      return {kExitInternalError, false};
    }
  }
  return {kExitHealthy, false};
}

}  // namespace preflight
