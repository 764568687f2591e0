#include "fleet/mpi/fleet_command.hpp"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <limits>
#include <thread>

#include "fleet/logic/fleet_launch.hpp"
#include "fleet/logic/fleet_planner.hpp"
#include "fleet/mpi/fleet_run.hpp"
#include "model/host_info.hpp"
#include "preflight/errors.hpp"
#include "report/atomic_file.hpp"
#include "run/planner.hpp"
#include "run/runner.hpp"

namespace preflight {

namespace {

// Every rank derives the same settings from the same command line, so bad input is found by
// all of them at once and they all stop the same way. Throws InvalidInput. Then the time plan
// counts from MPI up (run.start): returns why the launch left too little of --timeout, empty
// when it did not. Ranks may differ in that; only rank 0's answer is acted on.
std::string prepare(FleetRun& run) {
  const FleetArgs& args = *run.args;
  const int world = run.link->size();
  run.faults = parse_fleet_faults(args.inject_faults, world);
  run.mine = faults_for_rank(run.faults, run.link->rank());
  if (!args.sizes.empty()) {
    run.sizes = parse_fleet_sizes(args.sizes);
  } else if (args.transport == "host") {
    run.sizes = {64 * 1024, 1024 * 1024};
  } else {
    run.sizes = {1024 * 1024, 64 * 1024 * 1024};
  }
  run.iterations = args.transport == "host" ? 8 : 20;
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, args.profile, args.checks, args.check_options);
  // The local checks get what the time model says they need (docs/plan.md): with a fleet
  // --timeout the least time for their whole work, otherwise the profile's default; a node
  // without GPUs needs seconds, not the minutes of a GPU node.
  const Thresholds generic =
      Thresholds::for_sku(registry.threshold_specs(), nullptr, "before discovery");
  WorkRequest base;
  base.profile = args.profile;
  base.thresholds = &generic;
  base.options = &args.check_options;
  base.shape.gpus = args.expect_gpus.value_or(8);
  // Every rank must derive the same timing, so the shape comes from the command line alone:
  // the NICs are left to the rdma check's model, which takes them from its options, else one
  // per GPU (NodeShape::kNicsFromOptions).
  base.shape.nics = NodeShape::kNicsFromOptions;
  const RunPlan local = plan_run(plan, base, std::nullopt);
  // A --local-timeout below the floors would starve discovery or a check on every node alike,
  // and call them all faulty: it is refused as `run` refuses such a --timeout.
  if (args.local_timeout_s && *args.local_timeout_s < local.floor_s) {
    throw InvalidInput("--local-timeout " + plan_seconds(*args.local_timeout_s) + " is below the " +
                       plan_seconds(local.floor_s) +
                       " each node needs for a meaningful verdict: discovery and every check's "
                       "least work, with headroom (docs/plan.md); give at least " +
                       plan_seconds(local.floor_s) + " or fewer --checks");
  }
  const double local_s = args.local_timeout_s ? *args.local_timeout_s
                         : args.timeout_s     ? whole_work_s(local)
                                              : local.timeout_s;
  const double default_group_s =
      args.transport == "host" ? kDefaultGroupSecondsHost : kDefaultGroupSecondsNccl;
  run.timing =
      plan_fleet_timing(local_s, fleet_round_bound(world, args.group_size),
                        args.timeout_s ? std::optional<double>(*args.timeout_s) : std::nullopt,
                        args.group_timeout_s, default_group_s);
  const LaunchedTiming launched =
      plan_after_launch(run.timing, Seconds(run.start - run.process_start).count(),
                        args.group_timeout_s, default_group_s);
  run.timing = launched.timing;
  return launched.launch_problem;
}

// The launch-slow drill (docs/fleet.md#fault-injection): this rank pauses before MPI_Init, so the
// launch itself takes the time, and MPI_Init holds the other ranks until it arrives. The faults
// are parsed again against the fleet's size, and refused there when wrong, once MPI is up.
void pause_before_mpi(const FleetArgs& args) {
  // No launcher's rank: a singleton, rank 0.
  const int rank = rank_before_mpi(environment_from(environ)).value_or(0);
  double pause_s = 0;
  try {
    pause_s = faults_for_rank(
                  parse_fleet_faults(args.inject_faults, std::numeric_limits<int>::max()), rank)
                  .launch_delay_s;
  } catch (const InvalidInput&) {
    return;
  }
  if (pause_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(pause_s));
}

// What only rank 0 reads. When it is wrong the other ranks have no way to know, so rank 0
// ends the whole job (exit 2). Throws InvalidInput.
void prepare_coordinator(FleetRun& run) {
  const FleetArgs& args = *run.args;
  if (!args.topology_path.empty()) run.topology = read_topology_file(args.topology_path);
  if (!args.json_path.empty() && args.json_path != "-") {
    ensure_writable(args.json_path);
  }
}

// The hostile-peer drills (peer-malformed, peer-oversized): what this rank sends rank 0 in place
// of an honest message. `honest` is returned as it is when the drill does not apply.
std::string drill_message(PeerMessage drill, bool local_report, const FleetRun& run,
                          std::string honest) {
  if (drill == PeerMessage::oversized) {
    // Never parsed by rank 0: its size alone must get it dropped.
    return std::string(16 * kMaxControlMessageBytes, '[');
  }
  if (drill == PeerMessage::malformed && local_report) {
    // Well-formed, but claiming to be rank 0: rank 0 must take MPI's word for the sender.
    LocalReport lie;
    lie.rank = 0;
    lie.host = run.host;
    lie.local.verdict = "pass";
    return encode(lie);
  }
  if (drill == PeerMessage::malformed) {
    // Not JSON at all: a NUL, invalid UTF-8 and an object cut short.
    std::string garbage(1, '\0');
    garbage += "\xff\xfe{\"round\": [[[[\"status\": ";
    return garbage;
  }
  return honest;
}

void send_local_report(FleetRun& run, const LocalReport& report) {
  run.link->send_text(0, FleetTag::local,
                      drill_message(run.mine.local_message, true, run, encode(report)));
}

// The life of a rank other than 0: answer assignments until rank 0 says it is done. A rank
// that hears nothing until well past the fleet's deadline gives up on its own.
FleetExit serve(FleetRun& run) {
  const auto give_up = run.at(run.timing.total_s + 10.0);
  while (true) {
    const auto message = run.link->receive_text(0, FleetTag::assignment, give_up);
    if (!message) {
      std::fprintf(stderr,
                   "preflight fleet: rank %d: no word from rank 0 by the fleet's deadline; "
                   "ending the job\n",
                   run.link->rank());
      return {kExitUnhealthy, run.threads_abandoned, true};
    }
    const auto a = decode_assignment(message->text);
    // Only rank 0 sends assignments, but a garbled one must not make this rank crash or
    // take part in a group that cannot exist.
    if (!a || !assignment_problem(*a, run.link->size(), run.link->rank()).empty()) continue;
    if (a->done) return {a->exit_code, run.threads_abandoned, false};
    // The drills of a node that stops answering, or dies, once its first round has started.
    if (run.mine.freeze) std::raise(SIGSTOP);
    if (run.mine.die) std::raise(SIGKILL);
    WorkReport report;
    report.round = a->round;
    report.work = run.transport->run(task_for(run, *a));
    if (report.work.thread_abandoned) run.threads_abandoned = true;
    run.link->send_text(0, FleetTag::report,
                        drill_message(run.mine.report_message, false, run, encode(report)));
  }
}

}  // namespace

FleetCommandResult fleet_command(const FleetArgs& args, int argc, char** argv,
                                 const std::function<OwnedEngines()>& make_engines) {
  FleetRun run;
  run.args = &args;
  run.argv.assign(argv, argv + argc);
  run.process_start = SteadyClock::now();
  run.started_at = utc_iso8601(std::chrono::system_clock::now());
  run.host = host_name();
  // Before MPI_Init: a launcher Open MPI cannot start under makes MPI_Init print a page and exit
  // 1, which reads as "a node is faulty". Every task is refused the same way (exit 3).
  if (const auto refusal = mpi_launch_refusal(environment_from(environ))) {
    if (refusal->print) std::fprintf(stderr, "%s\n", refusal->message.c_str());
    return {kExitInternalError, false};
  }
  pause_before_mpi(args);
  std::unique_ptr<MpiLink> link;
  try {
    link = std::make_unique<MpiLink>(&argc, &argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "preflight fleet: cannot start MPI: %s\n", e.what());
    return {kExitInternalError, false};
  }
  run.link = link.get();
  run.start = SteadyClock::now();
  std::string launch_problem;
  try {
    launch_problem = prepare(run);
  } catch (const InvalidInput& e) {
    if (link->rank() == 0) std::fprintf(stderr, "preflight: %s\n", e.what());
    link->finalize();
    return {kExitInvalidInvocation, false};
  }
  if (link->rank() == 0) {
    try {
      prepare_coordinator(run);
    } catch (const InvalidInput& e) {
      std::fprintf(stderr, "preflight: %s\n", e.what());
      std::fflush(nullptr);
      link->abort(kExitInvalidInvocation);
    }
  }

  FleetExit end;
  if (link->rank() == 0 && !launch_problem.empty()) {
    // No node can be judged in what the launch left: the launch's problem, exit 3.
    end = refuse_after_launch(run, launch_problem);
  } else {
    run.engines = make_engines();
    LocalOutcome local = run_local_checks(run);
    if (args.transport == "host") {
      run.transport = make_host_transport(*link);
    } else {
      run.transport = make_nccl_transport(*link, run.engines.collective.get(), local.cuda_ordinals);
    }
    if (link->rank() == 0) {
      end = coordinate(run, local.report);
    } else {
      send_local_report(run, local.report);
      end = serve(run);
    }
  }
  std::fflush(nullptr);
  if (end.abort_job) {
    // The verdict is out; a rank that is stuck could hold MPI_Finalize forever.
    link->drain_sends(SteadyClock::now() + std::chrono::seconds(1));
    link->abort(end.code);
  }
  link->drain_sends(SteadyClock::now() + std::chrono::seconds(2));
  link->finalize();
  // A worker left in the driver, or a check thread: the process must end with _Exit; the
  // engines (which such a thread may still use) are never destroyed.
  if (end.threads_abandoned || run.threads_abandoned) run.engines.release();
  return {end.code, end.threads_abandoned || run.threads_abandoned};
}

}  // namespace preflight
