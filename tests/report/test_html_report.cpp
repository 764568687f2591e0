// Unit tests of the HTML report (src/report/html/html_*.cpp, docs/report.md): escaping, the page's
// structure and CSP, the fixtures' content, hostile text, and documents of odd shapes that must
// still render. The browser tests (report_test.sh) load the same pages in Chromium.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "report/html/html_common.hpp"
#include "report/report_documents.hpp"
#include "support/builtin_figures.hpp"
#include "support/text_search.hpp"

using namespace preflight;
using Json = nlohmann::ordered_json;

namespace {

std::string fixture(const std::string& name) {
  return std::string(PREFLIGHT_SOURCE_DIR) + "/tests/report/data/" + name;
}

// The page without its <wbr> break hints, so that the checks below read the text as a person
// does; breakable() has a test of its own.
std::string without_wbr(std::string page) {
  for (auto at = page.find("<wbr>"); at != std::string::npos; at = page.find("<wbr>", at)) {
    page.erase(at, 5);
  }
  return page;
}

std::string render_fixtures(const std::vector<std::string>& names) {
  std::vector<ReportDocument> docs;
  for (const auto& n : names) docs.push_back(load_report_document(fixture(n)));
  return without_wbr(render_html_report(
      docs, {"2026-11-22T04:00:00Z", "0.1.0 (git test)", test::builtin_figures()}));
}

ReportDocument node_doc(Json doc) {
  return {"odd.json", DocumentKind::node_verdict, std::move(doc)};
}

ReportDocument fleet_doc(Json doc) {
  return {"odd-fleet.json", DocumentKind::fleet_verdict, std::move(doc)};
}

std::string render_docs(const std::vector<ReportDocument>& docs) {
  return without_wbr(
      render_html_report(docs, {"2026-11-22T04:00:00Z", "0.1.0", test::builtin_figures()}));
}

// A small structural check of the page: every non-void element closed in order, script and
// style skipped as raw text, ids unique, and every '&' outside them the start of a character
// reference (so no unescaped text slipped through). Returns "" or the first problem.
std::string structure_problem(const std::string& page) {
  static const std::set<std::string> kVoid{"meta", "link", "br", "img", "input", "hr", "wbr"};
  std::vector<std::string> open;
  std::set<std::string> ids;
  std::size_t i = 0;
  while (i < page.size()) {
    const char c = page[i];
    if (c == '&') {
      std::size_t j = i + 1;
      if (j < page.size() && page[j] == '#') ++j;
      while (j < page.size() && std::isalnum(static_cast<unsigned char>(page[j]))) ++j;
      if (j >= page.size() || page[j] != ';' || j == i + 1) {
        return "bare '&' at " + page.substr(i, 40);
      }
      i = j + 1;
      continue;
    }
    if (c != '<') {
      ++i;
      continue;
    }
    if (page.compare(i, 4, "<!--") == 0) return "a comment in the page";
    if (page.compare(i, 2, "<!") == 0) {
      i = page.find('>', i) + 1;
      continue;
    }
    const std::size_t end = page.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    std::string tag = page.substr(i + 1, end - i - 1);
    const bool closing = !tag.empty() && tag[0] == '/';
    if (closing) tag.erase(0, 1);
    const std::string name = tag.substr(0, tag.find_first_of(" \t\n"));
    if (name.empty() ||
        !std::all_of(name.begin(), name.end(), [](char ch) { return std::isalnum(ch) != 0; })) {
      return "odd tag <" + tag.substr(0, 40) + ">";
    }
    if (closing) {
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      }
      open.pop_back();
      i = end + 1;
      continue;
    }
    const auto id = tag.find(" id=\"");
    if (id != std::string::npos) {
      const std::string value = tag.substr(id + 5, tag.find('"', id + 5) - id - 5);
      if (!ids.insert(value).second) return "duplicate id " + value;
    }
    if (name == "script" || name == "style") {
      const std::size_t close = page.find("</" + name + ">", end);
      if (close == std::string::npos) return "unclosed <" + name + ">";
      i = close + name.size() + 3;
      continue;
    }
    if (kVoid.count(name) == 0) open.push_back(name);
    i = end + 1;
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

std::string between(const std::string& text, const std::string& from, const std::string& to) {
  const auto a = text.find(from);
  if (a == std::string::npos) return "";
  const auto b = text.find(to, a + from.size());
  return b == std::string::npos ? "" : text.substr(a + from.size(), b - a - from.size());
}

}  // namespace

TEST_CASE("html: escape makes markup, quotes, ampersands and control characters inert", "[html]") {
  CHECK(html::escape("<script>alert('x')</script>") ==
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
  CHECK(html::escape("a \"b\" & c") == "a &quot;b&quot; &amp; c");
  CHECK(html::escape("&amp;") == "&amp;amp;");
  CHECK(html::escape(std::string("nul\0bell\a", 9)) ==
        "nul\xEF\xBF\xBD"
        "bell\xEF\xBF\xBD");
  CHECK(html::escape("tab\tnew\nline") == "tab\tnew\nline");
  CHECK(html::escape("日本語 😀") == "日本語 😀");
}

TEST_CASE("html: long runs without spaces get break hints, words and characters stay whole",
          "[html]") {
  CHECK(html::breakable("NVIDIA H100 80GB HBM3") == "NVIDIA H100 80GB HBM3");
  CHECK(html::breakable("/work/main/tests/report/data/node-8gpu-h100.json") ==
        "/work/main/tests/report/<wbr>data/node-8gpu-h100.<wbr>json");
  CHECK(html::breakable(std::string(35, 'x')) == std::string(30, 'x') + "<wbr>xxxxx");
  // Hints go between whole UTF-8 characters (3 bytes each here) and after escaping.
  std::string kanji;
  for (int i = 0; i < 31; ++i) kanji += "\xE6\x97\xA5";
  const std::string broken = html::breakable(kanji);
  CHECK(broken.size() == kanji.size() + 5);
  CHECK(broken.find("<wbr>") == 30 * 3);
  CHECK(html::breakable("<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<") ==
        "&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;"
        "&lt;&lt;&lt;&lt;&lt;&lt;&lt;&lt;<wbr>&lt;");
}

TEST_CASE("html: the SHA-256 behind the CSP hash matches the published test vectors", "[html]") {
  CHECK(html::sha256_base64("") == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
  CHECK(html::sha256_base64("abc") == "ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
  // Two blocks: the padding crosses a block boundary.
  CHECK(html::sha256_base64("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "JI1qYdIGOLjlwCaTDD5gOaM85Flk/yFn9uzt1BnbBsE=");
}

TEST_CASE("html: number formatting shows '-' for what is not a finite number", "[html]") {
  CHECK(html::format_number(std::nullopt) == "-");
  CHECK(html::format_number(2.0) == "2");
  CHECK(html::format_number(371.25) == "371.2");
  CHECK(html::format_number(3.104) == "3.104");
  CHECK(html::format_number(2810.44) == "2810.4");
  CHECK(html::number_of(Json(std::numeric_limits<double>::quiet_NaN())) == std::nullopt);
  CHECK(html::number_of(Json(std::numeric_limits<double>::infinity())) == std::nullopt);
  CHECK(html::number_of(Json("12")) == std::nullopt);
  CHECK(html::integer_of(Json(2.0)) == 2);
  CHECK(html::integer_of(Json(2.5)) == std::nullopt);
  CHECK(html::format_seconds(3.4621) == "3.46 s");
}

TEST_CASE("html: the page is self-contained, its CSP names its one script by hash", "[html]") {
  const std::string page = render_fixtures({"node-8gpu-h100.json"});
  CHECK(page.rfind("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">", 0) ==
        0);
  CHECK(test::occurrences(page, "<script>") == 1);
  const std::string script = between(page, "<script>", "</script>");
  REQUIRE(!script.empty());
  CHECK(script.find("data-rendered") != std::string::npos);
  const std::string csp = between(page, "http-equiv=\"Content-Security-Policy\" content=\"", "\"");
  CHECK(csp.rfind("default-src 'none'; ", 0) == 0);
  CHECK(csp.find("script-src 'sha256-" + html::sha256_base64(script) + "'") != std::string::npos);
  CHECK(csp.find("unsafe-inline'; img-src data:") != std::string::npos);
  CHECK(csp.find("script-src 'unsafe-inline'") == std::string::npos);
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("@media print") != std::string::npos);
  CHECK(structure_problem(page).empty());
}

TEST_CASE("html: a node verdict shows summary, system, checks, findings, bars, heat maps",
          "[html]") {
  const std::string page = render_fixtures({"node-8gpu-h100.json"});
  INFO(structure_problem(page));
  CHECK(structure_problem(page).empty());
  // The summary comes first, then the node's section.
  const auto summary = page.find("<h2>Summary</h2>");
  const auto section = page.find("<section class=\"doc\" id=\"doc-1\">");
  REQUIRE(summary != std::string::npos);
  REQUIRE(section != std::string::npos);
  CHECK(summary < section);
  CHECK(
      page.find("<a href=\"#doc-1\">1</a></td><td class=\"host\">gpu-a017</td><td class=\"nowrap\">"
                "<span class=\"badge "
                "t-bad\">fail</span></td><td class=\"num\">1</td>") != std::string::npos);
  // System and GPUs.
  CHECK(page.find("<th>Driver</th><td>580.65.06</td>") != std::string::npos);
  CHECK(test::occurrences(page, "NVIDIA H100 80GB HBM3</td>") == 8);
  // Checks: the skipped rdma check with its reason.
  CHECK(page.find("no RDMA device found and none expected") != std::string::npos);
  // Findings: the failing one first, with value, threshold and remediation.
  const auto low = page.find("NVLINK_BANDWIDTH_LOW</td>");
  const auto straggler = page.find("GEMM_STRAGGLER</td>");
  REQUIRE(low != std::string::npos);
  REQUIRE(straggler != std::string::npos);
  CHECK(low < straggler);
  CHECK(page.find("<td class=\"val\">182.4 GB/s</td><td class=\"val\">270 GB/s</td>") !=
        std::string::npos);
  CHECK(page.find("RMA the baseboard or GPU if links stay down") != std::string::npos);
  // Bars: two dtypes, eight GPUs each, the node median, the straggler amber.
  CHECK(page.find("<h4>bf16 <span class=\"meta\">node median 743.7 TFLOP/s</span></h4>") !=
        std::string::npos);
  CHECK(page.find("<h4>fp64 ") != std::string::npos);
  CHECK(test::occurrences(page, "<div class=\"bar-row\">") == 16);
  CHECK(test::occurrences(page, "<span class=\"bar t-warn\"") == 1);  // gpu6, bf16 only
  CHECK(page.find("690.2 TFLOP/s</span>") != std::string::npos);
  // Heat maps: three matrices, 8 x 8 with a grey diagonal, the slow pair reddest.
  CHECK(test::occurrences(page, "<table class=\"heat\">") == 3);
  CHECK(test::occurrences(page, "<td class=\"null\">-</td>") == 3 * 8);
  CHECK(page.find("nvlink: unidirectional_gbps (GB/s)") != std::string::npos);
  CHECK(page.find("title=\"gpu2 to gpu5: 182.4 GB/s\">182.4</td>") != std::string::npos);
  CHECK(page.find("class=\"legend\"") != std::string::npos);
  // Metrics not drawn: collapsed, per check, GPUs as columns.
  CHECK(page.find("<details><summary>Metrics: inventory (58)</summary>") != std::string::npos);
  CHECK(page.find("<td class=\"mono\">temperature_c</td>") != std::string::npos);
  // tflops_median is drawn, so not repeated in the gemm metrics table.
  CHECK(page.find("<td class=\"mono\">bf16.tflops_median</td>") == std::string::npos);
  CHECK(page.find("<td class=\"mono\">bf16.tflops_min</td>") != std::string::npos);
}

TEST_CASE("html: a fleet verdict shows conclusions, exclude list, nodes and rounds", "[html]") {
  const std::string page = render_fixtures({"fleet-6node.json"});
  CHECK(structure_problem(page).empty());
  CHECK(page.find("<td class=\"host\">fleet of 6 nodes</td>") != std::string::npos);
  CHECK(page.find("<code>gpu-a011,gpu-a013,gpu-a014</code>") != std::string::npos);
  CHECK(test::occurrences(page, "<span class=\"badge t-bad\">faulty</span>") ==
        2 * 2);  // lists and nodes
  CHECK(test::occurrences(page, "<span class=\"badge t-warn\">straggler</span>") == 2);
  CHECK(page.find("<h4>Round 3 <span class=\"meta\">2 groups</span></h4>") != std::string::npos);
  CHECK(page.find("<td class=\"nowrap\">[2, 3]</td><td><span class=\"badge t-bad\">timeout") !=
        std::string::npos);
  CHECK(page.find("<span class=\"badge t-warn\">slow</span></td><td class=\"num\">96.3 GB/s") !=
        std::string::npos);
  CHECK(page.find("ECC_UNCORRECTABLE_VOLATILE@gpu3") != std::string::npos);
  CHECK(page.find("No bad pair.") != std::string::npos);
  CHECK(page.find("rank 4 was left out of the rounds") != std::string::npos);
}

TEST_CASE("html: a burn-in verdict shows its passes and the first failed one", "[html]") {
  const std::string page = render_fixtures({"node-burnin.json"});
  CHECK(structure_problem(page).empty());
  CHECK(page.find("burn-in: 3 passes, 2 unhealthy, first failed: pass 2") != std::string::npos);
  CHECK(page.find("<h3>Burn-in passes</h3>") != std::string::npos);
  CHECK(test::occurrences(page, "<tr class=\"first-fail\">") == 1);
  CHECK(page.find("3 requested; stopped by repeat; the checks and findings below are those of "
                  "pass 2") != std::string::npos);
  CHECK(page.find("<details><summary>Pass 3: checks and findings</summary>") != std::string::npos);
  // A single run has no pass table.
  CHECK(render_fixtures({"node-8gpu-h100.json"}).find("Burn-in") == std::string::npos);
  // Without first_failed_pass (an older writer), or with a mistyped one, the first pass whose
  // exit code is not 0 is named; a null one means none failed, as the writer said.
  ReportDocument d = load_report_document(fixture("node-burnin.json"));
  d.doc.erase("first_failed_pass");
  CHECK(render_docs({d}).find("first failed: pass 2") != std::string::npos);
  d.doc["first_failed_pass"] = "two";
  CHECK(render_docs({d}).find("first failed: pass 2") != std::string::npos);
  d.doc["passes"][1]["exit_code"] = 0;  // pass 2 warned without --strict
  CHECK(render_docs({d}).find("3 passes, 1 unhealthy, first failed: pass 3") != std::string::npos);
  d.doc["first_failed_pass"] = nullptr;
  CHECK(render_docs({d}).find("none failed") != std::string::npos);
}

TEST_CASE("html: hostile text from the documents stays text", "[html]") {
  const std::string page = render_fixtures({"hostile-node.json", "hostile-fleet.json"});
  INFO(structure_problem(page));
  CHECK(structure_problem(page).empty());
  CHECK(test::occurrences(page, "<script") == 1);
  CHECK(test::occurrences(page, "<style") == 1);
  CHECK(test::occurrences(page, "<h1") == 1);
  CHECK(test::occurrences(page, "<img") == 0);
  CHECK(test::occurrences(page, "<link") == 1);  // the empty icon
  CHECK(page.find("onmouseover='") == std::string::npos);
  CHECK(page.find("&lt;script&gt;document.body.setAttribute(&#39;data-&#39;+&#39;pwned&#39;") !=
        std::string::npos);
  CHECK(page.find("Tom &amp; Jerry &amp;amp; &amp;lt;b&amp;gt;") != std::string::npos);
  // Control characters become U+FFFD; the rest of the text is kept.
  CHECK(page.find("bell\xEF\xBF\xBD nul\xEF\xBF\xBD esc\xEF\xBF\xBD[31m") != std::string::npos);
  CHECK(page.find(std::string("\0", 1)) == std::string::npos);
  // A hostile status or outcome gets the neutral colour, never a class made of its text.
  CHECK(page.find("class=\"badge t-muted\" title=\"fail&lt;script&gt;") != std::string::npos);
  CHECK(page.find("class=\"drill\"") != std::string::npos);
}

TEST_CASE("html: documents of odd shapes render with '-' instead of failing", "[html]") {
  const std::vector<Json> nodes = {
      Json::object(),
      Json::parse(R"({"schema": "preflight.verdict/1"})"),
      Json::parse(R"({"host": 42, "verdict": null, "exit_code": "1", "checks": {"a": 1},
                      "findings": "none", "system": [], "duration_s": "3 s", "argv": "run"})"),
      Json::parse(R"({"checks": [1, "two", null, [], {"name": null, "status": 3,
                      "duration_s": null, "findings": [null, 5, {"value": "high",
                      "threshold": null, "injected": "yes"}], "metrics": [1, 2],
                      "matrices": {"x": 1}}]})"),
      Json::parse(R"({"checks": [{"name": "nvlink", "matrices": [
                      {"name": "empty", "unit": "GB/s", "labels": [], "values": []},
                      {"name": "nonsquare", "labels": ["a", "b", "c"],
                       "values": [[1, 2], [3, null, 5, 6], "row", [null]]},
                      {"name": "labels only", "labels": ["a", "b"]},
                      {"name": "all null", "labels": ["a"], "values": [[null]]},
                      {"name": "strings", "labels": [1, 2], "values": [["x", {}], [[], true]]},
                      {"name": "negative", "labels": ["a", "b"], "values": [[-5, 0], [5, 1e308]]},
                      7]}]})"),
      Json::parse(R"({"checks": [{"name": "gemm", "metrics": {
                      "gpu0.bf16.tflops_median": null, "gpu1.bf16.tflops_median": "fast",
                      "gpu2.bf16.tflops_median": 700.0, "gpu2.bf16.tflops_min": 800.0,
                      "gpu2.bf16.tflops_max": 600.0, "bf16.node_median_tflops": null,
                      "gpu.bf16.tflops_median": 1, "gpu99999999999999.bf16.tflops_median": 1,
                      "gpux.tflops_median": 1, "gpu3.": 1, ".node_median_tflops": 2}}]})"),
      Json::parse(R"({"passes": {"index": 1}, "first_failed_pass": 1})"),
      Json::parse(R"({"passes": [null, 3, {"index": "one", "verdict": 5, "checks": "x"}],
                      "first_failed_pass": 2.5})"),
      Json::parse(
          R"({"system": {"gpus": [null, {"index": "0", "name": 5}], "driver_version": 1}})"),
  };
  for (const Json& doc : nodes) {
    INFO(doc.dump());
    std::string page;
    REQUIRE_NOTHROW(page = render_docs({node_doc(doc)}));
    CHECK(structure_problem(page).empty());
    CHECK(page.find("</html>") != std::string::npos);
  }
  const std::vector<Json> fleets = {
      Json::object(),
      Json::parse(R"({"nodes": "six", "rounds": 3, "faulty": {}, "exclude": 5,
                      "bound_reached": "yes", "group_size": 2.5, "notes": [1, null]})"),
      Json::parse(R"({"nodes": [null, 1, {"rank": "0", "host": null, "reasons": "slow",
                      "local": {"figures": [1], "findings": "x", "exit_code": 1.5}}],
                      "rounds": [null, {"index": 1, "groups": null},
                      {"groups": [null, {"ranks": "0,1", "busbw_gbps": "fast"},
                      {"ranks": [0, "1", null], "outcome": null}]}],
                      "bad_pairs": [null, {"ranks": [1], "hosts": [null, 2]}],
                      "stragglers": [null, {"rank": null}]})"),
  };
  for (const Json& doc : fleets) {
    INFO(doc.dump());
    std::string page;
    REQUIRE_NOTHROW(page = render_docs({fleet_doc(doc)}));
    CHECK(structure_problem(page).empty());
  }
  // What the shapes above show.
  const std::string broken = render_docs({node_doc(nodes[2])});
  CHECK(broken.find("node (no host name)") != std::string::npos);
  CHECK(broken.find("<span class=\"badge t-muted\">-</span>") != std::string::npos);
  CHECK(broken.find("<td class=\"num\">-</td>") != std::string::npos);  // exit code "1"
  CHECK(broken.find("No checks recorded.") != std::string::npos);
  const std::string matrices = render_docs({node_doc(nodes[4])});
  CHECK(matrices.find("Empty matrix.") != std::string::npos);
  CHECK(matrices.find("nothing measured") != std::string::npos);
  CHECK(test::occurrences(matrices, "<table class=\"heat\">") == 5);
  const std::string bars = render_docs({node_doc(nodes[5])});
  CHECK(test::occurrences(bars, "<div class=\"bar-row\">") ==
        3);  // gpu0..2; the odd keys are metrics
  CHECK(bars.find("<span class=\"bar-value\">- TFLOP/s</span>") != std::string::npos);
}

TEST_CASE("html: NaN and infinity in a document built in memory show as '-'", "[html]") {
  Json doc = Json::parse(R"({"host": "n1", "verdict": "pass", "checks": [{"name": "gemm",
      "metrics": {}, "matrices": [{"name": "m", "unit": "GB/s", "labels": ["a", "b"],
      "values": [[null, 1.0], [2.0, null]]}]}]})");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  doc["duration_s"] = nan;
  doc["checks"][0]["metrics"]["gpu0.bf16.tflops_median"] = inf;
  doc["checks"][0]["metrics"]["other"] = nan;
  doc["checks"][0]["matrices"][0]["values"][0][1] = inf;
  std::string page;
  REQUIRE_NOTHROW(page = render_docs({node_doc(doc)}));
  CHECK(page.find(">nan") == std::string::npos);
  CHECK(page.find(">inf") == std::string::npos);
  CHECK(page.find("took - ") == std::string::npos);
  CHECK(page.find("took -</span>") != std::string::npos);
  CHECK(test::occurrences(page, "<td class=\"null\">-</td>") == 3);
}

TEST_CASE("html: heat-map colours follow the matrix's own scale from zero", "[html]") {
  CHECK(html::heat_style(0.0) == "background:#a50026;color:#ffffff");
  CHECK(html::heat_style(0.5) == "background:#d73027;color:#ffffff");
  CHECK(html::heat_style(0.8) == "background:#fee08b;color:#1f2328");
  CHECK(html::heat_style(1.0) == "background:#1a9850;color:#1f2328");
  CHECK(html::heat_style(0.97) == "background:#3ca359;color:#1f2328");
  CHECK(html::heat_gradient() ==
        "linear-gradient(to right,#a50026 0%,#d73027 50%,#fee08b 80%,#1a9850 100%)");
  CHECK(html::heat_style(-3.0) == html::heat_style(0.0));
  CHECK(html::heat_style(std::numeric_limits<double>::quiet_NaN()) == html::heat_style(0.0));
  const Json doc = Json::parse(R"({"checks": [{"name": "x", "matrices": [
      {"name": "a", "labels": ["p", "q"], "values": [[null, 400], [200, null]]},
      {"name": "b", "labels": ["p", "q"], "values": [[null, 4], [2, null]]}]}]})");
  const std::string page = render_docs({node_doc(doc)});
  // Scaled per matrix: 400 of 400 and 4 of 4 get the same colour, as do 200 and 2.
  CHECK(test::occurrences(page, "style=\"" + html::heat_style(1.0) + "\"") == 2);
  CHECK(test::occurrences(page, "style=\"" + html::heat_style(0.5) + "\"") == 2);
  CHECK(page.find("title=\"q to p: 200\">200</td>") != std::string::npos);
}

TEST_CASE("html: a GPU's bars take the colour of its gemm findings for their dtype", "[html]") {
  const Json doc = Json::parse(R"({"checks": [{"name": "gemm", "metrics": {
      "gpu0.bf16.tflops_median": 700, "gpu1.bf16.tflops_median": 600,
      "gpu0.fp64.tflops_median": 50, "gpu1.fp64.tflops_median": 50},
      "findings": [
        {"severity": "warn", "entity": "gpu1", "message": "bf16: 14.3% slower"},
        {"severity": "fail", "entity": "gpu0", "message": "cudaErrorIllegalAddress in setup"},
        {"severity": "info", "entity": "gpu1", "message": "fp64: fine"}]}]})");
  const std::string page = render_docs({node_doc(doc)});
  // gpu0: a finding without a dtype colours both bars red; gpu1: amber for bf16 only.
  CHECK(test::occurrences(page, "<span class=\"bar t-bad\"") == 2);
  CHECK(test::occurrences(page, "<span class=\"bar t-warn\"") == 1);
  CHECK(test::occurrences(page, "<span class=\"bar t-info\"") == 1);
}

TEST_CASE("html: a drill is flagged beside the verdict in the summary and in a banner", "[html]") {
  ReportDocument d = load_report_document(fixture("node-8gpu-h100.json"));
  CHECK(render_docs({d}).find("class=\"drill\"") == std::string::npos);
  d.doc["injected_faults"] = Json::array({"nvlink-slow:0.4@pair=2-5"});
  std::string page = render_docs({d});
  CHECK(page.find("t-bad\">fail</span> <span class=\"drill\"") != std::string::npos);
  CHECK(page.find("<strong>Drill:</strong> this run injected faults: "
                  "<code>nvlink-slow:0.4@pair=2-5</code>") != std::string::npos);
  // A finding marked injected is enough, even if the list of specs was lost.
  d.doc["injected_faults"] = Json::array();
  d.doc["checks"][3]["findings"][0]["injected"] = true;
  page = render_docs({d});
  CHECK(test::occurrences(page, "class=\"drill\"") == 3);  // summary, banner, the finding
}

TEST_CASE("html: a matrix larger than any node's is cut with a note", "[html]") {
  Json labels = Json::array();
  Json row = Json::array();
  for (int i = 0; i < 200; ++i) {
    labels.push_back("n" + std::to_string(i));
    row.push_back(1.0);
  }
  Json doc = {{"checks",
               {{{"name", "x"},
                 {"matrices",
                  {{{"name", "big"}, {"labels", labels}, {"values", Json::array({row, row})}}}}}}}};
  const std::string page = render_docs({node_doc(doc)});
  CHECK(page.find("Showing 128 of 200 rows and 128 of 200 columns.") != std::string::npos);
  CHECK(test::occurrences(page, "<tr><th>n") == 128);
  CHECK(page.find("<th>n127</th></tr>") != std::string::npos);
}

namespace {

void collect_pointers(const Json& value, const Json::json_pointer& at,
                      std::vector<Json::json_pointer>& out) {
  out.push_back(at);
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      collect_pointers(it.value(), at / it.key(), out);
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) collect_pointers(value[i], at / i, out);
  }
}

}  // namespace

TEST_CASE("html: any field of any fixture replaced by a value of another type still renders",
          "[html]") {
  // Deterministic: the same replacements on every run, so a failure can be reproduced.
  const std::vector<Json> replacements = {nullptr,
                                          "text",
                                          1.5,
                                          -3,
                                          true,
                                          Json::array(),
                                          Json::object(),
                                          Json::array({1, "x", nullptr}),
                                          "<b>&amp;</b>\"'",
                                          1e308};
  std::size_t renders = 0;
  for (const std::string name : {"node-8gpu-h100.json", "fleet-6node.json", "node-burnin.json",
                                 "hostile-node.json", "hostile-fleet.json"}) {
    const ReportDocument original = load_report_document(fixture(name));
    std::vector<Json::json_pointer> pointers;
    collect_pointers(original.doc, Json::json_pointer(), pointers);
    // Every 3rd node, each with the next replacement in turn: all levels and types get hit.
    for (std::size_t i = 1; i < pointers.size(); i += 3) {
      ReportDocument d = original;
      d.doc.at(pointers[i]) = replacements[i % replacements.size()];
      INFO(name << " " << pointers[i].to_string() << " = " << d.doc.at(pointers[i]).dump());
      std::string page;
      REQUIRE_NOTHROW(page = render_docs({d}));
      REQUIRE(structure_problem(page).empty());
      ++renders;
    }
  }
  CHECK(renders > 500);
}
