#include <algorithm>

#include "preflight/errors.hpp"
#include "run/runner.hpp"

namespace preflight {

std::vector<PlannedCheck> plan_checks(const CheckRegistry& registry, Profile profile,
                                      const std::vector<std::string>& selected,
                                      const CheckOptions& options) {
  for (const auto& name : selected) {
    if (registry.find(name) == nullptr) {
      std::string known;
      for (const auto& n : registry.names()) known += (known.empty() ? "" : ", ") + n;
      throw InvalidInput("--checks: unknown check '" + name + "' (known: " + known + ")");
    }
  }
  std::vector<PlannedCheck> plan;
  for (const Check* check : registry.all()) {
    const CheckInfo& info = check->info();
    const bool named = std::find(selected.begin(), selected.end(), info.name) != selected.end();
    const auto budget = check->budget(profile, options);
    const bool wanted = selected.empty() ? budget.has_value() : named;
    if (!wanted && !info.required) continue;
    check->validate_options(options);
    // A check named outside its profiles runs with its standard budget.
    const auto fallback = check->budget(Profile::standard, options);
    plan.push_back({check, budget ? *budget : fallback.value_or(std::chrono::seconds(60))});
  }
  // An option of a check that does not run would be silently ignored.
  for (const auto& [flag, value] : options.all()) {
    const Check* owner = nullptr;
    for (const Check* check : registry.all()) {
      for (const auto& spec : check->info().options) {
        if (spec.flag == flag) owner = check;
      }
    }
    if (owner == nullptr) throw InvalidInput(flag + ": no check takes this option");
    const bool planned = std::any_of(plan.begin(), plan.end(),
                                     [&](const PlannedCheck& p) { return p.check == owner; });
    if (!planned) {
      throw InvalidInput(flag + ": check '" + owner->info().name + "' is not part of this run");
    }
  }
  return plan;
}

}  // namespace preflight
