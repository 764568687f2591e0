// `preflight judge` without hardware: a verdict written, read back and judged again.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "checks/common/findings.hpp"
#include "checks/hbm/hbm_findings.hpp"
#include "checks/inventory/inventory_findings.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "report/report.hpp"
#include "report/verdict_reader.hpp"
#include "run/rejudge.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;

namespace {

// A check whose readings are one temperature per GPU, judged like the inventory's rule, plus
// an observation (HBM_PATTERN_MISMATCH) that no threshold can undo.
class ThermoCheck : public Check {
 public:
  ThermoCheck() {
    info_.name = "thermo";
    FaultKindSpec hot;
    hot.kind = "hot";
    hot.targets = {TargetType::gpu};
    hot.description = "pretend hot";
    hot.codes = {"TEMPERATURE_HIGH"};
    info_.fault_kinds = {hot};
    info_.findings = {&inventory_findings(), &hbm_findings(), &shared_findings()};
  }
  const CheckInfo& info() const override { return info_; }
  CheckResult run(CheckContext&) const override { return {}; }
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override {
    std::vector<Finding> out;
    const double warn = thresholds.get("inventory.temperature_warn_c");
    const double fail = thresholds.get("inventory.temperature_fail_c");
    for (const auto& [gpu, temperature] : readings.at("temperature_c").items()) {
      const double t = temperature.get<double>();
      if (t >= fail) {
        out.push_back(make_finding(inventory_findings(), "TEMPERATURE_CRITICAL", gpu, "too hot")
                          .measured(t, "C", fail));
      } else if (t >= warn) {
        out.push_back(make_finding(inventory_findings(), "TEMPERATURE_HIGH", gpu, "hot")
                          .measured(t, "C", warn));
      }
    }
    return out;
  }

 private:
  CheckInfo info_;
};

// A check that records no readings.
class OpaqueCheck : public Check {
 public:
  OpaqueCheck() { info_.name = "opaque"; }
  const CheckInfo& info() const override { return info_; }
  CheckResult run(CheckContext&) const override { return {}; }

 private:
  CheckInfo info_;
};

CheckRegistry registry() {
  CheckRegistry r;
  r.add(std::make_unique<ThermoCheck>());
  r.add(std::make_unique<OpaqueCheck>());
  return r;
}

Thresholds thresholds_with_warn(double warn_c) {
  Thresholds t = preflight::test::builtin_thresholds(find_sku("h100-sxm5-80gb"), "test");
  t.apply_overrides(R"({"inventory": {"temperature_fail_c": 100, "temperature_warn_c": )" +
                        std::to_string(warn_c) + "}}",
                    "test");
  return t;
}

// A verdict as `run` writes it: thermo judged with a warning limit of 80 C (gpu1 at 82 C), an
// observation on gpu0, and an opaque check that failed.
Verdict recorded() {
  Verdict v;
  v.tool.version = "0.1.0";
  v.host = "node01";
  v.started_at = "2026-11-25T03:00:00Z";
  v.profile = "quick";
  v.system.gpus.push_back({0, "NVIDIA H100 80GB HBM3", "GPU-0", "00000000:1B:00.0", "1"});
  CheckResult thermo;
  thermo.name = "thermo";
  thermo.readings = Readings::object();
  thermo.readings["temperature_c"] = {{"gpu0", 60.0}, {"gpu1", 82.0}};
  thermo.findings.push_back(
      make_finding(hbm_findings(), "HBM_PATTERN_MISMATCH", "gpu0", "bad words"));
  const Thresholds t = thresholds_with_warn(80);
  auto judged = ThermoCheck().judge(thermo.readings, t);
  for (auto& f : *judged) {
    f.judged = true;
    thermo.findings.push_back(f);
  }
  thermo.status = status_from_findings(thermo.findings);
  thermo.add_metric("gpu0", "temperature_c", 60, "C");
  v.checks.push_back(thermo);
  CheckResult opaque;
  opaque.name = "opaque";
  opaque.findings.push_back(
      make_finding(inventory_findings(), "TEMPERATURE_CRITICAL", "gpu0", "recorded"));
  opaque.status = Status::fail;
  v.checks.push_back(opaque);
  v.thresholds = record_of(t);
  aggregate(v, false);
  return v;
}

Verdict judged_with(const Verdict& v, const Thresholds& t, bool strict = false) {
  RejudgeSettings s;
  s.thresholds = &t;
  s.thresholds_by = "test";
  s.source = "node01.json";
  s.judged_at = "2026-11-26T00:00:00Z";
  s.strict = strict;
  s.fault_kinds = registry().fault_kinds();
  return rejudge(v, registry(), s);
}

std::vector<std::string> codes_of(const CheckResult& c) {
  std::vector<std::string> out;
  for (const auto& f : c.findings) out.push_back(f.code + "@" + f.entity);
  return out;
}

std::string temp_path(const std::string& name) {
  return "/tmp/preflight-test-rejudge-" + std::to_string(::getpid()) + "-" + name;
}

}  // namespace

TEST_CASE("rejudge: the thresholds a run was judged with give the same findings") {
  const Verdict v = recorded();
  std::vector<std::string> unknown;
  const Thresholds same = thresholds_from_record(preflight::test::builtin_threshold_specs(),
                                                 *v.thresholds, "node01.json", unknown);
  CHECK(unknown.empty());
  const Verdict again = judged_with(v, same);
  REQUIRE(again.checks.size() == 2);
  CHECK(codes_of(again.checks[0]) == codes_of(v.checks[0]));
  CHECK(again.checks[0].status == Status::fail);  // the observation fails it
  CHECK(again.verdict == v.verdict);
  CHECK(again.exit_code == v.exit_code);
  REQUIRE(again.rejudged);
  CHECK(again.rejudged->checks_rejudged == 1);
  CHECK(again.rejudged->checks_kept == std::vector<std::string>{"opaque"});
}

TEST_CASE("rejudge: judged findings follow new thresholds, observations stay") {
  const Verdict v = recorded();
  const Verdict looser = judged_with(v, thresholds_with_warn(90));
  CHECK(codes_of(looser.checks[0]) == std::vector<std::string>{"HBM_PATTERN_MISMATCH@gpu0"});
  const Verdict tighter = judged_with(v, thresholds_with_warn(50));
  CHECK(codes_of(tighter.checks[0]) == std::vector<std::string>{"HBM_PATTERN_MISMATCH@gpu0",
                                                                "TEMPERATURE_HIGH@gpu0",
                                                                "TEMPERATURE_HIGH@gpu1"});
  for (const auto& f : tighter.checks[0].findings) {
    CHECK(f.judged == (f.code == "TEMPERATURE_HIGH"));
  }
  // The check without readings keeps its finding and its status.
  CHECK(codes_of(tighter.checks[1]) == std::vector<std::string>{"TEMPERATURE_CRITICAL@gpu0"});
  CHECK(tighter.checks[1].status == Status::fail);
}

TEST_CASE("rejudge: a check's status and the node's verdict are made again") {
  Verdict v = recorded();
  v.checks[0].findings.erase(v.checks[0].findings.begin());  // no observation left
  v.checks.pop_back();                                       // no opaque failure
  v.checks[0].status = status_from_findings(v.checks[0].findings);
  aggregate(v, false);
  CHECK(v.verdict == Status::warn);
  const Verdict cool = judged_with(v, thresholds_with_warn(95));
  CHECK(cool.checks[0].status == Status::pass);
  CHECK(cool.verdict == Status::pass);
  CHECK(cool.exit_code == kExitHealthy);
  const Verdict strict = judged_with(v, thresholds_with_warn(50), true);
  CHECK(strict.verdict == Status::warn);
  CHECK(strict.exit_code == kExitUnhealthy);
}

TEST_CASE("rejudge: skipped checks and unexplained errors are left as recorded") {
  Verdict v = recorded();
  v.checks[0].status = Status::skip;
  CHECK(judged_with(v, thresholds_with_warn(50)).checks[0].findings.size() == 2);
  v = recorded();
  v.checks[0].findings.clear();
  v.checks[0].findings.push_back(make_finding(runner_findings(), "CHECK_ERROR", "node", "threw"));
  v.checks[0].status = Status::error;
  const Verdict again = judged_with(v, thresholds_with_warn(95));
  CHECK(again.checks[0].status == Status::error);
  CHECK(codes_of(again.checks[0]) == std::vector<std::string>{"CHECK_ERROR@node"});
}

TEST_CASE("rejudge: a failure that blames the tool's installation still does once read back") {
  Verdict v = recorded();
  CheckResult& thermo = v.checks[0];
  thermo.findings.clear();
  thermo.readings["temperature_c"] = {{"gpu0", 60.0}, {"gpu1", 60.0}};
  Finding missing = make_finding(shared_findings(), "TOOL_LIBRARY_MISSING", "node", "no cuBLAS");
  missing.blame = Blame::node;  // as read back: a verdict does not record whom a finding blames
  thermo.findings.push_back(missing);
  thermo.status = Status::error;
  const Verdict same = judged_with(v, thresholds_with_warn(80));
  CHECK(same.checks[0].status == Status::error);
  REQUIRE(same.checks[0].findings.size() == 1);
  CHECK(same.checks[0].findings[0].blame == Blame::tool);
  // A node fault judged beside it: the node fails (exit 1), which an error of the tool's
  // installation alone would not make it.
  thermo.readings["temperature_c"] = {{"gpu0", 60.0}, {"gpu1", 100.0}};
  const Verdict hot = judged_with(v, thresholds_with_warn(80));
  CHECK(codes_of(hot.checks[0]) ==
        std::vector<std::string>{"TOOL_LIBRARY_MISSING@node", "TEMPERATURE_CRITICAL@gpu1"});
  CHECK(hot.checks[0].status == Status::fail);
}

TEST_CASE("rejudge: findings of a recorded injected fault are marked injected again") {
  Verdict v = recorded();
  v.injected_faults = {"hot@gpu=0"};
  const Verdict again = judged_with(v, thresholds_with_warn(50));
  for (const auto& f : again.checks[0].findings) {
    if (f.code == "TEMPERATURE_HIGH") CHECK(f.injected == (f.entity == "gpu0"));
  }
}

TEST_CASE("rejudge: every pass of a repeated run is judged again") {
  Verdict v = recorded();
  v.checks[0].findings.erase(v.checks[0].findings.begin());
  v.checks.pop_back();
  for (int i = 1; i <= 2; ++i) {
    PassRecord p;
    p.index = i;
    p.checks = v.checks;
    p.checks[0].readings["temperature_c"]["gpu1"] = i == 1 ? 60.0 : 82.0;
    v.passes.push_back(p);
  }
  const Verdict again = judged_with(v, thresholds_with_warn(80));
  CHECK(again.passes[0].verdict == Status::pass);
  CHECK(again.passes[1].verdict == Status::warn);
  CHECK(again.first_failed_pass == std::nullopt);  // a warning is healthy without --strict
  const Verdict strict = judged_with(v, thresholds_with_warn(80), true);
  CHECK(strict.first_failed_pass == 2);
}

TEST_CASE("verdict reader: a written verdict reads back and writes the same document") {
  Verdict v = recorded();
  v.checks[0].matrices.push_back({"unidirectional_gbps",
                                  "GB/s",
                                  {"gpu0", "gpu1"},
                                  {{std::nullopt, 100.5}, {99.0, std::nullopt}}});
  v.burnin = BurninInfo{3, std::nullopt, 1, "repeat", 1};
  PassRecord p;
  p.checks = v.checks;
  v.passes.push_back(p);
  v.injected_faults = {"hot@gpu=0"};
  const std::string text = verdict_to_json_text(v);
  const Verdict back = verdict_from_json(nlohmann::ordered_json::parse(text), "x.json");
  CHECK(verdict_to_json_text(back) == text);
  const Verdict again = judged_with(v, thresholds_with_warn(80));
  const std::string judged_text = verdict_to_json_text(again);
  CHECK(verdict_to_json_text(verdict_from_json(nlohmann::ordered_json::parse(judged_text),
                                               "y.json")) == judged_text);
}

TEST_CASE("verdict reader: the node's action is read back; absent, worked out from the findings") {
  using nlohmann::ordered_json;
  Verdict v;
  CheckResult c;
  c.name = "inventory";
  c.findings.push_back(
      make_finding(inventory_findings(), "ROW_REMAP_PENDING", "gpu1", "1 row pending"));
  c.status = status_from_findings(c.findings);
  v.checks.push_back(c);
  aggregate(v, false);
  REQUIRE(v.action == Action::reset_gpu);
  ordered_json doc = ordered_json::parse(verdict_to_json_text(v));
  CHECK(verdict_from_json(doc, "v.json").action == Action::reset_gpu);
  // A verdict's own word is kept, even where its findings would say otherwise.
  doc["action"] = "reboot";
  CHECK(verdict_from_json(doc, "v.json").action == Action::reboot);
  // A verdict of a version before the field: the same rule as aggregate's.
  doc.erase("action");
  CHECK(verdict_from_json(doc, "v.json").action == Action::reset_gpu);
  doc["action"] = "restart";
  CHECK_THROWS_WITH(verdict_from_json(doc, "v.json"), "v.json: action: unknown action \"restart\"");
}

TEST_CASE("verdict reader: bad documents are one line naming the file and the field") {
  using nlohmann::ordered_json;
  const auto message = [](const std::string& text) {
    try {
      verdict_from_json(ordered_json::parse(text), "v.json");
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(message(R"({"schema": "preflight.fleet/1"})").find("v.json: schema: expected") == 0);
  CHECK(message(R"([1])") == "v.json: top level: expected an object, got array");
  CHECK(message(R"({"schema": "preflight.verdict/1", "verdict": "pass", "checks": [{"name": "x",
      "status": "great"}]})") == "v.json: checks[0].status: unknown status \"great\"");
  CHECK(message(R"({"schema": "preflight.verdict/1", "verdict": "pass", "checks": [{"name": "x",
      "status": "pass", "findings": [{"code": 7}]}]})")
            .find("v.json: checks[0].findings[0].code: expected a string, got 7") == 0);
}

TEST_CASE("verdict reader: files are read with bounds") {
  const std::string dir = temp_path("dir");
  ::mkdir(dir.c_str(), 0700);
  CHECK_THROWS_WITH(load_verdict_file(dir), Catch::Contains("is a directory"));
  ::rmdir(dir.c_str());

  const std::string fifo = temp_path("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opened without blocking and refused: a FIFO must not hang the tool.
  CHECK_THROWS_WITH(load_verdict_file(fifo), Catch::Contains("not a regular file"));
  ::unlink(fifo.c_str());

  const std::string deep = temp_path("deep.json");
  {
    std::ofstream out(deep);
    out << "{\"schema\": \"preflight.verdict/1\", \"x\": " << std::string(100000, '[')
        << std::string(100000, ']') << "}";
  }
  CHECK_THROWS_WITH(load_verdict_file(deep), Catch::Contains("nesting deeper than 64 levels"));
  {
    std::ofstream out(deep);
    out << R"({"schema": "preflight.verdict/1", "duration_s": 1e400})";
  }
  CHECK_THROWS_AS(load_verdict_file(deep), InvalidInput);
  ::unlink(deep.c_str());
  CHECK_THROWS_WITH(load_verdict_file(temp_path("absent.json")), Catch::Contains("cannot open"));
}

TEST_CASE("rejudge: thresholds from a record of another version report unknown keys") {
  ThresholdsRecord r = *recorded().thresholds;
  r.values.emplace_back("gemm.retired_key", 1.0);
  std::vector<std::string> unknown;
  const Thresholds t =
      thresholds_from_record(preflight::test::builtin_threshold_specs(), r, "old.json", unknown);
  CHECK(unknown == std::vector<std::string>{"gemm.retired_key"});
  CHECK(t.get("inventory.temperature_warn_c") == 80);
  CHECK(t.sku_id() == "h100-sxm5-80gb");
}
