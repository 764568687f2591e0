#pragma once
// Command-line parsing (CLI11). Parsing only: it produces an Invocation and never runs
// anything, so every flag combination is unit-testable.
#include <optional>
#include <string>
#include <vector>

#include "preflight/check.hpp"

namespace preflight {

enum class Command { run, list, thresholds, fleet, report, message };

struct RunArgs {
  Profile profile = Profile::quick;
  std::vector<std::string> checks;
  std::string json_path;  // "-" for stdout; empty: no JSON file
  std::optional<int> timeout_s;
  std::optional<int> expect_gpus;
  std::string thresholds_path;
  bool strict = false;
  std::vector<std::string> inject_faults;
  bool colour = true;          // --no-color turns it off; it is only used on a terminal anyway
  CheckOptions check_options;  // options the checks add (--gemm-dtypes ...), as text
  std::optional<int> repeat;   // burn-in: --repeat N passes
  std::optional<double> duration_s;  // burn-in: --duration, in seconds
  bool stop_on_fail = false;
  std::string prom_path;  // --prom: node_exporter textfile; empty: none
};

// `preflight fleet`: one process per node under mpirun/srun. The node options of `run` apply
// to every node's local checks; the rest shape the network rounds (docs/fleet.md).
struct FleetArgs {
  Profile local_profile = Profile::quick;
  std::vector<std::string> checks;  // local checks instead of the profile's
  std::optional<int> expect_gpus;
  std::string thresholds_path;
  CheckOptions check_options;
  std::string json_path;  // the fleet verdict (rank 0); "-": stdout
  std::optional<int> timeout_s;
  std::optional<double> group_timeout_s;
  std::optional<int> local_timeout_s;
  std::string transport = "nccl";  // nccl | host
  int group_size = 2;
  std::string topology_path;
  std::string sizes;         // all-gather sizes per rank, e.g. "1M,64M"; empty: the transport's
  double slow_factor = 0.8;  // a group below this fraction of comparable groups' median is slow
  double min_busbw_gbps = 0;
  std::vector<std::string> inject_faults;
  std::string local_json_dir;  // each node's own verdict as DIR/<host>-rank<R>.json
  bool colour = true;
};

struct ThresholdsArgs {
  std::string sku;              // --sku ID or NAME
  std::string thresholds_path;  // --thresholds FILE: show the file applied
};

// `preflight report FILE...`: saved node and fleet verdicts rendered for people or scripts.
struct ReportArgs {
  std::vector<std::string> files;  // "-": stdin
  std::string output;              // empty or "-": stdout
  std::string format = "html";     // html | tsv
};

struct Invocation {
  Command command = Command::message;
  RunArgs run;
  FleetArgs fleet;
  ThresholdsArgs thresholds;
  ReportArgs report;
  bool list_json = false;
  // Command::message: text for stdout (help, version) or an error line for stderr.
  std::string message;
  int exit_code = 0;
};

// check_options: the options the registered checks add to `run` (every CheckInfo::options);
// the parser stores their values as text for the checks to validate.
Invocation parse_command_line(int argc, const char* const* argv,
                              const std::vector<CheckOptionSpec>& check_options = {});

// "0.1.0 (git abc123)"
std::string version_string();

}  // namespace preflight
