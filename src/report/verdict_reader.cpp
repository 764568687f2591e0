#include "report/verdict_reader.hpp"

#include "model/bounded_input.hpp"
#include "model/json_fields.hpp"
#include "preflight/errors.hpp"
#include "report/linear_json.hpp"
#include "report/report_documents.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// The same bounds as `preflight report`: both read the verdicts the tool writes.
constexpr std::size_t kMaxVerdictBytes = kMaxReportDocumentBytes;
constexpr int kMaxVerdictNesting = kMaxReportDocumentNesting;

Status status_of(const Fields& f, const char* key) {
  const std::string s = f.text(key);
  for (Status st : {Status::pass, Status::warn, Status::fail, Status::skip, Status::error}) {
    if (s == to_string(st)) return st;
  }
  f.fail(key, "unknown status \"" + printable(s) + "\"");
}

int integer_of(const Fields& f, const char* key, int fallback = 0) {
  return static_cast<int>(f.integer(key, -1000000000, 1000000000).value_or(fallback));
}

Finding finding_of(const Fields& f) {
  Finding out;
  out.code = f.text("code");
  const std::string severity = f.text("severity");
  bool known = false;
  for (Severity s : {Severity::info, Severity::warn, Severity::fail}) {
    if (severity == to_string(s)) {
      out.severity = s;
      known = true;
    }
  }
  if (!known) f.fail("severity", "unknown severity \"" + printable(severity) + "\"");
  out.entity = f.text("entity");
  out.message = f.text("message");
  out.value = f.number("value");
  out.unit = f.text("unit");
  out.threshold = f.number("threshold");
  out.remediation = f.text("remediation");
  // Absent in verdicts of versions before it: the catalogue's, set again by `preflight judge`.
  if (const std::string action = f.text("action"); !action.empty()) {
    const std::optional<Action> parsed = parse_action(action);
    if (!parsed) f.fail("action", "unknown action \"" + printable(action) + "\"");
    out.action = *parsed;
  }
  out.injected = f.flag("injected").value_or(false);
  out.judged = f.flag("judged").value_or(false);
  return out;
}

std::vector<Finding> findings_of(const Fields& f) {
  std::vector<Finding> out;
  for (const Fields& e : f.objects("findings")) out.push_back(finding_of(e));
  return out;
}

Matrix matrix_of(const Fields& m) {
  Matrix matrix;
  matrix.name = m.text("name");
  matrix.unit = m.text("unit");
  matrix.labels = m.texts("labels");
  if (const Json* rows = m.find("values")) {
    if (!rows->is_array()) m.fail("values", "expected an array of rows");
    for (std::size_t i = 0; i < rows->size(); ++i) {
      const Json& row = (*rows)[i];
      if (!row.is_array()) m.fail("values[" + std::to_string(i) + "]", "expected an array");
      std::vector<std::optional<double>> cells;
      for (const Json& cell : row) {
        cells.push_back(cell.is_number() ? std::optional<double>(cell.get<double>())
                                         : std::nullopt);
      }
      matrix.values.push_back(std::move(cells));
    }
  }
  return matrix;
}

CheckResult check_of(const Fields& f) {
  CheckResult c;
  c.name = f.text("name");
  if (c.name.empty()) f.fail("name", "missing");
  c.status = status_of(f, "status");
  c.duration_s = f.number("duration_s").value_or(0);
  c.summary = f.text("summary");
  c.skip_reason = f.text("skip_reason");
  c.findings = findings_of(f);
  if (const auto metrics = f.object("metrics")) {
    for (const auto& [key, value] : f.find("metrics")->items()) {
      // The key is "<entity>.<name>" or a node figure: kept whole as the name, so the
      // document writes it back unchanged.
      if (value.is_number()) c.metrics.push_back({"", key, value.get<double>(), ""});
    }
  }
  for (const Fields& m : f.objects("matrices")) c.matrices.push_back(matrix_of(m));
  if (const Json* readings = f.find("readings")) c.readings = *readings;
  if (const auto p = f.object("plan")) {
    CheckPlanRecord plan;
    plan.expected_s = p->number("expected_s").value_or(0);
    plan.deadline_s = p->number("deadline_s").value_or(0);
    plan.reduced = p->flag("reduced").value_or(false);
    plan.coverage = p->text("coverage");
    plan.rotation_step = integer_of(*p, "rotation_step");
    plan.rotation_steps = integer_of(*p, "rotation_steps", 1);
    plan.covered = p->texts("covered");
    c.plan = std::move(plan);
  }
  return c;
}

std::vector<CheckResult> checks_of(const Fields& f) {
  std::vector<CheckResult> out;
  for (const Fields& c : f.objects("checks")) out.push_back(check_of(c));
  return out;
}

SystemInfo system_of(const Fields& s) {
  SystemInfo system;
  system.driver_version = s.text("driver_version");
  system.cuda_driver = s.text("cuda_driver");
  system.cuda_runtime = s.text("cuda_runtime");
  system.nccl = s.text("nccl");
  for (const Fields& g : s.objects("gpus")) {
    system.gpus.push_back({integer_of(g, "index"), g.text("name"), g.text("uuid"),
                           g.text("pci_bus_id"), g.text("serial")});
  }
  for (const Fields& l : s.objects("libraries")) {
    system.libraries.push_back(
        {l.text("name"), l.text("soname"), l.text("path"), l.text("version"), l.text("problem")});
  }
  return system;
}

PassRecord pass_of(const Fields& p) {
  PassRecord pass;
  // From 1, as first_failed_pass is read back: judge makes that of a pass's index, and a verdict
  // it writes must load again (found by tests/fuzz, target verdict).
  pass.index = static_cast<int>(p.integer("index", 1, 1000000000).value_or(1));
  pass.started_at = p.text("started_at");
  pass.duration_s = p.number("duration_s").value_or(0);
  pass.verdict = status_of(p, "verdict");
  pass.exit_code = integer_of(p, "exit_code");
  pass.reason = p.text("reason");
  pass.findings = findings_of(p);
  pass.checks = checks_of(p);
  return pass;
}

ThresholdsRecord thresholds_of(const Fields& t) {
  ThresholdsRecord record;
  record.sku = t.text("sku");
  record.sku_name = t.text("sku_name");
  record.detected_by = t.text("detected_by");
  record.overrides_file = t.text("overrides_file");
  record.node_shape = t.text("node_shape");
  record.node_shape_by = t.text("node_shape_by");
  if (const auto values = t.object("values")) {
    for (const auto& [key, value] : t.find("values")->items()) {
      if (!value.is_number()) values->fail(key, "expected a number");
      record.values.emplace_back(key, value.get<double>());
    }
  }
  return record;
}

Verdict verdict_of(const Fields& f) {
  const std::string schema = f.text("schema");
  if (schema != kVerdictSchema) {
    f.fail("schema",
           "expected \"" + std::string(kVerdictSchema) + "\", got \"" + printable(schema) + "\"");
  }
  Verdict v;
  if (const auto tool = f.object("tool")) {
    v.tool.name = tool->text("name");
    v.tool.version = tool->text("version");
    v.tool.git = tool->text("git");
  }
  v.host = f.text("host");
  v.started_at = f.text("started_at");
  v.duration_s = f.number("duration_s").value_or(0);
  v.profile = f.text("profile");
  v.argv = f.texts("argv");
  if (const auto system = f.object("system")) v.system = system_of(*system);
  v.verdict = status_of(f, "verdict");
  v.exit_code = integer_of(f, "exit_code");
  v.reason = f.text("reason");
  v.injected_faults = f.texts("injected_faults");
  v.findings = findings_of(f);
  v.checks = checks_of(f);
  // Absent in verdicts of versions before it: the same rule aggregate() follows, from the
  // findings' actions as read.
  if (const std::string action = f.text("action"); !action.empty()) {
    const std::optional<Action> parsed = parse_action(action);
    if (!parsed) f.fail("action", "unknown action \"" + printable(action) + "\"");
    v.action = *parsed;
  } else {
    v.action = node_action(v);
  }
  if (const auto b = f.object("burnin")) {
    BurninInfo info;
    if (const auto requested = b->integer("passes_requested", 0, 1000000000)) {
      info.passes_requested = static_cast<int>(*requested);
    }
    info.duration_requested_s = b->number("duration_requested_s");
    info.passes_run = integer_of(*b, "passes_run");
    info.stopped_by = b->text("stopped_by");
    info.reported_pass = integer_of(*b, "reported_pass");
    v.burnin = info;
  }
  for (const Fields& p : f.objects("passes")) v.passes.push_back(pass_of(p));
  if (const auto first = f.integer("first_failed_pass", 0, 1000000000)) {
    v.first_failed_pass = static_cast<int>(*first);
  }
  if (const auto t = f.object("thresholds")) v.thresholds = thresholds_of(*t);
  if (const auto r = f.object("rejudged")) {
    RejudgeRecord record;
    record.source = r->text("source");
    record.source_tool = r->text("source_tool");
    record.judged_at = r->text("judged_at");
    record.thresholds_by = r->text("thresholds_by");
    record.checks_rejudged = integer_of(*r, "checks_rejudged");
    record.checks_kept = r->texts("checks_kept");
    // Absent in a verdict judged by a version before it: none were.
    record.observations_restored = integer_of(*r, "observations_restored");
    v.rejudged = std::move(record);
  }
  if (const auto l = f.object("learned")) {
    LearnedRecord record;
    record.baseline_group = l->text("baseline_group");
    record.baseline_found = l->flag("baseline_found").value_or(false);
    record.baseline_figures = integer_of(*l, "baseline_figures");
    record.history_dir = l->text("history_dir");
    record.history_runs = integer_of(*l, "history_runs");
    record.history_skipped = l->texts("history_skipped");
    for (const Fields& r : l->objects("regressions")) {
      RegressionRecord reg;
      reg.check = r.text("check");
      reg.entity = r.text("entity");
      reg.metric = r.text("metric");
      reg.unit = r.text("unit");
      reg.current = r.number("current").value_or(0);
      reg.reference = r.number("reference").value_or(0);
      reg.drop = r.number("drop").value_or(0);
      reg.noise = r.number("noise").value_or(0);
      reg.reference_runs = integer_of(r, "reference_runs");
      reg.reference_by = r.text("reference_by");
      reg.regressed = r.flag("regressed").value_or(false);
      record.regressions.push_back(std::move(reg));
    }
    v.learned = std::move(record);
  }
  if (const auto p = f.object("plan")) {
    RunPlanRecord plan;
    plan.timeout_s = p->number("timeout_s").value_or(0);
    plan.timeout_given = p->flag("timeout_given").value_or(false);
    plan.expected_s = p->number("expected_s").value_or(0);
    plan.floor_s = p->number("floor_s").value_or(0);
    plan.gpus = integer_of(*p, "gpus");
    plan.nics = integer_of(*p, "nics");
    plan.reduced = p->flag("reduced").value_or(false);
    plan.rotation = p->count("rotation").value_or(0);
    plan.rotation_from = p->text("rotation_from");
    v.plan = std::move(plan);
  }
  return v;
}

}  // namespace

Verdict verdict_from_json(const Json& document, const std::string& origin) {
  if (!document.is_object()) {
    throw InvalidInput(origin + ": top level: expected an object, got " + document.type_name());
  }
  try {
    return verdict_of(Fields(document, ""));
  } catch (const InvalidInput& e) {
    // Fields names the key path; the file goes in front.
    throw InvalidInput(origin + ": " + e.what());
  }
}

Verdict load_verdict_file(const std::string& path) {
  const std::string text = read_bounded_file(path, kMaxVerdictBytes);
  const std::string name = printable(path);
  if (json_nesting_depth(text, kMaxVerdictNesting) > kMaxVerdictNesting) {
    throw InvalidInput(name + ": nesting deeper than " + std::to_string(kMaxVerdictNesting) +
                       " levels");
  }
  Json document;
  try {
    // Linear in the keys of an object: ordered_json's own parse is quadratic, and a verdict of
    // 200000 metrics kept `judge` busy for minutes.
    document = parse_ordered_json(text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    const std::size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what.erase(0, bracket + 2);
    throw InvalidInput(name + ": not a verdict: " + printable(what, 200));
  }
  return verdict_from_json(document, name);
}

}  // namespace preflight
