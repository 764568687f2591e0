#include <algorithm>

#include "preflight/errors.hpp"
#include "preflight/runner.hpp"

namespace preflight {

std::vector<PlannedCheck> plan_checks(const CheckRegistry& registry, Profile profile,
                                      const std::vector<std::string>& selected) {
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
    const auto budget = info.budget_for(profile);
    const bool wanted = selected.empty() ? budget.has_value() : named;
    if (!wanted && !info.required) continue;
    // A check named outside its profiles runs with its standard budget.
    const auto fallback = info.budget_for(Profile::standard);
    plan.push_back({check, budget ? *budget : fallback.value_or(std::chrono::seconds(60))});
  }
  return plan;
}

std::chrono::seconds default_timeout(const std::vector<PlannedCheck>& plan) {
  // Discovery (bounded at 20 s) plus a margin for writing the verdict.
  std::chrono::seconds total{30};
  for (const auto& p : plan) total += p.budget;
  return total;
}

}  // namespace preflight
