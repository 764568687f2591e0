#include "app/commands.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "fleet/logic/fleet_setup.hpp"
#include "preflight/errors.hpp"
#include "preflight/faults.hpp"
#include "run/runner.hpp"

namespace preflight {

using std::chrono::seconds;

namespace {

// What VALUE a kind takes, for scripts that build specs from `preflight list --json` (the GPU
// acceptance kit): none, an optional or required number in [min, max], or one word of a list.
nlohmann::ordered_json describe_value(const FaultKindSpec& k) {
  using Json = nlohmann::ordered_json;
  switch (k.value) {
    case FaultValue::none:
      return {{"kind", "none"}};
    case FaultValue::optional_number:
    case FaultValue::number:
      return {{"kind", k.value == FaultValue::number ? "number" : "optional_number"},
              {"min", k.min_value},
              {"max", k.max_value},
              {"integer", k.integer}};
    case FaultValue::word:
      return {{"kind", "word"}, {"words", k.words}};
  }
  return Json::object();
}

}  // namespace

const SkuSpec& sku_from_flag(const std::string& id) {
  const SkuSpec* sku = find_sku(id);
  if (sku == nullptr) {
    std::string known;
    for (const auto& s : sku_table()) known += (known.empty() ? "" : ", ") + std::string(s.id);
    throw InvalidInput("--sku: unknown SKU '" + id + "' (known: " + known + ")");
  }
  return *sku;
}

CommandResult list_command(const Invocation& inv) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  using Json = nlohmann::ordered_json;
  Json doc;
  doc["checks"] = Json::array();
  for (const Check* c : registry.all()) {
    const CheckInfo& info = c->info();
    Json budgets = Json::object();
    for (auto p : kAllProfiles) {
      const auto b = info.budget_for(p);
      budgets[std::string(to_string(p))] = b ? Json(b->count()) : Json(nullptr);
    }
    doc["checks"].push_back({{"name", info.name},
                             {"description", info.description},
                             {"needs_gpu", info.needs_gpu},
                             {"always_runs", info.required},
                             {"budget_s", budgets}});
  }
  doc["profiles"] = Json::array();
  for (auto p : kAllProfiles) {
    const auto plan = plan_checks(registry, p, {});
    Json names = Json::array();
    for (const auto& pc : plan) names.push_back(pc.check->info().name);
    doc["profiles"].push_back({{"name", std::string(to_string(p))},
                               {"description", std::string(describe(p))},
                               {"checks", names},
                               {"default_timeout_s", default_timeout(plan).count()}});
  }
  doc["fault_kinds"] = Json::array();
  const auto add_kinds = [&doc](const std::vector<FaultKindSpec>& kinds, const std::string& owner) {
    for (const auto& k : kinds) {
      Json targets = Json::array();
      for (auto t : k.targets) targets.push_back(std::string(to_string(t)));
      doc["fault_kinds"].push_back({{"kind", k.kind},
                                    {"check", owner},
                                    {"targets", targets},
                                    {"description", k.description},
                                    {"finding_codes", k.codes},
                                    {"value", describe_value(k)}});
    }
  };
  add_kinds(runner_fault_kinds(), "any");  // hang@check=NAME works on every check
  for (const Check* c : registry.all()) add_kinds(c->info().fault_kinds, c->info().name);
  add_kinds(fleet_fault_kinds(), "fleet");  // `preflight fleet --inject-fault`
  if (inv.list_json) {
    std::cout << doc.dump(2) << '\n';
    return {kExitHealthy, false};
  }
  std::cout << "Checks (budget in seconds: quick / standard / burnin; - = not in profile):\n";
  for (const auto& c : doc["checks"]) {
    std::string budgets;
    for (auto p : kAllProfiles) {
      const auto& b = c["budget_s"][std::string(to_string(p))];
      budgets += (budgets.empty() ? "" : " / ") + (b.is_null() ? std::string("-") : b.dump());
    }
    std::cout << "  " << c["name"].get<std::string>() << "  [" << budgets << "]"
              << (c["always_runs"].get<bool>() ? "  always runs" : "") << "\n    "
              << c["description"].get<std::string>() << '\n';
  }
  std::cout << "\nProfiles:\n";
  for (const auto& p : doc["profiles"]) {
    std::string names;
    for (const auto& n : p["checks"]) names += (names.empty() ? "" : ", ") + n.get<std::string>();
    std::cout << "  " << p["name"].get<std::string>() << ": " << p["description"].get<std::string>()
              << "\n    checks: " << names << "; default --timeout "
              << p["default_timeout_s"].get<long>() << " s\n";
  }
  std::cout << "\nFault kinds (--inject-fault KIND[:VALUE]@TARGET):\n";
  for (const auto& k : doc["fault_kinds"]) {
    std::string targets;
    for (const auto& t : k["targets"]) {
      targets += (targets.empty() ? "" : "|") + t.get<std::string>();
    }
    std::cout << "  " << k["kind"].get<std::string>() << "@" << targets << "=...  ["
              << k["check"].get<std::string>() << "] " << k["description"].get<std::string>()
              << '\n';
  }
  return {kExitHealthy, false};
}

CommandResult thresholds_command(const Invocation& inv) {
  Thresholds thresholds;
  if (!inv.thresholds.sku.empty()) {
    thresholds = Thresholds::for_sku(&sku_from_flag(inv.thresholds.sku), "--sku");
  } else {
    auto backend = make_system_node_backend();
    const auto node = discover_within(*backend, seconds(20));
    if (!node) {
      std::cerr << "preflight: GPU discovery did not answer within 20 s\n";
      return {kExitUnhealthy, true};  // the discovery thread is stuck and cannot be joined
    }
    if (const GpuReading* g = representative_gpu(*node)) {
      thresholds =
          Thresholds::for_sku(detect_sku(g->pci_device_id, g->name), "detected: " + g->name);
    } else {
      thresholds = Thresholds::for_sku(nullptr, "no GPU identified");
    }
  }
  if (!inv.thresholds.thresholds_path.empty()) {
    thresholds.apply_overrides_file(inv.thresholds.thresholds_path);
  }
  std::cout << thresholds.to_json_text();
  return {kExitHealthy, false};
}

}  // namespace preflight
