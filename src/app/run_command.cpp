// `preflight run`: one pass of the planned checks, or with --repeat/--duration a burn-in of
// many passes, each its own run under its own deadline and supervisor.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <thread>

#include "app/commands.hpp"
#include "app/plan_view.hpp"
#include "app/rotation_counter.hpp"
#include "app/system_engines.hpp"
#include "fleet/logic/fleet_setup.hpp"
#include "learned/apply_learned.hpp"
#include "model/build_info.hpp"
#include "model/host_info.hpp"
#include "preflight/errors.hpp"
#include "report/atomic_file.hpp"
#include "report/prometheus.hpp"
#include "report/report.hpp"
#include "run/burnin.hpp"
#include "run/drill_coverage.hpp"
#include "run/progress.hpp"
#include "run/runner.hpp"
#include "run/supervisor.hpp"

namespace preflight {

namespace {

using std::chrono::seconds;

FaultPlan parse_faults(const std::vector<std::string>& specs, const CheckRegistry& registry,
                       const std::vector<PlannedCheck>& plan, const RunArgs& args) {
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
    // Same reasoning: a fault whose pass never comes tests nothing.
    if (f.from_pass > 1 && !args.repeat && !args.duration_s) {
      throw InvalidInput("--inject-fault '" + spec +
                         "': from-pass needs a repeated run (--repeat or --duration)");
    }
    if (args.repeat && f.from_pass > *args.repeat) {
      throw InvalidInput("--inject-fault '" + spec + "': pass " + std::to_string(f.from_pass) +
                         " never runs with --repeat " + std::to_string(*args.repeat));
    }
    faults.push_back(std::move(f));
  }
  return FaultPlan(std::move(faults));
}

// Writes the verdict where it was asked for (JSON, Prometheus) and prints the table. Returns
// the exit code: the verdict's, or 3 if an output could not be written.
int deliver(const Verdict& verdict, const RunArgs& args, const FigureCatalogue& figures) {
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
  if (!args.prom_path.empty()) {
    try {
      write_file_atomically(args.prom_path, verdict_to_prometheus(verdict, figures));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "preflight: internal error: cannot write the metrics: %s\n", e.what());
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

// Progress is for burn-ins: a prolog's quick run stays silent but for its table.
std::unique_ptr<ProgressDisplay> make_progress(const RunArgs& args, const BurninRequest& request,
                                               seconds pass_timeout) {
  if (!request.repeated() && args.profile != Profile::burnin) return nullptr;
  ProgressOptions options;
  options.stream = stderr;
  options.terminal = isatty(fileno(stderr)) != 0;
  options.request = request;
  options.pass_budget_s = static_cast<double>(pass_timeout.count());
  return std::make_unique<ProgressDisplay>(options);
}

double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

// What the checks keep between runs (the kernel log's cursor), written once a run judged the
// node healthy, from its last pass: a run that failed leaves the state as it was, so the events
// it saw count again in the next run. A drill judges nothing real and keeps nothing. A state
// file that cannot be written is said on stderr; the verdict stands.
void keep_healthy_state(const Verdict& pass, const std::string& state_dir) {
  if (state_dir.empty() || !pass.injected_faults.empty()) return;
  for (const CheckResult& c : pass.checks) {
    for (const StateUpdate& update : c.state_if_healthy) {
      const std::string path = state_dir + "/" + update.file;
      try {
        write_file_atomically(path, update.content);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "preflight: --state-dir: cannot keep %s: %s\n", update.file.c_str(),
                     e.what());
      }
    }
  }
}

}  // namespace

CommandResult run_command(const Invocation& inv, int argc, const char* const* argv) {
  // Before any thread exists, so that only the supervisor receives SIGTERM and SIGINT.
  Supervisor::block_termination_signals();
  const RunArgs& args = inv.run;

  CheckRegistry registry;
  register_builtin_checks(registry);
  // The key figures each check declares, for the Prometheus file.
  const FigureCatalogue figures = registry.figure_catalogue();
  const std::vector<PlannedCheck> plan =
      plan_checks(registry, args.profile, args.checks, args.check_options);
  const FaultPlan faults = parse_faults(args.inject_faults, registry, plan, args);
  // The thresholds file's baseline (docs/baseline.md): applied to the verdict once the checks
  // have judged it, by the group the run records.
  std::shared_ptr<const BaselineLimits> baseline;
  {
    // Validate now, before anything runs or is written; the runner applies the file again on
    // top of the detected SKU and picks the shape again.
    Thresholds check = Thresholds::for_sku(registry.threshold_specs(), nullptr, "validation");
    if (!args.thresholds_path.empty()) check.apply_overrides_file(args.thresholds_path);
    if (!args.node_shape.empty()) choose_node_shape(check, args.node_shape, "", 0);
    if (check.baseline() != nullptr) {
      baseline = std::make_shared<const BaselineLimits>(*check.baseline());
    }
  }
  // The node's earlier verdicts, read before anything runs: a --history that is not a
  // directory is bad input, a bad file in it only a note.
  std::optional<History> history;
  if (!args.history_dir.empty()) history = read_history(args.history_dir, host_name(), {});
  if (!args.json_path.empty() && args.json_path != "-") ensure_writable(args.json_path);
  if (!args.prom_path.empty()) ensure_writable(args.prom_path, "--prom");

  BurninRequest request;
  request.repeat = args.repeat;
  request.duration_s = args.duration_s;
  request.stop_on_fail = args.stop_on_fail;
  // In a repeated run --timeout bounds each pass; the whole run is bounded by --repeat passes,
  // or by --duration plus the one pass under way when it runs out.
  // The time model's plan before discovery (docs/plan.md): the default deadline for the node
  // it assumes, or a given --timeout held to the floor; the runner plans again for the node
  // discovery finds.
  const int nics = count_rdma_devices();
  const RunPlan before =
      plan_before_discovery(registry.threshold_specs(), plan, args.profile, args.check_options,
                            args.expect_gpus, nics, args.timeout_s);
  const seconds pass_timeout =
      args.timeout_s ? seconds(*args.timeout_s) : seconds(static_cast<long long>(before.timeout_s));
  const RotationCounter rotation = take_rotation(args.rotation, args.state_dir);

  Verdict skeleton;
  skeleton.tool.version = build::kVersion;
  skeleton.tool.git = build::kGitRevision;
  skeleton.host = host_name();
  skeleton.profile = std::string(to_string(args.profile));
  skeleton.argv.assign(argv, argv + argc);
  for (const auto& f : faults.all()) skeleton.injected_faults.push_back(f.spec);

  RunSettings settings;
  settings.profile = args.profile;
  settings.threshold_specs = registry.threshold_specs();
  settings.expect.gpus = args.expect_gpus;
  settings.thresholds_path = args.thresholds_path;
  settings.node_shape = args.node_shape;
  settings.options = args.check_options;
  settings.nics = nics;
  settings.rotation = rotation.value;
  settings.rotation_from = rotation.from;
  settings.timeout_given = args.timeout_s.has_value();
  settings.state_dir = args.state_dir;
  // Discovery gets what the checks' floors leave, at most 20 s.
  settings.discovery_budget =
      seconds(std::max<long long>(1, static_cast<long long>(before.discovery_deadline_s)));

  OwnedEngines engines = make_system_engines();
  std::unique_ptr<ProgressDisplay> progress = make_progress(args, request, pass_timeout);
  // Every finished pass, whole. Only this thread touches it, except the supervisor's emergency
  // path, which runs only while this thread is stuck inside runner.run.
  std::vector<Verdict> passes;
  const auto run_started = SteadyClock::now();
  std::string signal;  // what stopped the run, for its verdict
  // Judged over every pass, once the run is over: a fault may be exercised in any pass it is
  // active in, and one whose check was skipped in all of them is one finding, not one per pass.
  const std::vector<DrilledFault> drilled = drilled_checks(faults, registry);
  const auto final_verdict = [&](const std::vector<Verdict>& done, const std::string& why) {
    Verdict v = request.repeated() ? combine_passes(done, request, why, seconds_since(run_started),
                                                    args.strict, signal)
                                   : done.back();
    add_unexercised_faults(v, drilled, done, args.strict);
    LearnedInputs learned;
    learned.baseline = baseline.get();
    learned.history = history ? &*history : nullptr;
    apply_learned(v, figures, learned, args.strict);
    return v;
  };

  std::string stopped_by;
  bool abandoned = false;
  for (int index = 1; stopped_by.empty(); ++index) {
    const FaultPlan pass_faults = faults.in_pass(index);
    settings.deadline = SteadyClock::now() + pass_timeout;
    // Each pass of a burn-in is one run of the rotation.
    settings.rotation = rotation.value + static_cast<std::uint64_t>(index - 1);
    skeleton.started_at = utc_iso8601(std::chrono::system_clock::now());
    RunState state(skeleton, plan, args.strict);
    // Last resort if the runner itself is stuck: the supervisor writes what is known, the
    // passes before this one included, and ends the process. _Exit, because stuck threads
    // cannot be joined and must not see destructors.
    std::optional<Supervisor> supervisor;
    supervisor.emplace(
        state, settings.deadline + seconds(3), std::chrono::milliseconds(2000),
        [&](const Verdict& v) {
          std::vector<Verdict> done = passes;
          done.push_back(v);
          const bool by_signal = state.stop_cause() == StopCause::signal;
          if (by_signal) signal = state.stop_why();
          if (progress) progress->finish();
          std::_Exit(deliver(final_verdict(done, by_signal ? "signal" : "stuck"), args, figures));
        });
    if (progress) progress->begin_pass(index, &state);
    Runner runner(engines.view(), pass_faults);
    RunOutcome outcome = runner.run(state, plan, settings);
    if (!state.claim_finalize()) {
      // The supervisor is writing the verdict and will end the process.
      while (true) std::this_thread::sleep_for(seconds(1));
    }
    // The supervisor goes before the pass's stop cause is read: a signal it takes after the
    // runner returned (up to its end, while it is joined) lands in this pass's state and stops
    // the run here, instead of vanishing with the pass.
    supervisor.reset();
    abandoned = abandoned || state.abandoned_threads() > 0;
    if (!outcome.invalid.empty()) {
      if (progress) progress->finish();
      std::fprintf(stderr, "preflight: %s\n", outcome.invalid.c_str());
      return {kExitInvalidInvocation, abandoned};
    }
    if (progress) progress->end_pass(index, outcome.verdict);
    PassEnd end;
    end.passes_done = index;
    end.elapsed_s = seconds_since(run_started);
    end.unhealthy = outcome.verdict.exit_code != kExitHealthy;
    end.signalled = state.stop_cause() == StopCause::signal;
    if (end.signalled) signal = state.stop_why();
    end.stuck = state.abandoned_threads() > 0;
    passes.push_back(std::move(outcome.verdict));
    stopped_by = burnin_stop(request, end).value_or("");
  }
  if (progress) progress->finish();
  // A thread left behind may still use an engine: never destroy them under it.
  if (abandoned) engines.release();
  Verdict verdict = final_verdict(passes, stopped_by);
  if (verdict.exit_code == kExitHealthy) keep_healthy_state(passes.back(), args.state_dir);
  return {deliver(std::move(verdict), args, figures), abandoned};
}

}  // namespace preflight
