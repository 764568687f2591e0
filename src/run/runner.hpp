#pragma once
// The runner: discovery, then each planned check in its own thread under a deadline. The
// calling thread only waits, so a check stuck inside a driver call cannot hold the run: the
// check is recorded as CHECK_TIMEOUT, abandoned, and the verdict still comes out. RunState is
// the thread-safe record of the run that the signal/deadline supervisor can finalize from if
// the runner itself cannot.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "preflight/check.hpp"
#include "preflight/verdict.hpp"
#include "run/bounded_task.hpp"

namespace preflight {

struct PlannedCheck {
  const Check* check = nullptr;
  std::chrono::seconds budget{0};
};

// The checks a run will execute: the profile's checks, or those named by --checks (in
// registry order), with checks marked required always included. A check is part of a profile
// when it has a budget for it; the time each gets is the planner's (run/planner.hpp). Throws
// InvalidInput for an unknown name, an option of a check that is not part of the run, or an option
// value its check rejects.
std::vector<PlannedCheck> plan_checks(const CheckRegistry& registry, Profile profile,
                                      const std::vector<std::string>& selected,
                                      const CheckOptions& options = {});

enum class StopCause { none, signal, deadline };

// skip_reason of a check the run never started (as opposed to one that chose to skip).
inline constexpr std::string_view kNotRunPrefix = "not run: ";

// What the progress display needs of a run under way.
struct RunProgress {
  std::vector<std::string> names;                    // the planned checks, in order
  std::vector<std::optional<CheckResult>> finished;  // results so far (metrics dropped)
  std::optional<std::size_t> running;
  double running_s = 0;  // how long the running check has been running
};

class RunState {
 public:
  RunState(Verdict skeleton, const std::vector<PlannedCheck>& plan, bool strict);

  void set_system(SystemInfo system);
  void set_thresholds(ThresholdsRecord thresholds);
  void set_plan(RunPlanRecord plan);
  void check_started(std::size_t index);
  void check_finished(std::size_t index, CheckResult result);
  void add_run_finding(Finding finding);
  void note_abandoned_thread();
  // Applied by compose() to every check result: tags findings that injected faults produce.
  void set_injection_marker(std::function<void(CheckResult&)> marker);
  int abandoned_threads() const;

  // From the supervisor: a signal arrived (why: "SIGTERM") or the hard deadline passed.
  void request_stop(StopCause cause, std::string why);
  StopCause stop_cause() const;
  std::string stop_why() const;

  // Sleeps until notify() or the timeout, whichever first (waiters re-check their condition).
  void wait_for_event(std::chrono::milliseconds timeout);
  void notify();

  // The verdict as it stands: finished checks as recorded; the check in progress (if any)
  // gets CHECK_INTERRUPTED (signal) or CHECK_TIMEOUT (deadline); checks not started are
  // skipped with "not run: <why>". Aggregated.
  Verdict compose() const;
  RunProgress progress() const;

  // True for exactly one caller: the one that writes the verdict.
  bool claim_finalize();
  void add_incompleteness(Verdict& v) const;  // requires mutex_ held
  bool finalized() const { return finalized_.load(); }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  Verdict verdict_;
  std::vector<std::optional<CheckResult>> results_;
  std::vector<std::string> names_;
  std::optional<std::size_t> running_;
  SteadyClock::time_point running_since_;
  SteadyClock::time_point started_;
  bool strict_ = false;
  StopCause stop_cause_ = StopCause::none;
  std::string stop_why_;
  int abandoned_ = 0;
  std::function<void(CheckResult&)> marker_;
  std::atomic<bool> finalized_{false};
  bool event_ = false;
};

struct RunSettings {
  Profile profile = Profile::quick;
  NodeExpectations expect;
  SteadyClock::time_point deadline;  // the global --timeout
  std::chrono::seconds discovery_budget{20};
  // How long a check gets to return on its own after its deadline passed before it is
  // abandoned.
  std::chrono::milliseconds cancel_grace{grace::kCheckCancel};
  std::string thresholds_path;  // --thresholds file, already validated once
  // --node-shape (already validated once); empty: the DMI product name read from
  // dmi_product_path, else the reference board of the GPUs found (node_shape.hpp).
  std::string node_shape;
  std::string dmi_product_path = "/sys/class/dmi/id/product_name";
  CheckOptions options;  // check options (--gemm-dtypes ...), already validated
  // The plan's inputs beyond discovery (docs/plan.md): the RDMA devices counted before the run
  // (the rdma check counts its compute NICs again), the rotation counter and where it came from,
  // and whether the deadline is a --timeout or the profile's default.
  int nics = 0;
  std::uint64_t rotation = 0;
  std::string rotation_from = "none";
  bool timeout_given = false;
  std::string state_dir;  // --state-dir (CheckContext::state_dir); empty: none
  // Every threshold key of the binary (CheckRegistry::threshold_specs()): a check may read a
  // key of another (pcie reads inventory's expected link), and the verdict records them all.
  // Required.
  std::shared_ptr<const ThresholdSpecs> threshold_specs;
};

struct RunOutcome {
  Verdict verdict;
  std::string invalid;  // non-empty: bad input found after discovery (exit 2, nothing written)
  std::vector<int> cuda_ordinals;  // GPUs discovery found usable by CUDA (fleet: NCCL ranks)
};

class Runner {
 public:
  // engines.node must be set; the measurement engines may be null (their checks skip).
  Runner(const Engines& engines, const FaultPlan& faults) : engines_(engines), faults_(faults) {}
  // Runs discovery and the plan, recording into state. Never throws for check failures.
  RunOutcome run(RunState& state, const std::vector<PlannedCheck>& plan,
                 const RunSettings& settings);

 private:
  Engines engines_;
  const FaultPlan& faults_;
};

// Discovery alone, bounded (for `preflight thresholds`): nullopt when it did not finish in time.
std::optional<NodeReading> discover_within(NodeBackend& backend, std::chrono::seconds budget);

// The SystemInfo block of the verdict from a discovery reading.
SystemInfo system_info_from(const NodeReading& node);

// Tags the findings an injected fault is meant to produce (its kind's codes, on its target),
// so a drill is never mistaken for a real fault. `kinds`: the runner's and every check's.
void mark_injected(CheckResult& result, const FaultPlan& faults,
                   const std::vector<FaultKindSpec>& kinds);

}  // namespace preflight
