// Every rank's local checks: the same runner, watchdog and checks as `preflight run`, with the
// node options of the fleet command line. A node that fails here is kept out of the network
// rounds; its own verdict travels to rank 0 condensed (LocalSummary).
#include <filesystem>

#include "fleet/mpi/fleet_run.hpp"
#include "model/build_info.hpp"
#include "preflight/errors.hpp"
#include "report/atomic_file.hpp"
#include "report/report.hpp"
#include "run/runner.hpp"

namespace preflight {

namespace {

LocalSummary error_summary(const std::string& why) {
  LocalSummary s;
  s.verdict = "error";
  s.exit_code = kExitInvalidInvocation;
  s.reason = sanitize_reason(why);
  return s;
}

}  // namespace

LocalOutcome run_local_checks(FleetRun& run) {
  const FleetArgs& args = *run.args;
  LocalOutcome out;
  out.report.rank = run.link->rank();
  out.report.host = run.host;
  const auto started = SteadyClock::now();
  try {
    CheckRegistry registry;
    register_builtin_checks(registry);
    const auto plan = plan_checks(registry, args.profile, args.checks, args.check_options);
    // A thresholds file missing or wrong on this node is this node's problem, not the
    // fleet's: it is reported as its local result.
    if (!args.thresholds_path.empty()) {
      Thresholds::for_sku(registry.threshold_specs(), nullptr, "validation")
          .apply_overrides_file(args.thresholds_path);
    }
    Verdict skeleton;
    skeleton.tool.version = build::kVersion;
    skeleton.tool.git = build::kGitRevision;
    skeleton.host = run.host;
    skeleton.started_at = run.started_at;
    skeleton.profile = std::string(to_string(args.profile));
    skeleton.argv = run.argv;
    skeleton.injected_faults = run.mine.specs;
    RunState state(std::move(skeleton), plan, false);
    RunSettings settings;
    settings.profile = args.profile;
    settings.threshold_specs = registry.threshold_specs();
    settings.expect.gpus = args.expect_gpus;
    settings.deadline = run.at(run.timing.local_s);
    settings.thresholds_path = args.thresholds_path;
    settings.node_shape = args.node_shape;
    settings.options = args.check_options;
    const FaultPlan no_faults;
    Runner runner(run.engines.view(), no_faults);
    RunOutcome outcome = runner.run(state, plan, settings);
    if (state.abandoned_threads() > 0) run.threads_abandoned = true;
    out.cuda_ordinals = outcome.cuda_ordinals;
    if (!outcome.invalid.empty()) {
      out.report.local = error_summary(outcome.invalid);
    } else {
      Verdict& v = outcome.verdict;
      if (run.mine.local_fail) {
        // The drill: this node reports a local failure, and says it was injected.
        v.verdict = Status::fail;
        v.exit_code = kExitUnhealthy;
        v.reason = "injected: local-fail@node=" + std::to_string(run.link->rank());
      }
      out.report.local = summarize_local(v, registry.figure_catalogue());
      if (!args.local_json_dir.empty()) {
        const std::string path = (std::filesystem::path(args.local_json_dir) /
                                  (run.host + "-rank" + std::to_string(run.link->rank()) + ".json"))
                                     .string();
        try {
          write_file_atomically(path, verdict_to_json_text(v));
        } catch (const std::exception& e) {
          out.report.local.findings.push_back(std::string("LOCAL_JSON_UNWRITABLE@") + path);
          std::fprintf(stderr, "preflight fleet: rank %d: cannot write %s: %s\n", run.link->rank(),
                       path.c_str(), e.what());
        }
      }
    }
  } catch (const InvalidInput& e) {
    out.report.local = error_summary(e.what());
  } catch (const std::exception& e) {
    out.report.local = error_summary(std::string("internal error: ") + e.what());
  }
  if (out.report.local.duration_s <= 0) {
    out.report.local.duration_s = Seconds(SteadyClock::now() - started).count();
  }
  out.report.gpus = static_cast<int>(out.cuda_ordinals.size());
  return out;
}

GroupTask task_for(const FleetRun& run, const Assignment& a) {
  GroupTask t;
  t.round = a.round;
  t.members = a.members;
  t.member_gpus = a.member_gpus;
  t.sizes = a.sizes;
  t.iterations = a.iterations;
  t.seed = a.seed;
  t.deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                        std::chrono::duration<double>(a.group_timeout_s));
  t.corrupt = run.mine.corrupt;
  t.hang = run.mine.hang;
  t.slow_factor = run.mine.slow_factor;
  return t;
}

}  // namespace preflight
