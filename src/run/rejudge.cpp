#include "run/rejudge.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "preflight/errors.hpp"
#include "preflight/faults.hpp"
#include "run/runner.hpp"

namespace preflight {

namespace {

// Whether the recorded findings hold this observation: its code on its entity; for one on node
// (readings that cannot say where: nccl's total in a verdict of an older version), its code
// anywhere.
bool holds(const std::vector<Finding>& recorded, const Finding& observation) {
  return std::any_of(recorded.begin(), recorded.end(), [&](const Finding& f) {
    return f.code == observation.code &&
           (f.entity == observation.entity || observation.entity == "node");
  });
}

// One check judged again: its judged findings replaced, its observations kept, and those its
// readings prove but the verdict lacks added (counted in `restored`). false when the check
// cannot judge these readings (the result is left as recorded).
bool rejudge_check(CheckResult& result, const Check& check, const Thresholds& thresholds,
                   const FaultPlan& faults, const std::vector<FaultKindSpec>& kinds,
                   int& restored) {
  if (result.status == Status::skip || result.readings.is_null()) return false;
  std::optional<std::vector<Finding>> judged;
  std::vector<Finding> observed;
  try {
    judged = check.judge(result.readings, thresholds);
    if (judged) observed = check.observe(result.readings);
  } catch (const InvalidInput& e) {
    throw InvalidInput("check " + result.name + ": readings: " + e.what());
  } catch (const std::exception& e) {
    // nlohmann's type_error and out_of_range for a field of the wrong type or missing.
    throw InvalidInput("check " + result.name + ": readings: " + e.what());
  }
  if (!judged) return false;
  // An error that no finding explains (the check threw) is not the thresholds' to undo.
  const bool unexplained_error =
      result.status == Status::error && status_from_findings(result.findings) != Status::error;
  std::vector<Finding> findings;
  for (Finding& f : result.findings) {
    if (!f.judged) findings.push_back(std::move(f));
  }
  // An observation the readings prove (corrupted data, a transfer that failed) is a fault
  // whatever was removed from the verdict: one the recorded findings lack is made again, after
  // those kept (the run reports observations before judged findings). Held against the recorded
  // ones only: two collectives that both failed are two findings of one code and entity. Marked
  // injected below when a recorded drill made it.
  std::vector<Finding> missing;
  for (Finding& o : observed) {
    if (holds(findings, o)) continue;
    o.judged = false;
    missing.push_back(std::move(o));
  }
  restored += static_cast<int>(missing.size());
  for (Finding& o : missing) findings.push_back(std::move(o));
  for (Finding& f : *judged) {
    f.judged = true;
    findings.push_back(std::move(f));
  }
  result.findings = std::move(findings);
  mark_injected(result, faults, kinds);
  if (!unexplained_error) result.status = status_from_findings(result.findings);
  return true;
}

FaultPlan recorded_faults(const Verdict& v, const std::vector<FaultKindSpec>& kinds) {
  std::vector<InjectedFault> faults;
  for (const std::string& spec : v.injected_faults) {
    try {
      faults.push_back(parse_fault(spec, kinds));
    } catch (const std::exception&) {
      // A kind this version does not know: its findings keep the marks they were recorded with.
    }
  }
  return FaultPlan(std::move(faults));
}

}  // namespace

ThresholdsRecord record_of(const Thresholds& thresholds) {
  ThresholdsRecord r;
  r.sku = thresholds.sku_id();
  r.sku_name = thresholds.sku_name();
  r.detected_by = thresholds.detected_by();
  r.overrides_file = thresholds.overrides_file();
  if (const MachineShape* shape = thresholds.node_shape()) {
    r.node_shape = shape->id;
    r.node_shape_by = thresholds.node_shape_by();
  }
  for (const ThresholdSpec& spec : thresholds.specs()) {
    r.values.emplace_back(std::string(spec.key), thresholds.get(spec.key));
  }
  return r;
}

Thresholds thresholds_from_record(std::shared_ptr<const ThresholdSpecs> specs,
                                  const ThresholdsRecord& record, const std::string& origin,
                                  std::vector<std::string>& unknown) {
  Thresholds thresholds =
      Thresholds::for_sku(std::move(specs), find_sku(record.sku), record.detected_by);
  nlohmann::ordered_json document = nlohmann::ordered_json::object();
  for (const auto& [key, value] : record.values) {
    const std::size_t dot = key.find('.');
    if (thresholds.find_spec(key) == nullptr || dot == std::string::npos) {
      unknown.push_back(key);
      continue;
    }
    document[key.substr(0, dot)][key.substr(dot + 1)] = value;
  }
  thresholds.apply_overrides(document.dump(), origin + ": recorded thresholds");
  // A built-in shape is judged with today's row; a site's own shape only with its file again.
  thresholds.set_node_shape(find_node_shape(record.node_shape), record.node_shape_by);
  return thresholds;
}

Verdict rejudge(const Verdict& recorded, const CheckRegistry& registry,
                const RejudgeSettings& settings) {
  Verdict v = recorded;
  const FaultPlan faults = recorded_faults(recorded, settings.fault_kinds);
  RejudgeRecord record;
  record.source = settings.source;
  record.source_tool = recorded.tool.version;
  record.judged_at = settings.judged_at;
  record.thresholds_by = settings.thresholds_by;
  // A verdict does not record whom a finding blames: its code says, so the catalogue restores it
  // before statuses are made again (a check whose failures all blame the tool is an error).
  const FindingCatalogue catalogue = registry.finding_catalogue();
  const auto judge_all = [&](std::vector<CheckResult>& checks, bool count) {
    for (CheckResult& c : checks) {
      for (Finding& f : c.findings) {
        if (const FindingSpec* spec = catalogue.find(f.code)) {
          f.blame = spec->blame;
          f.action = spec->action;
        }
      }
      const Check* check = registry.find(c.name);
      int restored = 0;
      const bool done = check != nullptr && rejudge_check(c, *check, *settings.thresholds, faults,
                                                          settings.fault_kinds, restored);
      if (!count || c.status == Status::skip) continue;
      if (done) {
        ++record.checks_rejudged;
        record.observations_restored += restored;
      } else {
        record.checks_kept.push_back(c.name);
      }
    }
  };
  judge_all(v.checks, true);
  // A repeated run: every pass is judged again, and its verdict made again by the same rule.
  v.first_failed_pass.reset();
  for (PassRecord& p : v.passes) {
    judge_all(p.checks, false);
    Verdict pass;
    pass.findings = p.findings;
    pass.checks = p.checks;
    aggregate(pass, settings.strict);
    p.verdict = pass.verdict;
    p.exit_code = pass.exit_code;
    p.reason = pass.reason;
    if (!v.first_failed_pass && p.exit_code != kExitHealthy) v.first_failed_pass = p.index;
  }
  if (v.passes.empty()) v.first_failed_pass = recorded.first_failed_pass;
  v.thresholds = record_of(*settings.thresholds);
  v.rejudged = std::move(record);
  aggregate(v, settings.strict);
  return v;
}

}  // namespace preflight
