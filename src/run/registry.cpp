#include <set>
#include <stdexcept>

#include "preflight/check.hpp"

namespace preflight {
namespace {

// A check's threshold keys live in its own section ("gemm.*"), a warning limit names a failure
// limit of the same check, and a SKU value names a known SKU; `all` (every key registered,
// this check's included) holds each key once.
void check_threshold_specs(const CheckInfo& info, const ThresholdSpecs& all) {
  const auto refuse = [&](const std::string& why) {
    throw std::logic_error("check " + info.name + ": threshold " + why);
  };
  const std::string section = info.name + ".";
  std::set<std::string_view> own;
  for (const ThresholdSpec& spec : info.thresholds) {
    if (spec.key.substr(0, section.size()) != section) {
      refuse(std::string(spec.key) + " is outside its section " + section + "*");
    }
    own.insert(spec.key);
    for (const auto& [sku, value] : spec.sku_values) {
      if (find_sku(sku) == nullptr)
        refuse(std::string(spec.key) + " names unknown SKU " + std::string(sku));
    }
  }
  for (const ThresholdSpec& spec : info.thresholds) {
    if (!spec.fail_key.empty() && own.count(spec.fail_key) == 0) {
      refuse(std::string(spec.key) + " names " + std::string(spec.fail_key) +
             ", not a key of its own");
    }
  }
  std::set<std::string_view> seen;
  for (const ThresholdSpec& spec : all) {
    if (!seen.insert(spec.key).second) refuse(std::string(spec.key) + " is declared twice");
  }
}

}  // namespace

std::string_view to_string(Profile profile) {
  switch (profile) {
    case Profile::quick:
      return "quick";
    case Profile::standard:
      return "standard";
    case Profile::burnin:
      return "burnin";
  }
  return "quick";
}

std::optional<Profile> parse_profile(std::string_view text) {
  for (auto p : kAllProfiles) {
    if (to_string(p) == text) return p;
  }
  return std::nullopt;
}

std::string_view describe(Profile profile) {
  switch (profile) {
    case Profile::quick:
      return "Slurm prolog and CI gates: every check in its shortest form, seconds to a minute";
    case Profile::standard:
      return "Routine health check: longer measurements, a few minutes";
    case Profile::burnin:
      return "Burn-in of new or repaired nodes: long stress runs, minutes to hours";
  }
  return "";
}

WorkPlan Check::plan_work(const WorkRequest& request) const {
  const auto seconds =
      budget(request.profile, *request.options)
          .value_or(info().budget_for(Profile::standard).value_or(std::chrono::seconds(60)));
  WorkPlan plan;
  plan.expected_s = plan.floor_s = static_cast<double>(seconds.count());
  return plan;
}

CheckPlanRecord coverage_record(const WorkPlan& plan) {
  CheckPlanRecord r;
  r.reduced = plan.reduced;
  r.coverage = plan.coverage;
  r.rotation_step = plan.rotation_step;
  r.rotation_steps = plan.rotation_steps;
  r.covered = plan.covered;
  return r;
}

void CheckRegistry::add(std::unique_ptr<Check> check) {
  if (!check) throw std::logic_error("CheckRegistry::add: null check");
  if (find(check->info().name) != nullptr) {
    throw std::logic_error("CheckRegistry::add: duplicate check " + check->info().name);
  }
  checks_.push_back(std::move(check));
  try {
    // A code two tables declare, or a threshold key outside the check's section, is a bug:
    // refuse it here.
    (void)finding_catalogue();
    check_threshold_specs(checks_.back()->info(), *threshold_specs());
  } catch (...) {
    checks_.pop_back();
    throw;
  }
}

const Check* CheckRegistry::find(std::string_view name) const {
  for (const auto& c : checks_) {
    if (c->info().name == name) return c.get();
  }
  return nullptr;
}

std::vector<const Check*> CheckRegistry::all() const {
  std::vector<const Check*> out;
  out.reserve(checks_.size());
  for (const auto& c : checks_) out.push_back(c.get());
  return out;
}

std::vector<std::string> CheckRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& c : checks_) out.push_back(c->info().name);
  return out;
}

std::vector<FaultKindSpec> runner_fault_kinds() {
  FaultKindSpec hang;
  hang.kind = "hang";
  hang.targets = {TargetType::check};
  hang.description =
      "the named check never returns, as if stuck inside a driver call (exercises the watchdog)";
  hang.codes = {"CHECK_TIMEOUT"};
  return {hang};
}

std::vector<FaultKindSpec> CheckRegistry::fault_kinds() const {
  std::vector<FaultKindSpec> kinds = runner_fault_kinds();
  for (const auto& c : checks_) {
    for (const auto& k : c->info().fault_kinds) kinds.push_back(k);
  }
  return kinds;
}

FigureCatalogue CheckRegistry::figure_catalogue() const {
  FigureCatalogue catalogue;
  for (const auto& c : checks_) {
    const CheckInfo& info = c->info();
    if (info.figures.empty() && !info.bars) continue;
    catalogue.push_back({info.name, info.figures, info.bars});
  }
  return catalogue;
}

std::shared_ptr<const ThresholdSpecs> CheckRegistry::threshold_specs() const {
  auto specs = std::make_shared<ThresholdSpecs>();
  for (const auto& c : checks_) {
    const ThresholdSpecs& own = c->info().thresholds;
    specs->insert(specs->end(), own.begin(), own.end());
  }
  return specs;
}

FindingCatalogue CheckRegistry::finding_catalogue() const {
  std::vector<const FindingTable*> tables = {&runner_findings(), &learned_findings()};
  for (const auto& c : checks_) {
    for (const FindingTable* table : c->info().findings) tables.push_back(table);
  }
  return FindingCatalogue(std::move(tables));
}

}  // namespace preflight
