#pragma once
// The fleet verdict (`preflight fleet`, schema preflight.fleet/1, docs/fleet-verdict.md): what
// every node's own checks said, condensed; what the network rounds saw; which nodes the planner
// concluded faulty, slow or unclear; and the one rule that turns that into lists, an exclude
// list for the scheduler and an exit code. Host-only: rank 0 builds it after the rounds.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/logic/fleet_systemic.hpp"
#include "preflight/figures.hpp"
#include "preflight/verdict.hpp"
#include "report/report.hpp"

namespace preflight {

// A node's own verdict, condensed to what rank 0 needs: sent over MPI as JSON, so it stays small
// whatever the node found.
struct LocalSummary {
  // "pass", "warn", "fail", "error", "skip" as in the node verdict; "missing" when none arrived
  // (the default, so a node rank 0 heard nothing from never reads as judged).
  std::string verdict = "missing";
  int exit_code = 0;
  std::string reason;  // the node verdict's one-line reason
  double duration_s = 0;
  std::vector<std::string> findings;  // "CODE@entity" of the fail and warn findings
  // Figures for the fleet straggler statistic (higher is better), e.g. {"gemm_bf16_tflops",
  // 771.2}, {"pcie_h2d_gbps", 53.1}, {"hbm_gbps", 2810}; see summarize_local.
  std::vector<std::pair<std::string, double>> figures;
};

// The node verdict condensed. Figures, each the minimum over the entities that feed it (a node
// is as slow as its slowest GPU), only those the checks measured; which metric feeds which figure
// is each check's declaration (FigureExport::fleet_figure in `figures`, from
// CheckRegistry::figure_catalogue()): today gemm_<dtype>_tflops, pcie_h2d_gbps, pcie_d2h_gbps,
// hbm_gbps and nvlink_gbps (docs/fleet.md).
LocalSummary summarize_local(const Verdict& v, const FigureCatalogue& figures);

// {"verdict", "exit_code", "reason", "duration_s", "findings": [..], "figures": {name: number}}.
nlohmann::ordered_json local_summary_to_json(const LocalSummary& s);
// Throws InvalidInput (include/preflight/errors.hpp) when the object is malformed: a missing or
// mistyped verdict or exit_code, an unknown verdict, a field of the wrong type. Unknown keys
// are ignored (a newer node may send more); missing optional fields stay empty.
LocalSummary local_summary_from_json(const nlohmann::ordered_json& j);
// The same from the text of a message; text that is not JSON is InvalidInput too.
LocalSummary local_summary_from_json_text(const std::string& text);

struct FleetNode {
  int rank = 0;
  std::string host;
  std::string verdict = "healthy";  // healthy | faulty | straggler | ambiguous
  std::vector<std::string> reasons;
  LocalSummary local;
  // The rounds' judgement of its speed (the group bus bandwidths, not its own figures) and how
  // many comparable groups it rested on: "slow" (a straggler by the rounds), "normal",
  // "unjudged" or "not_measured" (NodeSpeed in fleet_planner.hpp).
  std::string round_speed = "not_measured";
  int groups_compared = 0;
};

// One group of one round: the ranks that all-gathered together and how it went.
struct FleetGroupRecord {
  std::vector<int> ranks;
  std::string outcome;  // "ok", or what went wrong (set by the planner, e.g. "timeout")
  double busbw_gbps = 0;
  double duration_s = 0;
  std::string detail;
  // How its speed was judged (fleet_speed.hpp): "normal", "slow", "unjudged", or "not_measured"
  // for a group that did not finish; over how many comparable groups and their median.
  std::string speed = "not_measured";
  int groups_compared = 0;
  double median_gbps = 0;
  // Its gap below that median (1 - busbw / median) and the noise of the other comparable groups
  // (the spread of their logarithms, fleet_speed.hpp): a slow call needs gap beyond 2.5 x noise.
  double gap = 0;
  double noise = 0;
  // Proven ranks run beside the retests for comparison (FleetPlannerOptions::reference_groups).
  bool reference = false;
  // Only where the allgather-slow drill paced a member (host transport): that member's own
  // figure before the pacing, so busbw_gbps / drill_unslowed_gbps is the factor the drill
  // delivered against the drilled node's speed (below it only where a partner was slower
  // still); 0 else.
  double drill_unslowed_gbps = 0;
  // The largest relative standard error of a member's figure from its own iterations
  // (GroupWork::busbw_rel_se); 0 where the transport does not report it.
  double iteration_se = 0;
};

struct FleetRound {
  int index = 0;
  std::vector<FleetGroupRecord> groups;
};

struct FleetListed {
  int rank = 0;
  std::string host;
  std::string reason;
};

// Two (or more) nodes that fail together but pass with others: the link between them.
struct FleetBadPair {
  std::vector<int> ranks;
  std::vector<std::string> hosts;
  std::string reason;
};

struct FleetVerdict {
  ToolInfo tool;
  std::string started_at;  // UTC ISO-8601
  double duration_s = 0;
  std::vector<std::string> argv;
  std::string transport;  // "nccl" | "host"
  std::string local_profile;
  int group_size = 2;
  int round_bound = 0;
  bool bound_reached = false;
  double timeout_s = 0;
  double group_timeout_s = 0;
  double local_timeout_s = 0;  // what each node's local checks were given (docs/plan.md)
  double launch_s = 0;         // rank 0's start to MPI up; the budgets count from then
  // The guard (fleet_systemic.hpp): the share of the nodes one cause may exclude.
  double max_exclude_share = kDefaultMaxExcludeShare;
  std::vector<FleetNode> nodes;  // ordered by rank (finalize sorts them)
  std::vector<FleetRound> rounds;
  // Filled by finalize_fleet_verdict:
  std::vector<FleetListed> faulty, stragglers, ambiguous;
  std::vector<FleetBadPair> bad_pairs;  // filled by the caller (the planner)
  // Filled by finalize: comma-separated unique host names for `sbatch --exclude`, in rank
  // order: faulty, stragglers and ambiguous nodes. Ambiguous ones are in because the rounds
  // could not clear them: leaving out a healthy node costs one node, keeping a faulty one can
  // hang or slow the whole job. Not the nodes that failed by a systemic cause.
  std::string exclude;
  // Filled by finalize: the causes more than max_exclude_share of the nodes failed by. Any makes
  // the verdict a tool-side "fail", exit 3: the common cause is to be found, not the nodes.
  std::vector<SystemicCause> systemic;
  std::vector<std::string> injected_faults;
  std::vector<std::string> notes;  // run-level remarks, e.g. a rank that stopped answering
  std::string verdict;             // "pass" | "fail", filled by finalize
  std::string reason;              // one drain-safe line, filled by finalize
  // 0: no faulty, straggler or ambiguous node and no bad pair; 1 otherwise (finalize). 2 and 3
  // are the caller's (invalid invocation, internal error: mark_fleet_internal_error).
  int exit_code = 0;
};

// From the nodes (and bad pairs): the three lists, exclude, verdict, reason and exit code.
// Sorts nodes by rank; a node verdict outside healthy|faulty|straggler|ambiguous is made
// ambiguous (with a reason saying so) rather than passed. Idempotent.
void finalize_fleet_verdict(FleetVerdict& v);

// After finalize: preflight itself went wrong (the rounds could not be completed, an
// exception). verdict "fail", exit code 3, the reason starts with "internal error: ", and `what`
// is kept in notes.
void mark_fleet_internal_error(FleetVerdict& v, const std::string& what);

// The launch left too little of --timeout to judge any node (plan_after_launch): no nodes, no
// lists, verdict "fail", exit code 3 (a tool or launch problem, never the nodes'), `why` as the
// reason (after "injected fault: " in a drill) and in notes.
void mark_fleet_launch_problem(FleetVerdict& v, const std::string& why);

// The document, two-space indent, trailing newline; keys in the order of docs/fleet-verdict.md.
std::string fleet_verdict_to_json_text(const FleetVerdict& v);
// A short terminal table: one line per node that is not healthy, the rounds, the exclude list,
// then "Fleet verdict: FAIL (exit 1): <reason>".
std::string fleet_verdict_to_text(const FleetVerdict& v, const TextStyle& style = {});

}  // namespace preflight
