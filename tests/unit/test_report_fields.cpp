// `preflight report --format tsv`: what the Slurm hooks and the CI gate read out of a verdict.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "preflight/errors.hpp"
#include "report/report_documents.hpp"

using namespace preflight;

namespace {

std::map<std::string, std::string> fields(const ReportDocument& d) {
  std::map<std::string, std::string> out;
  std::istringstream in(report_fields_tsv(d));
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    REQUIRE(line.find('\t', tab + 1) == std::string::npos);  // one tab: the value is one field
    out[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return out;
}

struct TempFile {
  std::string path;
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/preflight-report-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
};

}  // namespace

TEST_CASE("report fields: a node verdict, with a hostile reason made one line") {
  ReportDocument d;
  d.path = "/var/lib/preflight/last.json";
  d.kind = DocumentKind::node_verdict;
  d.doc = nlohmann::ordered_json::parse(R"({
    "schema": "preflight.verdict/1", "host": "gpu-a017", "started_at": "2026-11-25T03:04:05Z",
    "duration_s": 3.5, "profile": "quick", "verdict": "fail", "exit_code": 1,
    "reason": "inventory: gpu3 X\tY\nZ", "injected_faults": ["hang@check=gemm"]})");
  const auto f = fields(d);
  CHECK(f.at("file") == "/var/lib/preflight/last.json");
  CHECK(f.at("schema") == "preflight.verdict/1");
  CHECK(f.at("kind") == "node");
  CHECK(f.at("host") == "gpu-a017");
  CHECK(f.at("duration_s") == "3.5");
  CHECK(f.at("verdict") == "fail");
  CHECK(f.at("exit_code") == "1");
  CHECK(f.at("reason") == "inventory: gpu3 X Y Z");
  CHECK(f.at("injected") == "1");
  CHECK(f.at("checks_ok").empty());
  CHECK(f.at("checks_failed").empty());
  CHECK(f.count("exclude") == 0);
}

TEST_CASE("report fields: a node verdict lists its checks that passed and failed") {
  ReportDocument d;
  d.path = "v.json";
  d.kind = DocumentKind::node_verdict;
  d.doc = nlohmann::ordered_json::parse(R"({
    "schema": "preflight.verdict/1", "verdict": "fail", "exit_code": 1,
    "checks": [{"name": "inventory", "status": "pass"}, {"name": "gemm", "status": "fail"},
               {"name": "hbm", "status": "warn"}, {"name": "rdma", "status": "skip"},
               {"name": "nccl", "status": "fail"}, {"name": "a,b", "status": "fail"},
               {"name": "x y", "status": "pass"}, {"name": 7, "status": "fail"}, 3,
               {"status": "pass"}]})");
  const auto f = fields(d);
  CHECK(f.at("checks_ok") == "inventory,hbm");
  CHECK(f.at("checks_failed") == "gemm,nccl");
}

TEST_CASE("report fields: a fleet verdict counts its nodes and gives the exclude list") {
  ReportDocument d;
  d.path = "fleet.json";
  d.kind = DocumentKind::fleet_verdict;
  d.doc = nlohmann::ordered_json::parse(R"({
    "schema": "preflight.fleet/1", "local_profile": "quick", "transport": "host",
    "nodes": [{"verdict": "healthy"}, {"verdict": "faulty"}, {"verdict": "healthy"},
              {"verdict": "straggler"}],
    "faulty": [{"rank": 1}], "stragglers": [{"rank": 3}], "ambiguous": [], "bad_pairs": [],
    "exclude": "n1,n3", "injected_faults": [], "verdict": "fail", "reason": "2 nodes",
    "exit_code": 1})");
  const auto f = fields(d);
  CHECK(f.at("kind") == "fleet");
  CHECK(f.at("profile") == "quick");
  CHECK(f.at("nodes") == "4");
  CHECK(f.at("healthy") == "2");
  CHECK(f.at("faulty") == "1");
  CHECK(f.at("stragglers") == "1");
  CHECK(f.at("ambiguous") == "0");
  CHECK(f.at("exclude") == "n1,n3");
  CHECK(f.at("injected") == "0");
  CHECK(f.count("checks_ok") == 0);
}

TEST_CASE("report fields: missing or mistyped fields are empty, never an exception") {
  ReportDocument d;
  d.kind = DocumentKind::fleet_verdict;
  d.doc = nlohmann::ordered_json::parse(R"({"schema": "preflight.fleet/1", "nodes": 3,
                                            "exit_code": null})");
  const auto f = fields(d);
  CHECK(f.at("nodes") == "0");
  CHECK(f.at("exit_code").empty());
  CHECK(f.at("exclude").empty());
}

TEST_CASE("report documents: unreadable, non-JSON and unknown files are bad input") {
  CHECK_THROWS_WITH(load_report_document("/nonexistent/v.json"),
                    Catch::Contains("/nonexistent/v.json: cannot be read"));
  TempFile not_json("{\"schema\": ");
  CHECK_THROWS_WITH(load_report_document(not_json.path), Catch::Contains("not JSON"));
  TempFile array("[1, 2]");
  CHECK_THROWS_WITH(load_report_document(array.path), Catch::Contains("not a JSON object"));
  TempFile other("{\"schema\": \"something/9\"}");
  CHECK_THROWS_WITH(load_report_document(other.path),
                    Catch::Contains("unknown schema 'something/9'"));
  TempFile fleet("{\"schema\": \"preflight.fleet/1\"}");
  CHECK(load_report_document(fleet.path).kind == DocumentKind::fleet_verdict);
}
