#pragma once
// The verdict model: findings on entities, per-check results, and the one aggregation rule
// that turns them into a node verdict and an exit code (docs/verdict.md).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace preflight {

enum class Status { pass, warn, fail, skip, error };
enum class Severity { info, warn, fail };
// Whom a finding blames: the node (its hardware, driver, configuration), or the tool's own
// installation on it (the wrong package for the driver, a library it needs missing). A check
// whose failures all blame the tool has status error, so the verdict's exit code is 3, not 1:
// an admin fixes the package, not the node (docs/verdict.md).
enum class Blame { node, tool };
// What an operator (or a Slurm hook) should do about a finding, machine-readable: the least
// that clears it (docs/findings.md, "Recommended action"). For Xid events the buckets of
// NVIDIA's Xid catalogue; for the other codes set per code in its table. Ordered by weight: a
// node's action is the heaviest of its findings'.
enum class Action { none, restart_job, reset_gpu, reboot, service };
inline constexpr Action kAllActions[] = {Action::none, Action::restart_job, Action::reset_gpu,
                                         Action::reboot, Action::service};

std::string_view to_string(Status status);
std::string_view to_string(Severity severity);
std::string_view to_string(Action action);  // "none", "restart_job", "reset_gpu", ...
std::optional<Action> parse_action(std::string_view text);

// Documented exit codes (README, docs/verdict.md).
enum ExitCode : int {
  kExitHealthy = 0,
  kExitUnhealthy = 1,
  kExitInvalidInvocation = 2,
  kExitInternalError = 3,
};

struct Finding {
  std::string code;  // stable, from the catalogue (docs/findings.md)
  Severity severity = Severity::info;
  std::string entity;  // gpu0, mlx5_1, gpu0-gpu3, node
  std::string message;
  std::optional<double> value;
  std::string unit;
  std::optional<double> threshold;
  std::string remediation;
  bool injected = false;  // produced by --inject-fault
  // Made by comparing the check's readings with thresholds (Check::judge): `preflight judge`
  // makes it again from the recorded readings. false: an observation (data corrupted, a copy
  // that hung, a device that failed) that stands whatever the thresholds say.
  bool judged = false;
  // Set from the code's catalogue entry by make_finding (catalogue.hpp). Not written to the
  // verdict, whose code says it: `preflight judge` sets it again from the catalogue.
  Blame blame = Blame::node;
  // From the code's catalogue entry (make_finding); written to the verdict as "action".
  Action action = Action::none;

  // Attaches the measured value the finding is about, its unit and the limit it crossed.
  Finding& measured(double measured_value, std::string value_unit,
                    std::optional<double> limit = std::nullopt);
};

// One figure a check measured: on which entity, what, and in which unit. Its key in the verdict
// JSON is "<entity>.<name>" ("gpu0.bf16.tflops_median", "mlx5_0-mlx5_3.pair_gbps"), or the name
// alone for a figure of the node ("unidirectional_min_gbps", "allgather.1048576.busbw_gbps"). The
// name's leading segments qualify it (a dtype, a collective and size) where one entity has
// several figures of the same kind; CheckInfo::figures says which segments are labels.
struct Metric {
  std::string entity;  // gpu0, mlx5_0, gpu0-gpu3; empty: the node
  std::string name;    // tflops_median, bf16.tflops_median
  double value = 0;
  std::string unit;  // "TFLOP/s", "GB/s", "Gb/s", "C", "ms", "count", ...

  std::string key() const { return entity.empty() ? name : entity + "." + name; }
};
using Metrics = std::vector<Metric>;

// A square table of figures between entities, e.g. the GB/s of every ordered GPU pair.
// values[row][col] is the figure from labels[row] to labels[col]; nullopt where it does not
// apply (the diagonal) or was not measured (JSON null).
struct Matrix {
  std::string name;  // "unidirectional_gbps"
  std::string unit;  // "GB/s"
  std::vector<std::string> labels;
  std::vector<std::vector<std::optional<double>>> values;
};

// What a check measured and what it judged against, enough to judge it again without the
// hardware (Check::judge, `preflight judge`): each check's typed readings serialized by the
// check itself (docs/verdict.md, "readings"). null: the check records none.
using Readings = nlohmann::ordered_json;

// What the time model planned for a check (docs/plan.md): its modelled seconds, to compare with
// duration_s; the deadline it was given; and what it covered. Reduced coverage (the time did not
// allow the profile's whole work) is shown, never a failure by itself.
struct CheckPlanRecord {
  double expected_s = 0.0;
  double deadline_s = 0.0;
  bool reduced = false;
  std::string coverage;   // one line: "16 of 56 ordered pairs (step 2 of 4)"
  int rotation_step = 0;  // 0-based; pairs rotate over rotation_steps runs
  int rotation_steps = 1;
  std::vector<std::string> covered;  // the pairs this run covered, when rotated
};

// A file a check keeps in the state directory (--state-dir), to be written there when the
// run's verdict is healthy: the kernel log's cursor moves past events only once a run judged
// the node healthy. Not part of the verdict.
struct StateUpdate {
  std::string file;  // a plain name inside the state directory ("kernel-log-cursor")
  std::string content;
};

struct CheckResult {
  std::string name;
  Status status = Status::pass;
  double duration_s = 0.0;
  std::string summary;
  std::string skip_reason;
  std::vector<Finding> findings;
  Metrics metrics;
  std::vector<Matrix> matrices;
  Readings readings;
  std::optional<CheckPlanRecord> plan;        // nullopt: the check was never planned (not run)
  std::vector<StateUpdate> state_if_healthy;  // written by the app when the verdict is healthy

  void add_metric(std::string entity, std::string metric, double value, std::string unit) {
    metrics.push_back({std::move(entity), std::move(metric), value, std::move(unit)});
  }
};

// pass/warn/fail from the most severe finding; info findings do not change the status. error
// where every fail finding blames the tool's installation (Finding::blame).
Status status_from_findings(const std::vector<Finding>& findings);

struct GpuIdentity {
  int index = 0;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;
  std::string serial;
};

// A CUDA library the binary loads at run time (cuBLAS, NCCL): where it was found, or why not.
struct LibraryInfo {
  std::string name;     // "cuBLAS"
  std::string soname;   // "libcublas.so.13"
  std::string path;     // empty when not found
  std::string version;  // empty when unknown
  std::string problem;  // empty when found
};

struct SystemInfo {
  std::string driver_version;  // empty when unknown
  std::string cuda_driver;
  std::string cuda_runtime;
  std::string nccl;
  std::vector<GpuIdentity> gpus;
  std::vector<LibraryInfo> libraries;
};

struct ToolInfo {
  std::string name = "preflight";
  std::string version;
  std::string git;
};

inline constexpr std::string_view kVerdictSchema = "preflight.verdict/1";
inline constexpr const char* kFleetSchema = "preflight.fleet/1";  // docs/fleet-verdict.md

// The thresholds a verdict was judged with: the SKU they follow, how it was found, the file
// applied on top and every effective value.
struct ThresholdsRecord {
  std::string sku = "generic";
  std::string sku_name;
  std::string detected_by;
  std::string overrides_file;
  std::vector<std::pair<std::string, double>> values;
  // The node shape judged against (node_shape.hpp) and how it was chosen; "" when none.
  std::string node_shape;
  std::string node_shape_by;
};

// How the run's time was divided (docs/plan.md): the deadline, the node shape planned for, the
// model's expected total and the least --timeout this node needs, and the rotation counter.
struct RunPlanRecord {
  double timeout_s = 0.0;
  bool timeout_given = false;  // --timeout; otherwise the profile's default for the node
  double expected_s = 0.0;     // discovery and every check, as modelled
  double floor_s = 0.0;        // the least --timeout that gives this node a meaningful verdict
  int gpus = 0;
  int nics = 0;
  bool reduced = false;        // some check does less than its profile's whole work
  std::uint64_t rotation = 0;  // the run counter the pair rotation followed
  std::string rotation_from;   // "--rotation", "--state-dir DIR", or "none"
};

// Set by `preflight judge`: the verdict was made again from another one's readings.
struct RejudgeRecord {
  std::string source;         // the file the readings came from
  std::string source_tool;    // the version that measured them
  std::string judged_at;      // UTC ISO-8601
  std::string thresholds_by;  // "recorded", "--sku h100-pcie-80gb", "SKU of the recorded run"
  int checks_rejudged = 0;    // checks whose judged findings were made again
  std::vector<std::string> checks_kept;  // checks without readings: findings kept as recorded
  // Observations the readings prove (Check::observe) that the verdict lacked, added again.
  int observations_restored = 0;
};

// One figure of the run compared with the node's history (`--history`, docs/baseline.md).
struct RegressionRecord {
  std::string check;   // "gemm"
  std::string entity;  // "gpu3"; empty: the node
  std::string metric;  // "bf16.tflops_median"
  std::string unit;
  double current = 0;        // this run's value
  double reference = 0;      // what it was compared with
  double drop = 0;           // the window's median relative drop below the reference (0.06: 6%)
  double noise = 0;          // the relative run-to-run noise it was judged against
  int reference_runs = 0;    // earlier runs behind the reference; 0: the fleet baseline's
  std::string reference_by;  // "own history" or "fleet baseline"
  bool regressed = false;
};

// The limits learned from the fleet and the node's history applied to the run: which baseline
// group judged it and what the history held (docs/baseline.md). Absent: neither was given.
struct LearnedRecord {
  std::string baseline_group;   // the group of the thresholds file's baseline; empty: none
  bool baseline_found = false;  // the baseline had that group
  int baseline_figures = 0;     // figures of the run judged against it
  std::string history_dir;      // empty: no --history
  int history_runs = 0;         // earlier verdicts of this host used
  std::vector<std::string> history_skipped;  // "FILE: why"
  std::vector<RegressionRecord> regressions;
};

// One pass of a repeated run (`--repeat`, `--duration`): its own verdict, kept whole.
struct PassRecord {
  int index = 1;  // from 1
  std::string started_at;
  double duration_s = 0.0;
  Status verdict = Status::pass;
  int exit_code = kExitHealthy;
  std::string reason;
  std::vector<Finding> findings;
  std::vector<CheckResult> checks;
};

// How a repeated run was asked for and how it ended (docs/burnin.md).
struct BurninInfo {
  std::optional<int> passes_requested;         // --repeat
  std::optional<double> duration_requested_s;  // --duration
  int passes_run = 0;
  // repeat | duration | failure (--stop-on-fail) | signal | stuck (a check was abandoned)
  std::string stopped_by;
  int reported_pass = 0;  // whose checks and findings the top level of the verdict holds
};

struct Verdict {
  ToolInfo tool;
  std::string host;
  std::string started_at;  // UTC ISO-8601
  double duration_s = 0.0;
  std::string profile;
  std::vector<std::string> argv;
  SystemInfo system;
  Status verdict = Status::pass;  // pass, warn or fail
  int exit_code = kExitHealthy;
  std::string reason;
  // The heaviest action of the warn and fail findings (node_action), set by aggregate.
  Action action = Action::none;
  std::vector<std::string> injected_faults;
  std::vector<Finding> findings;  // run-level findings (discovery, interruption), entity node
  std::vector<CheckResult> checks;
  // Repeated runs only: how they went and every pass; the top-level findings and checks are
  // those of burnin->reported_pass.
  std::optional<BurninInfo> burnin;
  std::vector<PassRecord> passes;
  std::optional<int> first_failed_pass;        // the first pass whose verdict was unhealthy
  std::optional<ThresholdsRecord> thresholds;  // nullopt: none were set (discovery failed)
  std::optional<RejudgeRecord> rejudged;
  std::optional<LearnedRecord> learned;  // --history, or a thresholds file with a baseline
  std::optional<RunPlanRecord> plan;     // nullopt: no plan was made (discovery failed, judge)
};

// The aggregation rule: any check with status fail or error, or any run-level finding of
// severity fail, gives fail; else any warn gives warn; else pass. Exit code: fail -> 1, except
// that a fail caused only by tool errors (status error) -> 3; warn -> 0, or 1 with strict.
// Fills verdict, exit_code, reason and action. A repeated run's reason starts with "pass K/N: ",
// K being burnin->reported_pass.
void aggregate(Verdict& verdict, bool strict);

// The node's recommended action: the heaviest action of the warn and fail findings of the run
// and of its checks; info findings do not count (docs/findings.md, "Recommended action").
Action node_action(const Verdict& verdict);

// A drain-safe one-line reason: printable ASCII, no quotes, backslashes or newlines, at most
// 200 characters.
std::string sanitize_reason(std::string_view text);
inline constexpr std::size_t kMaxReasonLength = 200;

}  // namespace preflight
