#include "app/commands.hpp"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/plan_view.hpp"
#include "app/system_engines.hpp"
#include "fleet/logic/fleet_setup.hpp"
#include "model/host_info.hpp"
#include "preflight/errors.hpp"
#include "preflight/faults.hpp"
#include "report/atomic_file.hpp"
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
  // The time model's numbers for the default node (8 x H100 SXM5, 8 NICs).
  const DescribedNode node = default_node();
  const Thresholds figures =
      Thresholds::for_sku(registry.threshold_specs(), node.sku, "default node");
  const CheckOptions no_options;
  std::map<std::string, Json> check_plans;
  Json profile_plans = Json::object();
  for (auto p : kAllProfiles) {
    WorkRequest base;
    base.profile = p;
    base.shape = node.shape;
    base.thresholds = &figures;
    base.options = &no_options;
    const RunPlan plan = plan_run(plan_checks(registry, p, {}), base, std::nullopt);
    for (const auto& a : plan.checks) {
      check_plans[a.check->info().name][std::string(to_string(p))] = {
          {"expected_s", a.work.expected_s}, {"coverage", a.work.coverage}};
    }
    profile_plans[std::string(to_string(p))] = {{"default_timeout_s", plan.timeout_s},
                                                {"expected_s", plan.expected_s}};
  }
  doc["model_node"] = {
      {"gpus", node.shape.gpus}, {"nics", node.shape.nics}, {"sku", std::string(node.sku->id)}};
  doc["checks"] = Json::array();
  for (const Check* c : registry.all()) {
    const CheckInfo& info = c->info();
    Json budgets = Json::object();
    for (auto p : kAllProfiles) {
      const std::string name(to_string(p));
      const auto it = check_plans.find(info.name);
      budgets[name] = it != check_plans.end() && it->second.contains(name)
                          ? Json(it->second[name]["expected_s"])
                          : Json(nullptr);
    }
    doc["checks"].push_back({{"name", info.name},
                             {"description", info.description},
                             {"needs_gpu", info.needs_gpu},
                             {"always_runs", info.required},
                             {"expected_s", budgets}});
  }
  doc["profiles"] = Json::array();
  for (auto p : kAllProfiles) {
    const auto plan = plan_checks(registry, p, {});
    Json names = Json::array();
    for (const auto& pc : plan) names.push_back(pc.check->info().name);
    doc["profiles"].push_back(
        {{"name", std::string(to_string(p))},
         {"description", std::string(describe(p))},
         {"checks", names},
         {"default_timeout_s", profile_plans[std::string(to_string(p))]["default_timeout_s"]},
         {"expected_s", profile_plans[std::string(to_string(p))]["expected_s"]}});
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
  std::cout << "Checks (modelled seconds on " << node.shape.gpus << " x " << node.sku->id
            << " with " << node.shape.nics
            << " NICs: quick / standard / burnin; - = not in profile; see 'preflight plan'):\n";
  for (const auto& c : doc["checks"]) {
    std::string budgets;
    for (auto p : kAllProfiles) {
      const auto& b = c["expected_s"][std::string(to_string(p))];
      budgets += (budgets.empty() ? "" : " / ") +
                 (b.is_null() ? std::string("-") : plan_seconds(b.get<double>()));
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
              << "\n    checks: " << names << "; expected "
              << plan_seconds(p["expected_s"].get<double>()) << ", default --timeout "
              << plan_seconds(p["default_timeout_s"].get<double>()) << " (on the node above)\n";
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
  CheckRegistry registry;
  register_builtin_checks(registry);
  Thresholds thresholds;
  int gpus = 0;
  if (inv.thresholds.node_shape == "list") {
    // Every shape with its source: what --node-shape takes, a site's rows first.
    Thresholds site = Thresholds::for_sku(registry.threshold_specs(), nullptr, "--node-shape list");
    if (!inv.thresholds.thresholds_path.empty()) {
      site.apply_overrides_file(inv.thresholds.thresholds_path);
    }
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const MachineShape& s : site.site_node_shapes()) rows.push_back(node_shape_json(s));
    for (const MachineShape& s : node_shape_table()) rows.push_back(node_shape_json(s));
    std::cout << rows.dump(2) << '\n';
    return {kExitHealthy, false};
  }
  if (!inv.thresholds.sku.empty()) {
    thresholds = Thresholds::for_sku(registry.threshold_specs(), &sku_from_flag(inv.thresholds.sku),
                                     "--sku");
  } else if (!inv.thresholds.node_shape.empty()) {
    // The shape names the GPUs: no discovery needed to show what follows from it.
    const MachineShape* shape = find_node_shape(inv.thresholds.node_shape);
    const SkuSpec* sku =
        shape != nullptr && !shape->gpu_skus.empty() ? find_sku(shape->gpu_skus.front()) : nullptr;
    thresholds = Thresholds::for_sku(registry.threshold_specs(), sku, "--node-shape");
  } else {
    auto backend = make_system_node_backend();
    const auto node = discover_within(*backend, seconds(20));
    if (!node) {
      std::cerr << "preflight: GPU discovery did not answer within 20 s\n";
      return {kExitUnhealthy, true};  // the discovery thread is stuck and cannot be joined
    }
    gpus = static_cast<int>(node->gpus.size());
    if (const GpuReading* g = representative_gpu(*node)) {
      thresholds =
          Thresholds::for_sku(registry.threshold_specs(), detect_sku(g->pci_device_id, g->name),
                              "detected: " + g->name);
    } else {
      thresholds = Thresholds::for_sku(registry.threshold_specs(), nullptr, "no GPU identified");
    }
  }
  if (!inv.thresholds.thresholds_path.empty()) {
    thresholds.apply_overrides_file(inv.thresholds.thresholds_path);
  }
  choose_node_shape(thresholds, inv.thresholds.node_shape,
                    inv.thresholds.sku.empty() ? read_dmi_product_name() : "", gpus);
  std::cout << thresholds.to_json_text();
  return {kExitHealthy, false};
}

CommandResult plan_command(const Invocation& inv) {
  const PlanArgs& args = inv.plan;
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto checks = plan_checks(registry, args.profile, args.checks, args.check_options);

  Thresholds thresholds;
  WorkRequest base;
  std::string node;
  if (!args.node.empty()) {
    const DescribedNode described = parse_node_description(args.node);
    thresholds = Thresholds::for_sku(registry.threshold_specs(), described.sku, "--node");
    base.shape = described.shape;
    node = "described: " + args.node;
  } else {
    auto backend = make_system_node_backend();
    const auto found = discover_within(*backend, std::chrono::seconds(20));
    if (!found) {
      std::cerr << "preflight: GPU discovery did not answer within 20 s\n";
      return {kExitUnhealthy, true};  // the discovery thread is stuck and cannot be joined
    }
    const GpuReading* g = representative_gpu(*found);
    thresholds = g ? Thresholds::for_sku(registry.threshold_specs(),
                                         detect_sku(g->pci_device_id, g->name), g->name)
                   : Thresholds::for_sku(registry.threshold_specs(), nullptr, "no GPU identified");
    base.shape.gpus = static_cast<int>(found->gpus.size());
    base.shape.nics = count_rdma_devices();
    node = "this node (" + host_name() + ", " + thresholds.sku_id() + ")";
  }
  base.profile = args.profile;
  base.thresholds = &thresholds;
  base.options = &args.check_options;
  base.rotation = args.rotation.value_or(0);
  const std::optional<double> timeout =
      args.timeout_s ? std::optional<double>(*args.timeout_s) : std::nullopt;
  const RunPlan plan = plan_run(checks, base, timeout);
  const std::string_view profile = to_string(args.profile);
  if (!args.json_path.empty()) {
    const std::string text = plan_to_json(plan, profile, node).dump(2) + "\n";
    if (args.json_path == "-") {
      std::cout << text;
      return {kExitHealthy, false};
    }
    write_file_atomically(args.json_path, text);
  }
  std::cout << plan_to_text(plan, profile, node);
  return {kExitHealthy, false};
}

}  // namespace preflight
