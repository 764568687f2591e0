#include "report/verdict_reader.hpp"

#include <functional>

#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kMaxVerdictBytes = std::size_t{64} << 20;
constexpr int kMaxVerdictNesting = 64;

// Reads fields of one JSON object, each checked for its type; problems name the key path.
class Fields {
 public:
  Fields(const Json& object, std::string path, const std::string& origin)
      : object_(object), path_(std::move(path)), origin_(origin) {
    if (!object_.is_object()) bad("", std::string("expected an object, got ") + object_.type_name());
  }

  std::string text(const char* key) const {
    const Json* v = find(key, "a string", &Json::is_string);
    return v ? v->get<std::string>() : std::string();
  }
  double number(const char* key, double fallback = 0) const {
    const Json* v = find(key, "a number", &Json::is_number);
    return v ? v->get<double>() : fallback;
  }
  std::optional<double> optional_number(const char* key) const {
    const Json* v = find(key, "a number", &Json::is_number);
    return v ? std::optional<double>(v->get<double>()) : std::nullopt;
  }
  int integer(const char* key, int fallback = 0) const {
    const Json* v = find(key, "an integer", &Json::is_number_integer);
    return v ? v->get<int>() : fallback;
  }
  bool boolean(const char* key) const {
    const Json* v = find(key, "true or false", &Json::is_boolean);
    return v && v->get<bool>();
  }
  // The array at `key` (empty when absent or null), each element handed to `each`.
  void array(const char* key, const std::function<void(const Json&, const std::string&)>& each) const {
    const Json* v = find(key, "an array", &Json::is_array);
    if (!v) return;
    for (std::size_t i = 0; i < v->size(); ++i) {
      each((*v)[i], at(key) + "[" + std::to_string(i) + "]");
    }
  }
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    array(key, [&](const Json& e, const std::string& p) {
      if (!e.is_string()) throw InvalidInput(origin_ + ": " + p + ": expected a string");
      out.push_back(e.get<std::string>());
    });
    return out;
  }
  const Json* object(const char* key) const { return find(key, "an object", &Json::is_object); }
  const Json* raw(const char* key) const {
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  std::string at(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  [[noreturn]] void bad(const std::string& key, const std::string& problem) const {
    const std::string where = key.empty() ? (path_.empty() ? "top level" : path_) : at(key);
    throw InvalidInput(origin_ + ": " + printable(where) + ": " + problem);
  }

 private:
  // nullptr when absent or null; throws when present with another type.
  const Json* find(const char* key, const char* what, bool (Json::*is)() const noexcept) const {
    const auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    if (!((*it).*is)()) bad(key, std::string("expected ") + what + ", got " + it->type_name());
    return &*it;
  }

  const Json& object_;
  std::string path_;
  const std::string& origin_;
};

Status status_of(const Fields& f, const char* key) {
  const std::string s = f.text(key);
  for (Status st : {Status::pass, Status::warn, Status::fail, Status::skip, Status::error}) {
    if (s == to_string(st)) return st;
  }
  f.bad(key, "unknown status \"" + printable(s) + "\"");
}

Finding finding_of(const Json& j, const std::string& path, const std::string& origin) {
  const Fields f(j, path, origin);
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
  if (!known) f.bad("severity", "unknown severity \"" + printable(severity) + "\"");
  out.entity = f.text("entity");
  out.message = f.text("message");
  out.value = f.optional_number("value");
  out.unit = f.text("unit");
  out.threshold = f.optional_number("threshold");
  out.remediation = f.text("remediation");
  out.injected = f.boolean("injected");
  out.judged = f.boolean("judged");
  return out;
}

std::vector<Finding> findings_of(const Fields& f, const std::string& origin) {
  std::vector<Finding> out;
  f.array("findings", [&](const Json& e, const std::string& p) {
    out.push_back(finding_of(e, p, origin));
  });
  return out;
}

CheckResult check_of(const Json& j, const std::string& path, const std::string& origin) {
  const Fields f(j, path, origin);
  CheckResult c;
  c.name = f.text("name");
  if (c.name.empty()) f.bad("name", "missing");
  c.status = status_of(f, "status");
  c.duration_s = f.number("duration_s");
  c.summary = f.text("summary");
  c.skip_reason = f.text("skip_reason");
  c.findings = findings_of(f, origin);
  if (const Json* metrics = f.object("metrics")) {
    for (const auto& [key, value] : metrics->items()) {
      // The key is "<entity>.<name>" or a node figure: kept whole as the name, so the
      // document writes it back unchanged.
      if (value.is_number()) c.metrics.push_back({"", key, value.get<double>(), ""});
    }
  }
  f.array("matrices", [&](const Json& e, const std::string& p) {
    const Fields m(e, p, origin);
    Matrix matrix;
    matrix.name = m.text("name");
    matrix.unit = m.text("unit");
    matrix.labels = m.strings("labels");
    m.array("values", [&](const Json& row, const std::string& rp) {
      if (!row.is_array()) throw InvalidInput(origin + ": " + rp + ": expected an array");
      std::vector<std::optional<double>> cells;
      for (const Json& cell : row) {
        cells.push_back(cell.is_number() ? std::optional<double>(cell.get<double>())
                                         : std::nullopt);
      }
      matrix.values.push_back(std::move(cells));
    });
    c.matrices.push_back(std::move(matrix));
  });
  if (const Json* readings = f.raw("readings")) c.readings = *readings;
  return c;
}

std::vector<CheckResult> checks_of(const Fields& f, const std::string& origin) {
  std::vector<CheckResult> out;
  f.array("checks", [&](const Json& e, const std::string& p) {
    out.push_back(check_of(e, p, origin));
  });
  return out;
}

}  // namespace

Verdict verdict_from_json(const Json& document, const std::string& origin) {
  const Fields f(document, "", origin);
  const std::string schema = f.text("schema");
  if (schema != kVerdictSchema) {
    f.bad("schema", "expected \"" + std::string(kVerdictSchema) + "\", got \"" +
                        printable(schema) + "\"");
  }
  Verdict v;
  if (const Json* tool = f.object("tool")) {
    const Fields t(*tool, "tool", origin);
    v.tool.name = t.text("name");
    v.tool.version = t.text("version");
    v.tool.git = t.text("git");
  }
  v.host = f.text("host");
  v.started_at = f.text("started_at");
  v.duration_s = f.number("duration_s");
  v.profile = f.text("profile");
  v.argv = f.strings("argv");
  if (const Json* system = f.object("system")) {
    const Fields s(*system, "system", origin);
    v.system.driver_version = s.text("driver_version");
    v.system.cuda_driver = s.text("cuda_driver");
    v.system.cuda_runtime = s.text("cuda_runtime");
    v.system.nccl = s.text("nccl");
    s.array("gpus", [&](const Json& e, const std::string& p) {
      const Fields g(e, p, origin);
      v.system.gpus.push_back(
          {g.integer("index"), g.text("name"), g.text("uuid"), g.text("pci_bus_id"),
           g.text("serial")});
    });
    s.array("libraries", [&](const Json& e, const std::string& p) {
      const Fields l(e, p, origin);
      v.system.libraries.push_back({l.text("name"), l.text("soname"), l.text("path"),
                                    l.text("version"), l.text("problem")});
    });
  }
  v.verdict = status_of(f, "verdict");
  v.exit_code = f.integer("exit_code");
  v.reason = f.text("reason");
  v.injected_faults = f.strings("injected_faults");
  v.findings = findings_of(f, origin);
  v.checks = checks_of(f, origin);
  if (const Json* burnin = f.object("burnin")) {
    const Fields b(*burnin, "burnin", origin);
    BurninInfo info;
    if (b.raw("passes_requested") && !b.raw("passes_requested")->is_null()) {
      info.passes_requested = b.integer("passes_requested");
    }
    info.duration_requested_s = b.optional_number("duration_requested_s");
    info.passes_run = b.integer("passes_run");
    info.stopped_by = b.text("stopped_by");
    info.reported_pass = b.integer("reported_pass");
    v.burnin = info;
  }
  f.array("passes", [&](const Json& e, const std::string& p) {
    const Fields pf(e, p, origin);
    PassRecord pass;
    pass.index = pf.integer("index", 1);
    pass.started_at = pf.text("started_at");
    pass.duration_s = pf.number("duration_s");
    pass.verdict = status_of(pf, "verdict");
    pass.exit_code = pf.integer("exit_code");
    pass.reason = pf.text("reason");
    pass.findings = findings_of(pf, origin);
    pass.checks = checks_of(pf, origin);
    v.passes.push_back(std::move(pass));
  });
  if (f.raw("first_failed_pass") && !f.raw("first_failed_pass")->is_null()) {
    v.first_failed_pass = f.integer("first_failed_pass");
  }
  if (const Json* thresholds = f.object("thresholds")) {
    const Fields t(*thresholds, "thresholds", origin);
    ThresholdsRecord record;
    record.sku = t.text("sku");
    record.sku_name = t.text("sku_name");
    record.detected_by = t.text("detected_by");
    record.overrides_file = t.text("overrides_file");
    if (const Json* values = t.object("values")) {
      for (const auto& [key, value] : values->items()) {
        if (!value.is_number()) t.bad("values." + key, "expected a number");
        record.values.emplace_back(key, value.get<double>());
      }
    }
    v.thresholds = std::move(record);
  }
  if (const Json* rejudged = f.object("rejudged")) {
    const Fields r(*rejudged, "rejudged", origin);
    RejudgeRecord record;
    record.source = r.text("source");
    record.source_tool = r.text("source_tool");
    record.judged_at = r.text("judged_at");
    record.thresholds_by = r.text("thresholds_by");
    record.checks_rejudged = r.integer("checks_rejudged");
    record.checks_kept = r.strings("checks_kept");
    v.rejudged = std::move(record);
  }
  return v;
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
    document = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    const std::size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what.erase(0, bracket + 2);
    throw InvalidInput(name + ": not a verdict: " + printable(what, 200));
  }
  return verdict_from_json(document, name);
}

}  // namespace preflight
