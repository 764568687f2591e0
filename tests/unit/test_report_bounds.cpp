// `preflight report` on documents that are broken or hostile (docs/report.md#limits):
// parse_report_document refuses what the tree could not hold (nesting, numbers beyond a double)
// with InvalidInput naming the document; whatever it accepts renders with every renderer
// without throwing; and the page keeps its caps, each with a line saying what it left out.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "preflight/errors.hpp"
#include "report/linear_json.hpp"
#include "report/report_documents.hpp"
#include "support/builtin_figures.hpp"
#include "support/text_search.hpp"

using namespace preflight;
using Json = nlohmann::ordered_json;

namespace {

// `levels` brackets in all around the value of duration_s, the document's own brace included.
std::string nested_verdict(int levels) {
  return R"({"schema": "preflight.verdict/1", "duration_s": )" + std::string(levels - 1, '[') +
         "1" + std::string(levels - 1, ']') + "}";
}

HtmlReportOptions options() {
  return {"2026-11-22T04:00:00Z", "0.1.0", test::builtin_figures()};
}

std::string render(const ReportDocument& d, const HtmlReportOptions& o = options()) {
  return render_html_report({d}, o);
}

// The message of the InvalidInput that parse_report_document throws; fails the test when it
// throws anything else or nothing.
std::string refusal(const std::string& text, const std::string& origin = "doc.json") {
  try {
    parse_report_document(text, origin);
  } catch (const InvalidInput& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("not InvalidInput: " << e.what());
  }
  FAIL("accepted: " << text.substr(0, 200));
  return "";
}

Json node_verdict() {
  return Json{{"schema", "preflight.verdict/1"}, {"host", "gpu-a017"}, {"verdict", "fail"}};
}

ReportDocument parsed(const Json& doc, const std::string& origin = "big.json") {
  return parse_report_document(doc.dump(), origin);
}

}  // namespace

TEST_CASE("report bounds: a document nested deeper than 64 levels is refused before parsing") {
  // 60000 levels crashed `report --format tsv` (dump() recursed) before the bound.
  const std::string message = refusal(nested_verdict(60000), "deep.json");
  CHECK_THAT(message, Catch::Contains("deep.json: nesting deeper than 64 levels"));
  CHECK(refusal(nested_verdict(65)).find("nesting deeper than 64 levels") != std::string::npos);
  // 64 levels are a document, and every renderer takes it.
  const ReportDocument d = parse_report_document(nested_verdict(64), "deep64.json");
  CHECK(d.kind == DocumentKind::node_verdict);
  CHECK(d.path == "deep64.json");
  const std::string tsv = report_fields_tsv(d);
  CHECK_THAT(tsv, Catch::Contains("duration_s\t[[[["));
  CHECK_THAT(render(d), Catch::EndsWith("</html>\n"));
  // Brackets inside strings are text, not nesting.
  CHECK_NOTHROW(parse_report_document(
      R"({"schema": "preflight.verdict/1", "reason": ")" + std::string(1000, '[') + "\"}", "s"));
}

TEST_CASE("report bounds: a number beyond a double is bad input, not an internal error") {
  // nlohmann throws out_of_range.406 here, which escaped as exit 3 before.
  const std::string message =
      refusal(R"({"schema": "preflight.verdict/1", "duration_s": 1e400})", "big.json");
  CHECK_THAT(message, Catch::StartsWith("report: big.json: "));
  CHECK_THAT(message, Catch::Contains("number overflow"));
  CHECK(message.find('\n') == std::string::npos);
  CHECK_THAT(refusal(R"({"schema": "preflight.fleet/1", "nodes": [{"rank": -1e999}]})"),
             Catch::Contains("number overflow"));
  // The rest of what a parser refuses, each one line naming the document.
  CHECK_THAT(refusal("{\"schema\": ", "cut.json"), Catch::Contains("cut.json: not JSON ("));
  CHECK_THAT(refusal(""), Catch::Contains("doc.json: not JSON"));
  CHECK_THAT(refusal(R"({"schema": "preflight.verdict/1", "host": "\ud800"})"),
             Catch::Contains("not JSON"));
  CHECK_THAT(refusal("[1, 2]"), Catch::Contains("not a JSON object"));
  CHECK_THAT(refusal(R"({"schema": ["preflight.verdict/1"]})"), Catch::Contains("unknown schema"));
  // A hostile name stays one line.
  CHECK(refusal("{", "evil\nname").find('\n') == std::string::npos);
}

TEST_CASE("report bounds: fields of any type render with every renderer, never throwing") {
  const std::vector<std::string> values = {"null",
                                           "0",
                                           "-1.5",
                                           "18446744073709551615",
                                           "1e308",
                                           "[]",
                                           "{}",
                                           R"([1, "x", null, [[]], {}])",
                                           R"({"a": {"b": [1]}})",
                                           R"("\u0000<b>\t")"};
  const std::vector<std::string> node_fields = {
      "host",       "verdict", "exit_code",         "reason",
      "started_at", "profile", "duration_s",        "tool",
      "argv",       "system",  "findings",          "checks",
      "passes",     "burnin",  "first_failed_pass", "injected_faults"};
  const std::vector<std::string> fleet_fields = {
      "nodes",     "rounds",  "faulty", "stragglers", "ambiguous",
      "bad_pairs", "exclude", "notes",  "transport",  "local_profile"};
  // Nested shapes: arrays of non-objects, objects where strings belong, keys of the charts.
  const std::vector<std::string> inner = {
      R"("checks": [1, "x", null, {"name": ["gemm"], "status": {}, "findings": [1, [2]],
          "metrics": [1], "matrices": {"x": 1}}])",
      R"("checks": [{"name": "gemm", "metrics": {"gpu999999999.bf16.tflops_median": "7",
          "gpu0.bf16.tflops_median": 1e308, "gpu0.bf16.tflops_min": -1e308,
          "gpu0.bf16.tflops_max": [], "bf16.node_median_tflops": {}}, "findings": [
          {"severity": "fail", "entity": 5, "message": ["bf16: x"]},
          {"severity": "warn", "entity": "gpu0", "message": "bf16:"}]}])",
      R"("checks": [{"name": "nvlink", "matrices": [{"labels": [1, null, "a"],
          "values": [1, [null, "x", 1e308, -1e308], {}]}, {"labels": "ab", "values": [[]]}]}])",
      R"("passes": [1, null, {"checks": {"a": 1}, "findings": "x", "index": 1e300}])",
      R"("system": {"gpus": [{"index": 1e300, "name": {}}, 7], "driver_version": []})",
  };
  std::vector<std::string> documents;
  for (const std::string& v : values) {
    for (const std::string& f : node_fields) {
      documents.push_back(R"({"schema": "preflight.verdict/1", ")" + f + "\": " + v + "}");
    }
    for (const std::string& f : fleet_fields) {
      documents.push_back(R"({"schema": "preflight.fleet/1", ")" + f + "\": " + v + "}");
    }
  }
  for (const std::string& shape : inner) {
    documents.push_back(R"({"schema": "preflight.verdict/1", )" + shape + "}");
  }
  documents.push_back(R"({"schema": "preflight.fleet/1", "nodes": [1, {"reasons": [[1]],
      "local": {"findings": {}, "figures": {"a": "b", "c": [1]}}}], "rounds": [{"groups":
      [1, {"ranks": [1e300, "x", -1]}]}], "bad_pairs": [{"ranks": 1, "hosts": [{}]}]})");
  for (const std::string& text : documents) {
    INFO(text);
    ReportDocument d;
    REQUIRE_NOTHROW(d = parse_report_document(text, "odd.json"));
    CHECK_NOTHROW(report_fields_tsv(d));
    std::string page;
    CHECK_NOTHROW(page = render(d));
    CHECK_THAT(page, Catch::EndsWith("</html>\n"));
  }
}

TEST_CASE("report bounds: 100000 findings render in bounded time and size, worst first") {
  // A million took 10 s and made a 253 MB page before the caps; a tenth of that is enough to
  // show the caps and the order, and stays well inside ctest's 60 s in the sanitizer builds
  // (a million took over 60 s under ASan). Quadratic rendering would still take hours.
  std::string text = R"({"schema": "preflight.verdict/1", "verdict": "fail", "findings": [)";
  for (int i = 0; i < 100000; ++i) {
    text += R"({"severity": "info", "code": "C)" + std::to_string(i) + "\"},";
  }
  text += R"({"severity": "fail", "code": "THE_FAILURE", "message": "last"}]})";
  const ReportDocument d = parse_report_document(text, "many.json");
  const auto start = std::chrono::steady_clock::now();
  const std::string page = render(d);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // A tenth of a second on one idle core. The margin is for the sanitizer builds (TSan runs
  // 5-15x slower) on a loaded machine.
  CHECK(seconds < 50.0);
  CHECK(page.size() < std::size_t{2} << 20);
  CHECK(test::occurrences(page, "<td class=\"mono\">C") == kReportMaxTableRows - 1);
  CHECK(page.find("THE_FAILURE") < page.find(">C0<"));  // the fail row first, then the order
  CHECK_THAT(page, Catch::Contains("99001 more not shown: at most 1000 here and 64 MiB per page"));
}

TEST_CASE("report bounds: every table stops at its row limit and says how many it left out") {
  Json doc = node_verdict();
  Json checks = Json::array();
  for (int i = 0; i < 30; ++i) {
    checks.push_back({{"name", "check" + std::to_string(i)},
                      {"status", "pass"},
                      {"metrics", {{"m" + std::to_string(i), i}}},
                      {"findings", Json::array({{{"severity", "warn"}, {"code", "W"}}})}});
  }
  doc["checks"] = checks;
  Json gpus = Json::array();
  for (int i = 0; i < 30; ++i) gpus.push_back({{"index", i}, {"name", "H100"}});
  doc["system"] = {{"gpus", gpus}};
  Json passes = Json::array();
  for (int i = 1; i <= 30; ++i) passes.push_back({{"index", i}, {"checks", checks}});
  doc["passes"] = passes;
  HtmlReportOptions small = options();
  small.max_table_rows = 10;
  const std::string page = render(parsed(doc), small);
  // The checks table, the findings, the GPUs, the passes and the metrics, each cut at 10.
  CHECK(test::occurrences(page, "20 more not shown: at most 10 here") >= 5);
  CHECK(test::occurrences(page, "<details><summary>Pass ") == 10);
  CHECK(test::occurrences(page, "<details><summary>Metrics: ") == 10);
  CHECK_THAT(page, Catch::EndsWith("</html>\n"));

  // A fleet's node table has a limit of its own.
  Json fleet = {{"schema", "preflight.fleet/1"}};
  Json nodes = Json::array();
  for (int i = 0; i < 12; ++i) nodes.push_back({{"rank", i}, {"host", "n" + std::to_string(i)}});
  fleet["nodes"] = nodes;
  small.max_fleet_nodes = 5;
  const std::string fleet_page = render(parsed(fleet), small);
  CHECK_THAT(fleet_page, Catch::Contains("7 more not shown: at most 5 here"));
}

TEST_CASE("report bounds: the page stops near its size limit, whatever the document holds") {
  // 128 labels of 20 kB: each is in every cell's tooltip of its row and column, a page of
  // several hundred MB before the caps.
  Json labels = Json::array();
  for (int i = 0; i < 128; ++i) labels.push_back(std::to_string(i) + std::string(20000, 'x'));
  Json doc = node_verdict();
  Json values = Json::array();
  for (int i = 0; i < 128; ++i) values.push_back(Json(std::vector<double>(128, 1.0)));
  doc["checks"] = Json::array(
      {{{"name", "nvlink"},
        {"matrices", Json::array({{{"name", "bw"}, {"labels", labels}, {"values", values}}})}}});
  HtmlReportOptions small = options();
  small.max_page_bytes = std::size_t{1} << 20;
  const ReportDocument d = parsed(doc);
  const std::string page = render_html_report({d, d}, small);
  CHECK(page.size() < std::size_t{3} << 20);
  CHECK_THAT(page, Catch::Contains("the page reached its size limit"));
  CHECK_THAT(page, Catch::Contains("1 more not shown in detail: the page reached its size limit "
                                   "of 1 MiB"));
  CHECK_THAT(page, Catch::EndsWith("</html>\n"));
  // With the default limit the labels are cut, not the page.
  const std::string full = render(d);
  CHECK(full.size() < kReportMaxPageBytes + (std::size_t{4} << 20));
  CHECK_THAT(full, Catch::Contains("more bytes not shown]"));
  CHECK_THAT(full, Catch::Contains(" of 128 rows and 128 of 128 columns: the page reached its "
                                   "size limit."));

  // One text is cut at 16 KiB and says so.
  Json message = node_verdict();
  message["reason"] = std::string(1000000, '<');
  const std::string cut = render(parsed(message));
  CHECK(cut.size() < 1000000);
  CHECK_THAT(cut, Catch::Contains("983616 more bytes not shown]"));
}

TEST_CASE("report bounds: per-GPU bars of many groups stay linear and capped") {
  // Every metric its own dtype, every finding against a GPU: the colour lookups were a scan of
  // every group per finding and of every metric per bar.
  // Written as text: an ordered_json built key by key is itself quadratic.
  std::string metrics, findings;
  for (int i = 0; i < 20000; ++i) {
    const std::string gpu = "gpu" + std::to_string(i % 8);
    const std::string dtype = "t" + std::to_string(i);
    metrics += (i ? "," : "") + ("\"" + gpu + "." + dtype + ".tflops_median\": ") +
               std::to_string(100 + i % 7) + ",\"" + gpu + "." + dtype + ".tflops_min\": 90";
    findings += (i ? "," : "") + (R"({"severity": "warn", "entity": ")" + gpu +
                                  R"(", "message": ")" + dtype + R"(: slow"})");
  }
  const ReportDocument d = parse_report_document(
      R"({"schema": "preflight.verdict/1", "checks": [{"name": "gemm", "metrics": {)" + metrics +
          R"(}, "findings": [)" + findings + "]}]}",
      "bars.json");
  const auto start = std::chrono::steady_clock::now();
  const std::string page = render(d);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 120.0);  // about 0.1 s on one idle core; margin for sanitizer builds under load
  CHECK(test::occurrences(page, "<div class=\"bar-row\">") == kReportMaxTableRows);
  CHECK_THAT(page, Catch::Contains("19000 more not shown: at most 1000 here"));
  CHECK(test::occurrences(page, "<span class=\"bar t-warn\"") == kReportMaxTableRows);
}

TEST_CASE("report bounds: the parse is linear in the keys of an object and gives parse()'s tree") {
  // ordered_json::parse searched the keys before each new one: 200000 keys took 30 s.
  std::string text = R"({"schema": "preflight.verdict/1", "checks": [{"name": "x", "metrics": {)";
  for (int i = 0; i < 200000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\": 1";
  text += "}}]}";
  const auto start = std::chrono::steady_clock::now();
  const ReportDocument d = parse_report_document(text, "keys.json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 120.0);  // 0.15 s on one idle core, 30 s quadratic; margin for sanitizers
  CHECK(d.doc["checks"][0]["metrics"].size() == 200000);
  CHECK(d.doc["checks"][0]["metrics"].begin().key() == "k0");

  // The same tree as ordered_json::parse: order, duplicate keys (first place, last value),
  // every type, and the fixtures and goldens of the repository.
  std::vector<std::string> texts = {
      R"({"b": 1, "a": [1, -2, 3.5, 18446744073709551615, true, null, "s", {}, []], "b": 2})",
      R"([{"k": {"k": {"k": [[], {}]}}}, "\u00e9\ud83d\ude00"])", "17", "\"x\"", "null"};
  std::string many_duplicates = "{";
  for (int i = 0; i < 100; ++i)
    many_duplicates +=
        "\"d" + std::to_string(i % 40) + "\": " + std::to_string(i) + (i < 99 ? "," : "}");
  texts.push_back(many_duplicates);
  for (const char* file :
       {"tests/report/data/node-8gpu-h100.json", "tests/report/data/fleet-6node.json",
        "tests/report/data/node-burnin.json", "tests/report/data/hostile-node.json",
        "tests/report/data/hostile-fleet.json", "tests/unit/golden/node.json"}) {
    std::ifstream in(std::string(PREFLIGHT_SOURCE_DIR) + "/" + file);
    REQUIRE(in);
    std::ostringstream all;
    all << in.rdbuf();
    texts.push_back(all.str());
  }
  for (const std::string& t : texts) {
    INFO(t.substr(0, 200));
    CHECK(parse_ordered_json(t).dump() == Json::parse(t).dump());
  }
  CHECK_THROWS_AS(parse_ordered_json("{\"a\": 1e400}"), nlohmann::json::out_of_range);
  CHECK_THROWS_AS(parse_ordered_json("{\"a\": }"), nlohmann::json::parse_error);
  CHECK_THROWS_AS(parse_ordered_json("{} x"), nlohmann::json::parse_error);
}
