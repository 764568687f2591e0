#include <cmath>
#include <nlohmann/json.hpp>

#include "report/report.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// JSON has no NaN or infinity: a non-finite figure becomes null rather than a string.
Json number_or_null(std::optional<double> v) {
  if (!v || !std::isfinite(*v)) return nullptr;
  return *v;
}

Json finding_json(const Finding& f) {
  Json j;
  j["code"] = f.code;
  j["severity"] = std::string(to_string(f.severity));
  j["entity"] = f.entity;
  j["message"] = f.message;
  j["value"] = number_or_null(f.value);
  j["unit"] = f.unit;
  j["threshold"] = number_or_null(f.threshold);
  j["remediation"] = f.remediation;
  j["action"] = std::string(to_string(f.action));
  j["injected"] = f.injected;
  j["judged"] = f.judged;
  return j;
}

Json findings_json(const std::vector<Finding>& findings) {
  Json arr = Json::array();
  for (const auto& f : findings) arr.push_back(finding_json(f));
  return arr;
}

double rounded_ms(double seconds) {
  return std::round(seconds * 1000.0) / 1000.0;
}

Json check_plan_json(const std::optional<CheckPlanRecord>& p) {
  if (!p) return nullptr;
  return {{"expected_s", rounded_ms(p->expected_s)},
          {"deadline_s", rounded_ms(p->deadline_s)},
          {"reduced", p->reduced},
          {"coverage", p->coverage},
          {"rotation_step", p->rotation_step},
          {"rotation_steps", p->rotation_steps},
          {"covered", p->covered}};
}

Json run_plan_json(const std::optional<RunPlanRecord>& p) {
  if (!p) return nullptr;
  return {{"timeout_s", rounded_ms(p->timeout_s)},
          {"timeout_given", p->timeout_given},
          {"expected_s", rounded_ms(p->expected_s)},
          {"floor_s", rounded_ms(p->floor_s)},
          {"gpus", p->gpus},
          {"nics", p->nics},
          {"reduced", p->reduced},
          {"rotation", p->rotation},
          {"rotation_from", p->rotation_from}};
}

Json checks_json(const std::vector<CheckResult>& results) {
  Json checks = Json::array();
  for (const auto& c : results) {
    Json cj;
    cj["name"] = c.name;
    cj["status"] = std::string(to_string(c.status));
    cj["duration_s"] = rounded_ms(c.duration_s);
    cj["summary"] = c.summary;
    cj["skip_reason"] = c.skip_reason;
    cj["findings"] = findings_json(c.findings);
    Json metrics = Json::object();
    for (const Metric& m : c.metrics) metrics[m.key()] = number_or_null(m.value);
    cj["metrics"] = metrics;
    Json matrices = Json::array();
    for (const Matrix& m : c.matrices) {
      Json rows = Json::array();
      for (const auto& row : m.values) {
        Json cells = Json::array();
        for (const auto& cell : row) cells.push_back(number_or_null(cell));
        rows.push_back(std::move(cells));
      }
      matrices.push_back(
          {{"name", m.name}, {"unit", m.unit}, {"labels", m.labels}, {"values", rows}});
    }
    cj["matrices"] = matrices;
    cj["readings"] = c.readings;
    cj["plan"] = check_plan_json(c.plan);
    checks.push_back(std::move(cj));
  }
  return checks;
}

Json burnin_json(const std::optional<BurninInfo>& b) {
  if (!b) return nullptr;
  Json j;
  j["passes_requested"] = b->passes_requested ? Json(*b->passes_requested) : Json(nullptr);
  j["duration_requested_s"] = number_or_null(b->duration_requested_s);
  j["passes_run"] = b->passes_run;
  j["stopped_by"] = b->stopped_by;
  j["reported_pass"] = b->reported_pass;
  return j;
}

Json thresholds_json(const std::optional<ThresholdsRecord>& t) {
  if (!t) return nullptr;
  Json values = Json::object();
  for (const auto& [key, value] : t->values) values[key] = number_or_null(value);
  return {{"sku", t->sku},
          {"sku_name", t->sku_name},
          {"detected_by", t->detected_by},
          {"overrides_file", t->overrides_file},
          {"node_shape", t->node_shape.empty() ? Json() : Json(t->node_shape)},
          {"node_shape_by", t->node_shape_by},
          {"values", values}};
}

Json rejudged_json(const std::optional<RejudgeRecord>& r) {
  if (!r) return nullptr;
  return {{"source", r->source},
          {"source_tool", r->source_tool},
          {"judged_at", r->judged_at},
          {"thresholds_by", r->thresholds_by},
          {"checks_rejudged", r->checks_rejudged},
          {"checks_kept", r->checks_kept},
          {"observations_restored", r->observations_restored}};
}

Json learned_json(const std::optional<LearnedRecord>& l) {
  if (!l) return nullptr;
  Json regressions = Json::array();
  for (const RegressionRecord& r : l->regressions) {
    regressions.push_back({{"check", r.check},
                           {"entity", r.entity},
                           {"metric", r.metric},
                           {"unit", r.unit},
                           {"current", r.current},
                           {"reference", r.reference},
                           {"drop", r.drop},
                           {"noise", r.noise},
                           {"reference_runs", r.reference_runs},
                           {"reference_by", r.reference_by},
                           {"regressed", r.regressed}});
  }
  return {{"baseline_group", l->baseline_group.empty() ? Json() : Json(l->baseline_group)},
          {"baseline_found", l->baseline_found},
          {"baseline_figures", l->baseline_figures},
          {"history_dir", l->history_dir.empty() ? Json() : Json(l->history_dir)},
          {"history_runs", l->history_runs},
          {"history_skipped", l->history_skipped},
          {"regressions", regressions}};
}

}  // namespace

std::string verdict_to_json_text(const Verdict& v) {
  Json j;
  j["schema"] = std::string(kVerdictSchema);
  j["tool"] = {{"name", v.tool.name}, {"version", v.tool.version}, {"git", v.tool.git}};
  j["host"] = v.host;
  j["started_at"] = v.started_at;
  j["duration_s"] = rounded_ms(v.duration_s);
  j["profile"] = v.profile;
  j["argv"] = v.argv;

  Json gpus = Json::array();
  for (const auto& g : v.system.gpus) {
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"uuid", g.uuid},
                    {"pci_bus_id", g.pci_bus_id},
                    {"serial", g.serial}});
  }
  Json libraries = Json::array();
  for (const auto& l : v.system.libraries) {
    libraries.push_back({{"name", l.name},
                         {"soname", l.soname},
                         {"path", l.path},
                         {"version", l.version},
                         {"problem", l.problem}});
  }
  j["system"] = {{"driver_version", v.system.driver_version},
                 {"cuda_driver", v.system.cuda_driver},
                 {"cuda_runtime", v.system.cuda_runtime},
                 {"nccl", v.system.nccl},
                 {"gpus", gpus},
                 {"libraries", libraries}};

  j["verdict"] = std::string(to_string(v.verdict));
  j["exit_code"] = v.exit_code;
  j["reason"] = v.reason;
  j["action"] = std::string(to_string(v.action));
  j["injected_faults"] = v.injected_faults;
  j["findings"] = findings_json(v.findings);

  j["checks"] = checks_json(v.checks);
  j["burnin"] = burnin_json(v.burnin);
  Json passes = Json::array();
  for (const PassRecord& p : v.passes) {
    Json pj;
    pj["index"] = p.index;
    pj["started_at"] = p.started_at;
    pj["duration_s"] = rounded_ms(p.duration_s);
    pj["verdict"] = std::string(to_string(p.verdict));
    pj["exit_code"] = p.exit_code;
    pj["reason"] = p.reason;
    pj["findings"] = findings_json(p.findings);
    pj["checks"] = checks_json(p.checks);
    passes.push_back(std::move(pj));
  }
  j["passes"] = passes;
  j["first_failed_pass"] = v.first_failed_pass ? Json(*v.first_failed_pass) : Json(nullptr);
  j["thresholds"] = thresholds_json(v.thresholds);
  j["rejudged"] = rejudged_json(v.rejudged);
  j["learned"] = learned_json(v.learned);
  j["plan"] = run_plan_json(v.plan);
  // Replace invalid UTF-8 (a GPU name from a broken driver) instead of throwing.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace preflight
