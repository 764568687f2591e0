#pragma once
// A check is a class registered in one CheckRegistry. It says whether it can run here
// (skip_reason) and then runs, producing data (CheckResult); reporters render it. The CLI and
// the runner know no check by name.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/catalogue.hpp"
#include "preflight/engine/engines.hpp"
#include "preflight/faults.hpp"
#include "preflight/figures.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"
#include "preflight/work_plan.hpp"

namespace preflight {

enum class Profile { quick = 0, standard = 1, burnin = 2 };
inline constexpr std::array<Profile, 3> kAllProfiles = {Profile::quick, Profile::standard,
                                                        Profile::burnin};
std::string_view to_string(Profile profile);
std::optional<Profile> parse_profile(std::string_view text);
std::string_view describe(Profile profile);

// An option a check adds to `preflight run` (e.g. --gemm-dtypes). The CLI takes every check's
// options from the registry as text; the check that owns one validates and interprets it.
struct CheckOptionSpec {
  std::string flag;        // "--gemm-dtypes"
  std::string value_name;  // "LIST", shown in --help
  std::string description;
};

// The check options given on the command line: flag -> value text.
class CheckOptions {
 public:
  void set(std::string flag, std::string value) { values_[std::move(flag)] = std::move(value); }
  const std::string* find(std::string_view flag) const {
    const auto it = values_.find(flag);
    return it == values_.end() ? nullptr : &it->second;
  }
  const std::map<std::string, std::string, std::less<>>& all() const { return values_; }
  bool empty() const { return values_.empty(); }

 private:
  std::map<std::string, std::string, std::less<>> values_;
};

struct CheckInfo {
  std::string name;
  std::string description;  // one line: what it runs
  bool needs_gpu = true;    // skipped when the node has no GPU
  bool required = false;    // part of every run, whatever --checks says (inventory)
  // Time budget per profile; nullopt: the check is not part of that profile (it still runs
  // with --checks, under its standard budget).
  std::array<std::optional<std::chrono::seconds>, 3> budget;
  std::vector<FaultKindSpec> fault_kinds;
  // The tables of the finding codes it emits: its own (<check>_findings.cpp in its folder)
  // first, then those it shares with other checks (src/checks/common/findings.hpp).
  std::vector<const FindingTable*> findings;
  // Its threshold keys, "<name>.*" (<check>_thresholds.cpp in its folder): what a thresholds
  // file may set for it, with ranges, generic values and a known SKU's values.
  ThresholdSpecs thresholds;
  std::vector<CheckOptionSpec> options;  // options this check adds to `preflight run`
  // Seconds the check spends around its work, whatever its size: reading the error counters
  // before and after its load (docs/checks/counters.md). The planner adds them to the check's
  // model (expected and floor) whenever it plans work.
  double fixed_overhead_s = 0;
  // Its key figures (Prometheus families, fleet figures) and the bars the HTML page draws: the
  // reporters know no check by name and read these (CheckRegistry::figure_catalogue()).
  std::vector<FigureExport> figures;
  std::optional<BarChartSpec> bars;

  std::optional<std::chrono::seconds> budget_for(Profile p) const {
    return budget[static_cast<std::size_t>(p)];
  }
};

// What the node is expected to have (from the command line).
struct NodeExpectations {
  std::optional<int> gpus;  // --expect-gpus; nullopt: at least one
};

// Everything a check may read while it runs. The runner owns it; a check that overran its
// deadline and was abandoned still holds a valid reference (the runner never frees it).
struct CheckContext {
  Profile profile = Profile::quick;
  NodeExpectations expect;
  const Thresholds* thresholds = nullptr;
  const FaultPlan* faults = nullptr;
  const NodeReading* node = nullptr;  // from discovery
  Engines engines;  // the node backend and the measurement engines; nullptr where none
  SteadyClock::time_point deadline;
  std::shared_ptr<std::atomic<bool>> cancel;  // set when the deadline passed or on a signal
  const CheckOptions* options = nullptr;      // never null while a check runs
  // Threads a check had to leave behind, stuck in the driver (per-GPU workers): the process
  // must then end with _Exit rather than run destructors under them.
  std::shared_ptr<std::atomic<int>> abandoned_threads;
  // What the planner asked of this check (its share of the run's time, the node's shape, the
  // rotation): run() sizes its work with plan_work(work), the plan the run recorded.
  WorkRequest work;
  // --state-dir: where this node's state between runs is kept (the kernel log's cursor); empty
  // when none was given. A check reads its own files there; what it wants written goes in
  // CheckResult::state_if_healthy, written by the app only when the verdict is healthy.
  std::string state_dir;
  // The driver's Xid events, registered once for the run (NodeBackend::open_events); null where
  // the driver offers none. The load checks drain it around their load (counters.hpp).
  std::shared_ptr<GpuEventSource> gpu_events;

  bool cancelled() const { return cancel && cancel->load(); }
  // The planner's request for this check (its seconds, the node's shape, the rotation) with the
  // context's profile, options and thresholds: what run() plans its work with, before setting
  // the shape to what it sees. A context made by hand (unit tests) has no request of its own and
  // plans the profile's whole work.
  WorkRequest work_request() const {
    WorkRequest r = work;
    r.profile = profile;
    r.options = options;
    r.thresholds = thresholds;
    return r;
  }
  // When the check stops starting new work, to leave time for its verdict: its deadline less
  // `most`, or less a tenth of the time left now when that is less, so a short deadline (as
  // little as 1.5 x the modelled seconds + 0.5 s, docs/plan.md) is not eaten by the margin.
  SteadyClock::time_point finish_by(SteadyClock::duration most) const {
    const auto left = std::max(deadline - SteadyClock::now(), SteadyClock::duration::zero());
    return deadline - std::min(most, left / 10);
  }
  double seconds_left() const {
    return std::chrono::duration<double>(deadline - SteadyClock::now()).count();
  }
};

class Check {
 public:
  virtual ~Check() = default;
  virtual const CheckInfo& info() const = 0;
  // Why this check cannot run on this node; nullopt when it can. The runner already skips
  // checks with needs_gpu on a node without GPUs.
  virtual std::optional<std::string> skip_reason(const CheckContext& ctx) const {
    (void)ctx;
    return std::nullopt;
  }
  // Throws InvalidInput (naming the flag) for a bad value of one of this check's options.
  // Called before anything runs.
  virtual void validate_options(const CheckOptions& options) const { (void)options; }
  // The time budget under this profile with these options; nullopt: not part of the profile.
  // Checks whose run time is configurable (--gemm-seconds) override it.
  virtual std::optional<std::chrono::seconds> budget(Profile profile,
                                                     const CheckOptions& options) const {
    (void)options;
    return info().budget_for(profile);
  }
  // The check's time model (docs/plan.md): the work it will do for this request and the
  // seconds that work is expected to take. Pure: it touches no hardware. run() sizes its work by
  // the same function (ctx.work), so what `preflight plan` shows is what a run does. The
  // default, for a check without a model: its budget for the profile, whatever it is given.
  virtual WorkPlan plan_work(const WorkRequest& request) const;
  // Runs the check. May throw: the runner records the check as status error. The runner owns
  // the result's name, duration and status: the status follows the findings, unless the check
  // returns skip (it does not apply here). const: a check abandoned after its deadline may still
  // be running while the next one starts, so a run leaves the check object as it found it.
  virtual CheckResult run(CheckContext& ctx) const = 0;
  // Judges readings this check recorded (CheckResult::readings), in this run or in a verdict
  // read back by `preflight judge`, against these thresholds: the findings that depend on
  // thresholds (the caller marks them judged). A pure function: run() calls it on its own
  // readings, so a verdict judged again with the thresholds it was made with has the same
  // findings. nullopt: this check records no readings (its findings are kept as recorded).
  // Throws InvalidInput naming the field for readings it cannot read.
  virtual std::optional<std::vector<Finding>> judge(const Readings& readings,
                                                    const Thresholds& thresholds) const {
    (void)readings;
    (void)thresholds;
    return std::nullopt;
  }
  // The observations these readings prove whatever the thresholds say (data that arrived
  // corrupted, a transfer or a job that failed): findings not judged, made by the functions
  // run() makes them with, so never more than run() reported on the same readings. `preflight
  // judge` adds each one the recorded findings lack (removed by hand, or lost), so a verdict
  // whose readings record corruption cannot pass. The default: none (a check whose readings
  // prove none, or whose findings are all judged). Throws InvalidInput naming the field for
  // readings it cannot read.
  virtual std::vector<Finding> observe(const Readings& readings) const {
    (void)readings;
    return {};
  }
};

class CheckRegistry {
 public:
  void add(std::unique_ptr<Check> check);  // throws std::logic_error on a duplicate name
  const Check* find(std::string_view name) const;
  std::vector<const Check*> all() const;  // in registration order
  std::vector<std::string> names() const;
  // The fault kinds of the runner plus those of every registered check.
  std::vector<FaultKindSpec> fault_kinds() const;
  // Every check's figure declarations, in registration order, for the reporters.
  FigureCatalogue figure_catalogue() const;
  // The runner's finding codes and every table the checks list, each once, in registration
  // order. Throws std::logic_error for a code two tables declare.
  FindingCatalogue finding_catalogue() const;
  // Every check's threshold keys, in registration order: what Thresholds::for_sku takes.
  std::shared_ptr<const ThresholdSpecs> threshold_specs() const;

 private:
  std::vector<std::unique_ptr<Check>> checks_;
};

// What a check covered, for CheckResult::plan: the runner adds the modelled seconds and the
// deadline.
CheckPlanRecord coverage_record(const WorkPlan& plan);

// The finding codes the runner itself emits (runner_findings.cpp; docs/findings.md, "Runner").
const FindingTable& runner_findings();
// The codes of limits learned from the fleet and the node's history (src/run/learned_findings.cpp,
// emitted by src/learned/).
const FindingTable& learned_findings();

// Fault kinds the runner itself implements (hang@check=NAME).
std::vector<FaultKindSpec> runner_fault_kinds();

// Registers every check built into this binary (src/checks/builtin_checks.cpp).
void register_builtin_checks(CheckRegistry& registry);

}  // namespace preflight
