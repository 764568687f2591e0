#include "app/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "preflight/atomic_file.hpp"
#include "preflight/build_info.hpp"
#include "preflight/errors.hpp"
#include "preflight/fleet_setup.hpp"
#include "preflight/host_info.hpp"
#include "preflight/report.hpp"
#include "preflight/runner.hpp"
#include "preflight/supervisor.hpp"

namespace preflight {

namespace {

using std::chrono::seconds;

FaultPlan parse_faults(const std::vector<std::string>& specs, const CheckRegistry& registry,
                       const std::vector<PlannedCheck>& plan) {
  std::vector<InjectedFault> faults;
  const auto kinds = registry.fault_kinds();
  for (const auto& spec : specs) {
    InjectedFault f = parse_fault(spec, kinds);
    // A fault of a check that does not run would be silently ignored: a drill that tests
    // nothing and passes.
    for (const Check* owner : registry.all()) {
      const auto& owned = owner->info().fault_kinds;
      const bool owns = std::any_of(owned.begin(), owned.end(),
                                    [&](const FaultKindSpec& k) { return k.kind == f.kind; });
      const bool planned = std::any_of(plan.begin(), plan.end(),
                                       [&](const PlannedCheck& p) { return p.check == owner; });
      if (owns && !planned) {
        throw InvalidInput("--inject-fault '" + spec + "': kind '" + f.kind +
                           "' belongs to check '" + owner->info().name +
                           "', which is not part of this run");
      }
    }
    if (f.target.type == TargetType::check) {
      const bool planned = std::any_of(plan.begin(), plan.end(), [&](const PlannedCheck& p) {
        return p.check->info().name == f.target.name;
      });
      if (registry.find(f.target.name) == nullptr) {
        throw InvalidInput("--inject-fault '" + spec + "': unknown check '" + f.target.name + "'");
      }
      if (!planned) {
        throw InvalidInput("--inject-fault '" + spec + "': check '" + f.target.name +
                           "' is not part of this run");
      }
    }
    faults.push_back(std::move(f));
  }
  return FaultPlan(std::move(faults));
}

// Writes the verdict where it was asked for and prints the table. Returns the exit code: the
// verdict's, or 3 if the verdict could not be written.
int deliver(const Verdict& verdict, const RunArgs& args) {
  const bool json_to_stdout = args.json_path == "-";
  FILE* table_stream = json_to_stdout ? stderr : stdout;
  TextStyle style;
  style.colour = args.colour && isatty(fileno(table_stream)) && std::getenv("NO_COLOR") == nullptr;
  int code = verdict.exit_code;
  const std::string json = verdict_to_json_text(verdict);
  if (json_to_stdout) {
    std::fwrite(json.data(), 1, json.size(), stdout);
  } else if (!args.json_path.empty()) {
    try {
      write_file_atomically(args.json_path, json);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "preflight: internal error: cannot write the verdict: %s\n", e.what());
      code = kExitInternalError;
    }
  }
  Verdict shown = verdict;
  shown.exit_code = code;  // the table tells the exit code the process really ends with
  const std::string table = verdict_to_text(shown, style);
  std::fwrite(table.data(), 1, table.size(), table_stream);
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

}  // namespace

CommandResult run_command(const Invocation& inv, int argc, const char* const* argv) {
  // Before any thread exists, so that only the supervisor receives SIGTERM and SIGINT.
  Supervisor::block_termination_signals();
  const RunArgs& args = inv.run;

  CheckRegistry registry;
  register_builtin_checks(registry);
  const std::vector<PlannedCheck> plan =
      plan_checks(registry, args.profile, args.checks, args.check_options);
  const FaultPlan faults = parse_faults(args.inject_faults, registry, plan);
  if (!args.thresholds_path.empty()) {
    // Validate now, before anything runs or is written; the runner applies it again on top of
    // the detected SKU.
    Thresholds::for_sku(nullptr, "validation").apply_overrides_file(args.thresholds_path);
  }
  if (!args.json_path.empty() && args.json_path != "-") ensure_writable(args.json_path);

  const seconds timeout = args.timeout_s ? seconds(*args.timeout_s) : default_timeout(plan);
  const auto deadline = SteadyClock::now() + timeout;

  Verdict skeleton;
  skeleton.tool.version = build::kVersion;
  skeleton.tool.git = build::kGitRevision;
  skeleton.host = host_name();
  skeleton.started_at = utc_iso8601(std::chrono::system_clock::now());
  skeleton.profile = std::string(to_string(args.profile));
  skeleton.argv.assign(argv, argv + argc);
  for (const auto& f : faults.all()) skeleton.injected_faults.push_back(f.spec);

  RunState state(std::move(skeleton), plan, args.strict);
  // Last resort if the runner itself is stuck: the supervisor writes what is known and ends
  // the process. _Exit, because stuck threads cannot be joined and must not see destructors.
  Supervisor supervisor(state, deadline + seconds(3), std::chrono::milliseconds(2000),
                        [&args](const Verdict& v) { std::_Exit(deliver(v, args)); });

  RunSettings settings;
  settings.profile = args.profile;
  settings.expect.gpus = args.expect_gpus;
  settings.deadline = deadline;
  settings.thresholds_path = args.thresholds_path;
  settings.options = args.check_options;

  auto backend = make_system_gpu_backend();
  Runner runner(*backend, faults);
  RunOutcome outcome = runner.run(state, plan, settings);

  if (!state.claim_finalize()) {
    // The supervisor is writing the verdict and will end the process.
    while (true) std::this_thread::sleep_for(seconds(1));
  }
  const bool abandoned = state.abandoned_threads() > 0;
  if (!outcome.invalid.empty()) {
    std::fprintf(stderr, "preflight: %s\n", outcome.invalid.c_str());
    return {kExitInvalidInvocation, abandoned};
  }
  return {deliver(outcome.verdict, args), abandoned};
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
                                    {"finding_codes", k.codes}});
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
    const SkuSpec* sku = find_sku(inv.thresholds.sku);
    if (sku == nullptr) {
      std::string known;
      for (const auto& s : sku_table()) known += (known.empty() ? "" : ", ") + std::string(s.id);
      throw InvalidInput("--sku: unknown SKU '" + inv.thresholds.sku + "' (known: " + known + ")");
    }
    thresholds = Thresholds::for_sku(sku, "--sku");
  } else {
    auto backend = make_system_gpu_backend();
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
