// Rank 0: plans and decides. Everything it waits for arrives by polling against a deadline, so
// a node that is stuck, slow or gone costs at most its round's time and is then called
// unresponsive. The verdict is written before anything a stuck rank could block.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "fleet/logic/fleet_planner.hpp"
#include "fleet/logic/fleet_speed.hpp"
#include "fleet/logic/fleet_stats.hpp"
#include "fleet/mpi/fleet_rounds.hpp"
#include "fleet/mpi/fleet_run.hpp"
#include "model/build_info.hpp"
#include "report/atomic_file.hpp"

namespace preflight {

namespace {

std::string format_s(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", seconds);
  return text;
}

struct LocalResults {
  std::vector<std::optional<LocalReport>> reports;  // by rank; empty: none taken
  std::map<int, std::string> misbehaving;           // rank -> how it broke the protocol
};

// The local results of every rank, waiting until the local phase's deadline. A rank whose
// message cannot be taken as it stands is settled at once: it is misbehaving, and nothing it
// claimed is kept.
LocalResults collect_locals(FleetRun& run, const LocalReport& own) {
  const int world = run.link->size();
  LocalResults out;
  out.reports.resize(static_cast<std::size_t>(world));
  out.reports[0] = own;
  int missing = world - 1;
  const auto deadline = run.at(run.timing.local_collect_s);
  while (missing > 0) {
    const auto message = run.link->receive_text(-1, FleetTag::local, deadline);
    if (!message) break;
    // The sender is MPI's word, not the message's.
    const int source = message->source;
    if (source <= 0 || source >= world || out.misbehaving.count(source) > 0) continue;
    std::string problem = message_problem(*message, "local report");
    std::optional<LocalReport> report;
    if (problem.empty()) {
      report = decode_local(message->text);
      if (!report) {
        problem = "sent a malformed local report";
      } else if (const std::string why = local_report_problem(*report, source, world);
                 !why.empty()) {
        problem = "sent a local report that " + why;
      } else if (out.reports[source]) {
        problem = "sent two local reports";
      }
    }
    if (!problem.empty()) {
      if (!out.reports[source]) --missing;
      out.reports[source].reset();
      out.misbehaving[source] = problem;
      continue;
    }
    out.reports[source] = std::move(*report);
    --missing;
  }
  return out;
}

bool local_failed(const LocalSummary& s) {
  return s.verdict == "fail" || s.verdict == "error" || s.verdict == "missing";
}

void deliver(const FleetVerdict& v, const FleetArgs& args) {
  const std::string json = fleet_verdict_to_json_text(v);
  const std::string table = fleet_verdict_to_text(v);
  if (args.json_path == "-") {
    std::fwrite(json.data(), 1, json.size(), stdout);
    std::fwrite(table.data(), 1, table.size(), stderr);
  } else {
    if (!args.json_path.empty()) write_file_atomically(args.json_path, json);
    std::fwrite(table.data(), 1, table.size(), stdout);
  }
  std::fflush(nullptr);
}

// What the verdict says of the run itself, before any node is judged.
FleetVerdict verdict_header(const FleetRun& run) {
  const FleetArgs& args = *run.args;
  FleetVerdict v;
  v.tool.version = build::kVersion;
  v.tool.git = build::kGitRevision;
  v.started_at = run.started_at;
  v.argv = run.argv;
  v.transport = args.transport;
  v.local_profile = std::string(to_string(args.profile));
  v.group_size = args.group_size;
  v.round_bound = run.timing.round_bound;
  // The --timeout as given; without one, the plan's own sum and the launch before it.
  v.timeout_s = args.timeout_s ? *args.timeout_s : run.timing.total_s + run.timing.launch_s;
  v.group_timeout_s = run.timing.group_s;
  v.local_timeout_s = run.timing.local_s;
  v.launch_s = run.timing.launch_s;
  v.max_exclude_share = args.max_exclude_share;
  for (const auto& f : run.faults) v.injected_faults.push_back(f.spec);
  return v;
}

FleetExit deliver_or_internal_error(const FleetVerdict& v, const FleetArgs& args) {
  FleetExit end;
  end.code = v.exit_code;
  try {
    deliver(v, args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "preflight fleet: internal error: cannot write the verdict: %s\n",
                 e.what());
    end.code = kExitInternalError;
  }
  return end;
}

}  // namespace

FleetExit refuse_after_launch(FleetRun& run, const std::string& why) {
  FleetVerdict v = verdict_header(run);
  mark_fleet_launch_problem(v, why);
  v.duration_s = Seconds(SteadyClock::now() - run.process_start).count();
  std::fprintf(stderr, "preflight fleet: %s\n", why.c_str());
  FleetExit end = deliver_or_internal_error(v, *run.args);
  // The other ranks are in their local checks or about to be; nothing is left for them to do.
  end.abort_job = true;
  return end;
}

FleetExit coordinate(FleetRun& run, const LocalReport& own) {
  const FleetArgs& args = *run.args;
  const int world = run.link->size();
  FleetVerdict v = verdict_header(run);

  const LocalResults collected = collect_locals(run, own);
  const auto& locals = collected.reports;
  // Ranks that broke the protocol: faulty, kept out of the rounds, and what they send next is
  // ignored. A rank cannot be trusted to finalize either, so the job then ends by MPI_Abort.
  std::map<int, std::string> misbehaving = collected.misbehaving;
  std::vector<std::string> hosts;
  std::vector<int> gpus;
  for (int r = 0; r < world; ++r) {
    FleetNode node;
    node.rank = r;
    if (locals[r]) {
      node.host = locals[r]->host;
      node.local = locals[r]->local;
      gpus.push_back(locals[r]->gpus);
    } else {
      // No host name it gave can be taken (it sent none, or broke the protocol): empty, as
      // docs/fleet-verdict.md says, so no made-up name reaches `exclude`.
      node.host.clear();
      node.local.verdict = "missing";
      gpus.push_back(0);
    }
    hosts.push_back(node.host);
    v.nodes.push_back(std::move(node));
  }

  FleetPlannerOptions options;
  options.group_size = args.group_size;
  // Reference pairs of proven nodes in later rounds wherever speed is compared with a median.
  options.reference_groups = args.slow_factor > 0;
  if (!run.topology.empty()) options.switch_of = switches_of(hosts, run.topology);
  FleetPlanner planner(world, options);
  std::set<int> unresponsive;
  for (int r = 0; r < world; ++r) {
    if (const auto bad = misbehaving.find(r); bad != misbehaving.end()) {
      planner.exclude(r, bad->second);
      v.notes.push_back("rank " + std::to_string(r) + " " + bad->second);
    } else if (!locals[r]) {
      unresponsive.insert(r);
      planner.exclude(
          r, "no local result within " + format_s(run.timing.local_collect_s) + " (unresponsive)");
    } else if (local_failed(locals[r]->local)) {
      planner.exclude(r,
                      "local checks " + locals[r]->local.verdict + ": " + locals[r]->local.reason);
    }
  }

  const auto shunned = [&] {
    std::set<int> out = unresponsive;
    for (const auto& [r, why] : misbehaving) out.insert(r);
    return out;
  };
  RoundDriver driver(run, gpus);
  bool any_timeout = false;
  // A fleet of one node has no partner, but with NCCL its all-gather across its own GPUs still
  // tests the transport (a one-rank communicator on a one-GPU node).
  std::optional<GroupReport> solo;
  if (world == 1 && args.transport == "nccl" && !local_failed(v.nodes[0].local)) {
    RoundPlan plan;
    plan.index = 1;
    plan.groups.push_back(GroupPlan{{0}, false});
    RoundResult round = driver.run_round(plan, shunned());
    solo = round.reports.front();
    any_timeout = round.any_timeout;
    v.rounds.push_back(std::move(round.record));
  }
  while (auto plan = planner.next_round()) {
    const double needed = run.timing.group_s + run.timing.report_slack_s + 1.0;
    const double left =
        Seconds(run.at(run.timing.total_s - run.timing.verdict_margin_s) - SteadyClock::now())
            .count();
    if (left < needed) {
      v.notes.push_back("the --timeout left no time for round " + std::to_string(plan->index) +
                        " (" + format_s(left) + " left, a round needs " + format_s(needed) +
                        "); the nodes still suspected are ambiguous");
      break;
    }
    RoundResult round = driver.run_round(*plan, shunned());
    planner.record(round.reports);
    for (const auto& [r, why] : round.misbehaving) {
      if (!misbehaving.emplace(r, why).second) continue;
      planner.exclude(r, why);
      v.notes.push_back("rank " + std::to_string(r) + " " + why);
    }
    for (int r : round.newly_unresponsive) {
      unresponsive.insert(r);
      planner.exclude(r,
                      "did not report in round " + std::to_string(plan->index) + " (unresponsive)");
      v.notes.push_back("rank " + std::to_string(r) + " did not report in round " +
                        std::to_string(plan->index));
    }
    any_timeout = any_timeout || round.any_timeout;
    v.rounds.push_back(std::move(round.record));
  }

  // Groups below --slow-factor that the noise hid: the verdict says speed was not judged there,
  // rather than letting silence read as "at speed".
  int hidden = 0;
  double worst_noise = 0;
  for (const FleetRound& r : v.rounds) {
    for (const FleetGroupRecord& g : r.groups) {
      if (g.detail.rfind("speed not judged: noise", 0) != 0) continue;
      ++hidden;
      worst_noise = std::max(worst_noise, g.noise);
    }
  }
  if (hidden > 0) {
    v.notes.push_back("speed not judged for " + std::to_string(hidden) + " group" +
                      (hidden == 1 ? "" : "s") + " below --slow-factor: the comparable groups' " +
                      "noise (up to " + std::to_string(std::lround(worst_noise * 100)) +
                      "%) was as large as the gap; nobody was called slow on them");
  }

  // And where the noise hid gaps of the size --slow-factor asks for at all: a node that slow
  // would not have been named, and silence must not read as "at speed" (issue 32).
  std::vector<GroupSpeed> judged;
  std::vector<double> iteration_se;
  for (const FleetRound& r : v.rounds) {
    for (const FleetGroupRecord& g : r.groups) {
      GroupSpeed s;
      s.judgement = g.speed == to_string(SpeedJudgement::not_measured)
                        ? SpeedJudgement::not_measured
                        : SpeedJudgement::normal;
      s.groups_compared = g.groups_compared;
      s.noise = g.noise;
      judged.push_back(s);
      iteration_se.push_back(g.iteration_se);
    }
  }
  if (const std::string note = speed_resolution_note(judged, iteration_se, args.slow_factor);
      !note.empty()) {
    v.notes.push_back(note);
  }

  const FleetConclusion conclusion = planner.conclude();
  v.bound_reached = conclusion.bound_reached;
  for (int r = 0; r < world; ++r) {
    FleetNode& node = v.nodes[r];
    node.verdict = std::string(to_string(conclusion.nodes[r]));
    node.round_speed = std::string(to_string(conclusion.speed[r].judgement));
    node.groups_compared = conclusion.speed[r].groups_compared;
    if (!conclusion.reasons[r].empty()) node.reasons.push_back(conclusion.reasons[r]);
  }
  if (solo) {
    FleetNode& node = v.nodes[0];
    node.reasons.clear();
    node.verdict = solo->outcome == GroupOutcome::ok ? "healthy" : "faulty";
    node.round_speed = std::string(to_string(solo->speed));
    node.groups_compared = solo->groups_compared;
    if (solo->outcome != GroupOutcome::ok) {
      node.reasons.push_back("its all-gather across its own GPUs: " +
                             std::string(to_string(solo->outcome)) + ": " + solo->detail);
    }
  }
  for (const auto& bad : conclusion.bad_pairs) {
    FleetBadPair pair;
    pair.ranks = bad.members;
    for (int m : bad.members) pair.hosts.push_back(hosts[m]);
    pair.reason = bad.reason;
    v.bad_pairs.push_back(std::move(pair));
  }
  // Stragglers by the nodes' own figures: only nodes whose local checks passed speak for the
  // fleet's median.
  std::vector<int> measured;
  std::vector<std::vector<std::pair<std::string, double>>> figures;
  for (int r = 0; r < world; ++r) {
    if (!locals[r] || local_failed(locals[r]->local) || misbehaving.count(r) > 0) continue;
    measured.push_back(r);
    figures.push_back(locals[r]->local.figures);
  }
  for (const FigureStraggler& s : figure_stragglers(figures)) {
    FleetNode& node = v.nodes[measured[s.node]];
    node.reasons.push_back(describe_straggler(s));
    if (node.verdict == "healthy") node.verdict = "straggler";
  }

  FleetExit end;
  // A rank that stopped answering cannot take part in MPI_Finalize, and one that broke the
  // protocol cannot be trusted to: the job ends by MPI_Abort, after the verdict. (Timed-out
  // groups alone do not need it: their ranks are alive, and the messages nobody received do
  // not hold MPI_Finalize.)
  end.abort_job = !unresponsive.empty() || !misbehaving.empty();
  if (end.abort_job) {
    v.notes.push_back(
        "after this verdict the MPI job is ended with MPI_Abort (a rank stopped answering or "
        "broke the protocol), so no rank can hang in MPI_Finalize");
  }
  v.duration_s = Seconds(SteadyClock::now() - run.process_start).count();
  finalize_fleet_verdict(v);
  end.code = deliver_or_internal_error(v, args).code;

  // Only now release the other ranks: a stuck one can no longer cost the verdict. Not when the
  // job ends by MPI_Abort: released ranks would wait in MPI_Finalize for the stuck one, and an
  // abort reaching ranks inside MPI_Finalize crashes or hangs Open MPI 4.1's mpirun in its own
  // clean-up (measured: exit 139, or no exit). Still polling for an assignment, they just end.
  if (!end.abort_job) {
    Assignment done;
    done.done = true;
    done.exit_code = end.code;
    for (int r = 1; r < world; ++r) run.link->send_text(r, FleetTag::assignment, encode(done));
  }
  end.threads_abandoned = run.threads_abandoned || driver.threads_abandoned();
  return end;
}

}  // namespace preflight
