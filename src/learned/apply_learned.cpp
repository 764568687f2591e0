// Learned limits applied to a verdict (apply_learned.hpp).
#include "learned/apply_learned.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "learned/figure_samples.hpp"
#include "learned/history_detail.hpp"
#include "learned/regression.hpp"
#include "preflight/check.hpp"

namespace preflight {

namespace {

bool is_learned_code(const std::string& code) {
  const auto& codes = learned_findings().codes;
  return std::any_of(codes.begin(), codes.end(),
                     [&](const FindingSpec& spec) { return spec.code == code; });
}

// Whether the check named `check` reported a finding of an injected fault.
bool drilled(const Verdict& verdict, const std::string& check) {
  for (const CheckResult& r : verdict.checks) {
    if (r.name != check) continue;
    for (const Finding& f : r.findings) {
      if (f.injected) return true;
    }
  }
  return false;
}

// Each limited figure's values in the node's runs before `current`, oldest first, by
// FigureSample::key.
std::map<std::string, std::vector<double>> earlier_values(const Verdict& current,
                                                          const History& history,
                                                          const FigureCatalogue& catalogue) {
  std::map<std::string, std::vector<double>> values;
  for (const history_detail::EarlierRun& run : history_detail::earlier_runs(current, history)) {
    for (const FigureSample& s : limited_figures(*run.verdict, catalogue)) {
      values[s.key()].push_back(s.value);
    }
  }
  return values;
}

}  // namespace

std::vector<Finding> baseline_findings(const Verdict& verdict, const BaselineGroup& group,
                                       const FigureCatalogue& catalogue, const History* history,
                                       int window) {
  std::vector<Finding> out;
  std::map<std::string, std::vector<double>> before;
  bool before_read = false;
  for (const FigureSample& s : limited_figures(verdict, catalogue)) {
    const FigureBaseline* b = group.find(s.check, s.entity, s.metric);
    if (b == nullptr || !(s.value < b->limit)) continue;
    char figures[400];
    std::snprintf(figures, sizeof figures,
                  "%s %.4g %s is below the site baseline's limit %.4g (median %.4g of %d nodes of "
                  "%s; %.1f%% below it)",
                  s.key().c_str(), s.value, s.unit.c_str(), b->limit, b->median, b->nodes,
                  group.id.c_str(), 100.0 * (1.0 - s.value / b->median));
    std::string text = figures;
    // Without a history nothing tells one bad run from a slow node: every run below fails.
    bool persistent = true;
    if (history != nullptr) {
      if (!before_read) {
        before = earlier_values(verdict, *history, catalogue);
        before_read = true;
      }
      const auto found = before.find(s.key());
      const BelowBaseline judged = judge_below_baseline(
          found == before.end() ? std::vector<double>{} : found->second, s.value, b->limit, window);
      persistent = judged.persistent;
      text += ", in " + std::to_string(judged.below) + " of the node's last " +
              std::to_string(judged.runs) + " runs";
      if (!persistent) text += ": one bad run so far; below it again within the next runs fails";
    }
    Finding f = make_finding(learned_findings(),
                             persistent ? "FIGURE_BELOW_BASELINE" : "FIGURE_BELOW_BASELINE_ONCE",
                             s.entity.empty() ? "node" : s.entity, text);
    f.judged = true;
    // A drill that slowed the check (gemm-slow, ...) slowed its figures: the finding is the
    // drill's as much as the check's own are.
    f.injected = drilled(verdict, s.check);
    f.measured(s.value, s.unit, b->limit);
    out.push_back(std::move(f));
  }
  return out;
}

void apply_learned(Verdict& verdict, const FigureCatalogue& catalogue, const LearnedInputs& inputs,
                   bool strict) {
  auto& findings = verdict.findings;
  const auto recorded = std::remove_if(findings.begin(), findings.end(),
                                       [](const Finding& f) { return is_learned_code(f.code); });
  const bool had_learned = recorded != findings.end();
  findings.erase(recorded, findings.end());
  verdict.learned.reset();
  if (inputs.baseline == nullptr && inputs.history == nullptr) {
    if (had_learned) aggregate(verdict, strict);
    return;
  }
  LearnedRecord record;
  const BaselineGroup* group = nullptr;
  if (inputs.baseline != nullptr) {
    record.baseline_group = baseline_group_of(verdict);
    group = inputs.baseline->find(record.baseline_group);
    record.baseline_found = group != nullptr;
  }
  if (group != nullptr) {
    for (const FigureSample& s : limited_figures(verdict, catalogue)) {
      if (group->find(s.check, s.entity, s.metric) != nullptr) ++record.baseline_figures;
    }
    for (Finding& f : baseline_findings(verdict, *group, catalogue, inputs.history,
                                        inputs.options.regression.window)) {
      findings.push_back(std::move(f));
    }
  }
  // Judged as the checks and the baseline left it, so that the history counts this run as
  // unhealthy for what the node showed in it, never for what the history itself adds.
  aggregate(verdict, strict);
  if (inputs.history != nullptr) {
    record.history_dir = inputs.history->dir;
    record.history_runs = static_cast<int>(inputs.history->runs.size());
    record.history_skipped = inputs.history->skipped;
    HistoryJudgement judged =
        judge_history(verdict, *inputs.history, catalogue, group, inputs.options);
    for (Finding& f : judged.findings) findings.push_back(std::move(f));
    record.regressions = std::move(judged.records);
  }
  verdict.learned = std::move(record);
  aggregate(verdict, strict);
}

}  // namespace preflight
