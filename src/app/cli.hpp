#pragma once
// Command-line parsing (CLI11). Parsing only: it produces an Invocation and never runs
// anything, so every flag combination is unit-testable.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fleet/mpi/fleet_args.hpp"
#include "preflight/check.hpp"
#include "run/node_args.hpp"

namespace preflight {

enum class Command {
  run,
  list,
  thresholds,
  fleet,
  report,
  judge,
  plan,
  acknowledge,
  baseline,
  message
};

// `preflight run`: NodeArgs plus the strictness, burn-in and Prometheus output of one node.
struct RunArgs : NodeArgs {
  bool strict = false;
  std::optional<int> repeat;         // burn-in: --repeat N passes
  std::optional<double> duration_s;  // burn-in: --duration, in seconds
  bool stop_on_fail = false;
  std::string prom_path;  // --prom: node_exporter textfile; empty: none
  // The pair rotation's run counter (docs/plan.md): given, or kept in DIR/rotation.
  std::optional<std::uint64_t> rotation;
  std::string state_dir;
  // --history: the node's earlier verdicts, judged against (docs/baseline.md); empty: none.
  std::string history_dir;
};

// `preflight plan`: the time model's plan for this node or a described one, touching no
// hardware when the node is described (docs/plan.md).
struct PlanArgs {
  Profile profile = Profile::quick;
  std::vector<std::string> checks;
  std::optional<int> timeout_s;
  std::string node;  // --node gpus=N,sku=SKU,nics=M; empty: this node, by discovery
  std::optional<std::uint64_t> rotation;
  CheckOptions check_options;
  std::string json_path;  // "-": stdout
};

struct ThresholdsArgs {
  std::string sku;              // --sku ID or NAME
  std::string thresholds_path;  // --thresholds FILE: show the file applied
  std::string node_shape;       // --node-shape NAME, or "list"
};

// `preflight report FILE...`: saved node and fleet verdicts rendered for people or scripts.
struct ReportArgs {
  std::vector<std::string> files;  // "-": stdin
  std::string output;              // empty or "-": stdout
  std::string format = "html";     // html | tsv
};

// `preflight judge VERDICT...`: recorded readings judged again (docs/judge.md).
struct JudgeArgs {
  std::vector<std::string> files;
  std::string thresholds_path;  // --thresholds FILE, on top of the SKU's values
  std::string sku;              // --sku ID: instead of the SKU the run recorded
  std::string node_shape;       // --node-shape NAME: instead of the shape the run recorded
  bool recorded = false;        // --recorded-thresholds: the values the run was judged with
  std::string json_path;        // --json PATH|-; with several files, a directory
  bool strict = false;
  bool colour = true;
  std::string history_dir;  // --history DIR, as for run
};

// `preflight baseline VERDICT|DIR... --out FILE`: site limits learned from many nodes' verdicts
// (docs/baseline.md).
struct BaselineArgs {
  std::vector<std::string> inputs;  // verdict files, or directories of *.json verdicts
  std::string out_path;             // the thresholds file; "-": stdout (the summary to stderr)
  int min_nodes = 10;               // LearnOptions::min_nodes
  double drop_percent = 5;          // LearnOptions::drop, in percent
};

// `preflight acknowledge --state-dir DIR`: the kernel events logged so far stop counting
// (docs/checks/events.md, "Which events count").
struct AcknowledgeArgs {
  std::string state_dir;
};

struct Invocation {
  Command command = Command::message;
  AcknowledgeArgs acknowledge;
  RunArgs run;
  FleetArgs fleet;
  ThresholdsArgs thresholds;
  ReportArgs report;
  JudgeArgs judge;
  BaselineArgs baseline;
  PlanArgs plan;
  bool list_json = false;
  // Command::message: text for stdout (help, version) or an error line for stderr.
  std::string message;
  int exit_code = 0;
};

// check_options: the options the registered checks add to `run` (every CheckInfo::options);
// the parser stores their values as text for the checks to validate. runtime_description: the
// lines `--version` prints after "preflight <version>" (the toolkit, the driver floor, the CUDA
// libraries found), asked only when --version is given.
Invocation parse_command_line(int argc, const char* const* argv,
                              const std::vector<CheckOptionSpec>& check_options = {},
                              const std::function<std::string()>& runtime_description = {});

// "0.1.0 (git abc123)"
std::string version_string();

}  // namespace preflight
