// `preflight report`: one self-contained HTML page from node and fleet verdicts (docs/report.md).
// This file holds the page itself (head, style, the optional script) and the summary; the
// sections per document are in html_node.cpp, html_fleet.cpp and html_charts.cpp.
#include <string>
#include <vector>

#include "report/html/html_common.hpp"
#include "report/html/html_sections.hpp"
#include "report/report_documents.hpp"

namespace preflight {

namespace {

using html::Json;

// Everything the page shows is in the HTML; the script only marks the page as rendered (the
// browser test checks that) and opens every <details> while printing, so a printout holds the
// metrics as well. The page reads the same without it.
constexpr const char* kScript =
    "(function(){var b=document.body;b.setAttribute('data-rendered','yes');"
    "var all=function(){return document.querySelectorAll('details');};"
    "window.addEventListener('beforeprint',function(){all().forEach(function(d){"
    "d.setAttribute('data-was-open',d.open?'1':'0');d.open=true;});});"
    "window.addEventListener('afterprint',function(){all().forEach(function(d){"
    "if(d.getAttribute('data-was-open')==='0')d.open=false;});});})();";

constexpr const char* kStyle = R"css(
:root{--good:#1a7f37;--warn:#b35900;--bad:#c62828;--info:#0969da;--odd:#7b3fb5;--muted:#6e7781;
--line:#d0d7de;--head:#f3f5f7}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:#1f2328;background:#fff;margin:0 auto;max-width:1400px;padding:16px 24px}
h1{font-size:22px;margin:4px 0}
h2{font-size:18px;margin:36px 0 6px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:15px;margin:20px 0 6px}
h4{font-size:14px;margin:12px 0 4px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
table{border-collapse:collapse;margin:4px 0 12px}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--head);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.nowrap{white-space:nowrap}
td.time{min-width:11.5em}
td.host{min-width:6.5em}
td.figs{min-width:13em}
td.val,th.val{text-align:right;font-variant-numeric:tabular-nums;min-width:6em}
.wide{width:100%}
.meta{color:#57606a;margin:2px 0;overflow-wrap:anywhere}
h2,.reason,.banner,figcaption{overflow-wrap:anywhere}
.meta span+span:before{content:" \00b7  "}
.none{color:var(--muted)}
.reason{font-weight:600;margin:6px 0}
.badge{display:inline-block;min-width:3.2em;max-width:12em;overflow:hidden;text-overflow:ellipsis;
white-space:nowrap;vertical-align:middle;text-align:center;padding:0 8px;border-radius:9px;
font-weight:700;font-size:12px;line-height:18px;text-transform:uppercase;color:#fff;
background:var(--muted)}
.t-good{background:var(--good)}.t-warn{background:var(--warn)}.t-bad{background:var(--bad)}
.t-info{background:var(--info)}.t-odd{background:var(--odd)}.t-muted{background:var(--muted)}
.drill{display:inline-block;padding:0 6px;border:2px solid var(--odd);border-radius:4px;
color:var(--odd);font-weight:700;font-size:11px;text-transform:uppercase;line-height:16px}
.banner{border:2px solid var(--odd);background:#f6f0fc;padding:6px 10px;margin:8px 0;
border-radius:4px}
tr.first-fail td{background:#fdecea}
ul.plain{margin:0;padding-left:18px}
.bars{margin:6px 0 14px;max-width:1000px}
.bar-row{display:grid;grid-template-columns:64px 1fr 150px;align-items:center;gap:8px;
margin:2px 0}
.bar-track{position:relative;height:16px;background:#eef1f4;border-radius:2px}
.bar{position:absolute;left:0;top:0;bottom:0;border-radius:2px}
.bar.t-muted{background:#57606a}
.bar-range{position:absolute;top:7px;height:2px;background:#1f2328}
.bar-median{position:absolute;top:-3px;bottom:-3px;border-left:2px dashed #1f2328}
.bar-value{font-variant-numeric:tabular-nums}
table.heat td{text-align:right;font-variant-numeric:tabular-nums;min-width:58px}
table.heat td.null{background:#e6e8eb;color:#8c959f;text-align:center}
figure{margin:8px 0 18px}
figcaption{font-weight:600;margin-bottom:2px}
.legend{display:flex;align-items:center;gap:8px;font-size:12.5px;color:#57606a}
.ramp{display:inline-block;width:160px;height:12px;border:1px solid var(--line)}
.swatch{display:inline-block;width:14px;height:12px;background:#e6e8eb;border:1px solid var(--line)}
details{margin:4px 0}
summary{cursor:pointer;font-weight:600}
footer{margin-top:40px;color:#57606a;font-size:12.5px;border-top:1px solid var(--line);
padding-top:6px}
@media print{
body{max-width:none;padding:0;font-size:11px}
*{-webkit-print-color-adjust:exact;print-color-adjust:exact}
section.doc{break-before:page}
tr,figure,.bar-row{break-inside:avoid}
a{color:inherit;text-decoration:none}
}
)css";

std::string document_subject(const ReportDocument& d) {
  if (d.kind == DocumentKind::fleet_verdict) {
    return "fleet of " + html::count_of(html::array(d.doc, "nodes").size(), "node", "nodes");
  }
  const std::string host = html::text(d.doc, "host");
  return host.empty() ? "node (no host name)" : host;
}

std::string summary_row(const ReportDocument& d, std::size_t n) {
  const Json& doc = d.doc;
  const bool fleet = d.kind == DocumentKind::fleet_verdict;
  std::string row = "<tr><td class=\"num\"><a href=\"#" + html::section_id(n) + "\">" +
                    std::to_string(n) + "</a></td>";
  row += "<td class=\"host\">" + html::breakable(document_subject(d)) + "</td>";
  row += "<td class=\"nowrap\">" + html::badge(html::text(doc, "verdict"));
  // A drill must not be mistaken for a broken node: the marker sits beside the verdict.
  if (html::is_drill(doc)) row += " " + html::drill_badge();
  row += "</td>";
  row += "<td class=\"num\">" + html::format_integer(html::integer(doc, "exit_code")) + "</td>";
  row += "<td>" + html::cell(html::text(doc, "reason"));
  if (!fleet) {
    const html::BurnIn b = html::burn_in_of(doc);
    if (b.passes > 0) {
      row += "<br><span class=\"meta\">burn-in: " + html::burn_in_text(b) + "</span>";
    }
  }
  row += "</td>";
  row += "<td class=\"time\">" + html::cell(html::text(doc, "started_at")) + "</td>";
  row += "<td>" + html::cell(html::text(doc, fleet ? "local_profile" : "profile")) + "</td>";
  row += "<td class=\"mono\">" + html::cell(d.path) + "</td></tr>\n";
  return row;
}

std::string summary(const std::vector<ReportDocument>& documents) {
  std::size_t nodes = 0, fleets = 0, pass = 0, warn = 0, fail = 0;
  for (const ReportDocument& d : documents) {
    (d.kind == DocumentKind::fleet_verdict ? fleets : nodes) += 1;
    const std::string v = html::text(d.doc, "verdict");
    if (v == "pass") ++pass;
    if (v == "warn") ++warn;
    if (v == "fail") ++fail;
  }
  std::string out = "<section id=\"summary\"><h2>Summary</h2>\n<p class=\"meta\">";
  out += html::count_of(nodes, "node verdict", "node verdicts") + ", " +
         html::count_of(fleets, "fleet verdict", "fleet verdicts") + ": " + std::to_string(pass) +
         " pass, " + std::to_string(warn) + " warn, " + std::to_string(fail) + " fail</p>\n";
  if (documents.empty()) return out + "<p class=\"none\">No documents.</p></section>\n";
  out +=
      "<table class=\"wide\"><thead><tr><th class=\"num\">#</th><th>Node / fleet</th>"
      "<th>Verdict</th><th class=\"num\">Exit</th><th>Reason</th><th>Started (UTC)</th>"
      "<th>Profile</th><th>File</th></tr></thead>\n<tbody>\n";
  for (std::size_t i = 0; i < documents.size(); ++i) out += summary_row(documents[i], i + 1);
  return out + "</tbody></table></section>\n";
}

}  // namespace

std::string render_html_report(const std::vector<ReportDocument>& documents,
                               const HtmlReportOptions& options) {
  // Nothing may be fetched: no network, no file, no font. The one inline script is allowed by
  // its hash, not by 'unsafe-inline', so text from a document can never become a running
  // script; inline styles are allowed because the charts are drawn with style attributes.
  const std::string csp = "default-src 'none'; script-src 'sha256-" + html::sha256_base64(kScript) +
                          "'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
                          "form-action 'none'";
  std::string title = "preflight report";
  if (documents.size() == 1) title += ": " + document_subject(documents.front());

  std::string page =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
      csp +
      "\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<meta name=\"generator\" content=\"preflight report\">\n"
      // An empty data: icon, so the browser does not ask for /favicon.ico.
      "<link rel=\"icon\" href=\"data:,\">\n<title>" +
      html::escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
  page += "<header><h1>preflight report</h1><p class=\"meta\"><span>" +
          html::count_of(documents.size(), "document", "documents") + "</span><span>generated " +
          html::cell(options.generated_at) + "</span><span>preflight " +
          html::cell(options.tool_version) + "</span></p></header>\n";
  html::PageBudget budget(options.max_page_bytes, options.max_table_rows, options.max_fleet_nodes);
  // Every document has its row in the summary, whatever the page's size; the sections share
  // what is left, in order.
  const std::string overview = summary(documents);
  budget.charge(page.size() + overview.size());
  page += overview;
  std::size_t sections = 0;
  for (; sections < documents.size() && !budget.spent(); ++sections) {
    const ReportDocument& d = documents[sections];
    page += d.kind == DocumentKind::fleet_verdict
                ? html::fleet_section(d, sections + 1, budget)
                : html::node_section(d, sections + 1, options.figures, budget);
  }
  if (sections < documents.size()) {
    page += "<p class=\"none\">" + std::to_string(documents.size() - sections) +
            " more not shown in detail: the page reached its size limit of " +
            html::size_text(options.max_page_bytes) +
            " (their rows are in the summary; report them on a page of their own).</p>\n";
  }
  page += "<footer>Generated by preflight " + html::cell(options.tool_version) + " at " +
          html::cell(options.generated_at) +
          ". Self-contained: no script, style or image is fetched. Text from the verdicts is "
          "shown as written on the nodes.</footer>\n";
  page += std::string("<script>") + kScript + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace preflight
