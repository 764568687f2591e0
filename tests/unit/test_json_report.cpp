#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "checks/inventory/inventory_findings.hpp"
#include "preflight/catalogue.hpp"
#include "report/report.hpp"

using namespace preflight;
using SortedJson = nlohmann::json;

namespace {

Verdict sample_verdict() {
  Verdict v;
  v.tool.version = "0.1.0";
  v.tool.git = "abc";
  v.host = "node01";
  v.started_at = "2026-11-22T03:00:00Z";
  v.duration_s = 1.23456;
  v.profile = "quick";
  v.argv = {"preflight", "run"};
  v.system.driver_version = "580.65.06";
  v.system.gpus.push_back({0, "NVIDIA H100 80GB HBM3", "GPU-1", "00000000:1B:00.0", "123"});
  CheckResult c;
  c.name = "inventory";
  c.status = Status::fail;
  c.summary = "1 x H100";
  c.findings.push_back(
      make_finding(inventory_findings(), "TEMPERATURE_CRITICAL", "gpu0", "90 C at idle")
          .measured(90, "C", 85));
  c.findings.push_back(make_finding(inventory_findings(), "MIG_ENABLED", "gpu0", "MIG mode is on"));
  c.add_metric("", "gpu_count", 1, "count");
  c.add_metric("gpu0", "temperature_c", 90, "C");
  c.add_metric("", "broken", std::nan(""), "count");
  v.checks.push_back(c);
  aggregate(v, false);
  return v;
}

}  // namespace

TEST_CASE("json: the verdict has every documented key with the documented type") {
  const SortedJson j = SortedJson::parse(verdict_to_json_text(sample_verdict()));
  CHECK(j["schema"] == "preflight.verdict/1");
  CHECK(j["tool"]["name"] == "preflight");
  CHECK(j["tool"]["version"].is_string());
  CHECK(j["tool"]["git"].is_string());
  CHECK(j["host"] == "node01");
  CHECK(j["started_at"] == "2026-11-22T03:00:00Z");
  CHECK(j["duration_s"].is_number());
  CHECK(j["duration_s"].get<double>() == Approx(1.235));
  CHECK(j["profile"] == "quick");
  CHECK(j["argv"].is_array());
  for (const char* key : {"driver_version", "cuda_driver", "cuda_runtime", "nccl"}) {
    CHECK(j["system"][key].is_string());
  }
  const SortedJson& gpu = j["system"]["gpus"][0];
  CHECK(gpu["index"] == 0);
  for (const char* key : {"name", "uuid", "pci_bus_id", "serial"}) CHECK(gpu[key].is_string());
  CHECK(j["verdict"] == "fail");
  CHECK(j["exit_code"] == 1);
  CHECK(j["reason"].is_string());
  // The heaviest of TEMPERATURE_CRITICAL (service) and MIG_ENABLED (reset_gpu).
  CHECK(j["action"] == "service");
  CHECK(j["injected_faults"].is_array());
  CHECK(j["findings"].is_array());

  const SortedJson& check = j["checks"][0];
  CHECK(check["name"] == "inventory");
  CHECK(check["status"] == "fail");
  CHECK(check["duration_s"].is_number());
  CHECK(check["summary"].is_string());
  CHECK(check["skip_reason"].is_string());
  const SortedJson& f = check["findings"][0];
  CHECK(f["code"] == "TEMPERATURE_CRITICAL");
  CHECK(f["severity"] == "fail");
  CHECK(f["entity"] == "gpu0");
  CHECK(f["value"] == 90);
  CHECK(f["unit"] == "C");
  CHECK(f["threshold"] == 85);
  CHECK(f["remediation"].is_string());
  CHECK(f["action"] == "service");
  CHECK(check["findings"][1]["action"] == "reset_gpu");
  CHECK(f["injected"] == false);
  CHECK(check["findings"][1]["value"].is_null());
  CHECK(check["findings"][1]["threshold"].is_null());
  CHECK(check["metrics"]["gpu_count"] == 1);
  CHECK(check["metrics"]["gpu0.temperature_c"].is_number());
  CHECK(check["metrics"]["broken"].is_null());  // never NaN, never a string
  CHECK(check["matrices"] == SortedJson::array());
}

TEST_CASE("json: a matrix has numbers, and null on the diagonal and where not measured") {
  Verdict v = sample_verdict();
  Matrix m;
  m.name = "unidirectional_gbps";
  m.unit = "GB/s";
  m.labels = {"gpu0", "gpu1", "gpu2"};
  m.values = {{std::nullopt, 371.5, 370.0},
              {368.25, std::nullopt, std::nullopt},
              {369.0, std::numeric_limits<double>::quiet_NaN(), std::nullopt}};
  v.checks[0].matrices.push_back(m);
  const auto j = SortedJson::parse(verdict_to_json_text(v));
  const SortedJson& out = j["checks"][0]["matrices"][0];
  CHECK(out["name"] == "unidirectional_gbps");
  CHECK(out["unit"] == "GB/s");
  CHECK(out["labels"] == SortedJson({"gpu0", "gpu1", "gpu2"}));
  CHECK(out["values"][0][0].is_null());
  CHECK(out["values"][0][1] == 371.5);  // a JSON number, never a string
  CHECK(out["values"][1][0] == 368.25);
  CHECK(out["values"][1][2].is_null());
  CHECK(out["values"][2][1].is_null());  // not finite
}

TEST_CASE("json: top-level keys come in the documented order") {
  const auto j = nlohmann::ordered_json::parse(verdict_to_json_text(sample_verdict()));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  const std::vector<std::string> expected = {"schema",
                                             "tool",
                                             "host",
                                             "started_at",
                                             "duration_s",
                                             "profile",
                                             "argv",
                                             "system",
                                             "verdict",
                                             "exit_code",
                                             "reason",
                                             "action",
                                             "injected_faults",
                                             "findings",
                                             "checks",
                                             "burnin",
                                             "passes",
                                             "first_failed_pass",
                                             "thresholds",
                                             "rejudged",
                                             "learned",
                                             "plan"};
  CHECK(keys == expected);
}

TEST_CASE("json: invalid UTF-8 from a driver string does not break the document") {
  Verdict v = sample_verdict();
  v.system.gpus[0].name = "bad \xff\xfe name";
  const std::string text = verdict_to_json_text(v);
  CHECK_NOTHROW(SortedJson::parse(text));
}

TEST_CASE(
    "text: the table lists checks and failing findings with remediation, no colour off a TTY") {
  const std::string text = verdict_to_text(sample_verdict(), TextStyle{});
  CHECK_THAT(text, Catch::Contains("inventory"));
  CHECK_THAT(text, Catch::Contains("FAIL"));
  CHECK_THAT(text, Catch::Contains("TEMPERATURE_CRITICAL"));
  // Each finding's action beside its remediation, the node's (the heaviest) on the verdict line.
  CHECK_THAT(text, Catch::Contains("fix (service): Drain the node"));
  CHECK_THAT(text, Catch::Contains("fix (reset_gpu): Disable MIG"));
  CHECK_THAT(text, Catch::Contains("Verdict: FAIL (exit 1, 1.2s, action service): "));
  CHECK(text.find('\033') == std::string::npos);
  // An action of none is not printed.
  Verdict warned = sample_verdict();
  warned.checks[0].findings = {
      make_finding(inventory_findings(), "PERSISTENCE_MODE_OFF", "gpu0", "persistence off")};
  warned.checks[0].status = Status::warn;
  aggregate(warned, false);
  const std::string plain = verdict_to_text(warned, TextStyle{});
  CHECK_THAT(plain, Catch::Contains("        fix: Run nvidia-persistenced"));
  CHECK_THAT(plain, Catch::Contains("Verdict: WARN (exit 0, 1.2s): "));
  const std::string coloured = verdict_to_text(sample_verdict(), TextStyle{true});
  CHECK(coloured.find('\033') != std::string::npos);
}

TEST_CASE("text: a check's matrix is printed as a grid, '-' where there is no figure") {
  Verdict v = sample_verdict();
  Matrix m;
  m.name = "unidirectional_gbps";
  m.unit = "GB/s";
  m.labels = {"gpu0", "gpu1"};
  m.values = {{std::nullopt, 371.46}, {368.0, std::nullopt}};
  v.checks[0].matrices.push_back(m);
  Matrix empty = m;
  empty.name = "never_measured";
  empty.values = {{std::nullopt, std::nullopt}, {std::nullopt, std::nullopt}};
  v.checks[0].matrices.push_back(empty);
  const std::string text = verdict_to_text(v, TextStyle{});
  CHECK_THAT(text, Catch::Contains("inventory unidirectional_gbps (GB/s), row to column:"));
  CHECK_THAT(text, Catch::Contains("gpu0    -        371.5"));
  CHECK_THAT(text, Catch::Contains("gpu1    368.0    -"));
  CHECK(text.find("never_measured") == std::string::npos);
}
