#pragma once
// The planner (docs/plan.md): divides a run's deadline among its checks by their time models
// (Check::plan_work). With time to spare every check does its profile's whole work and the spare
// time widens every deadline alike; with less, every check's work shrinks alike toward its floor;
// below the floors the deadline is refused. Pure: no hardware, no clock.
#include <optional>
#include <string>
#include <vector>

#include "preflight/check.hpp"
#include "run/runner.hpp"

namespace preflight {

// How time is divided (docs/plan.md, "Deadlines"). A check's deadline is never below its
// modelled seconds times kHeadroom plus kSlack_s: a node slower than the model by half is still
// judged, not timed out.
namespace plan_rules {
inline constexpr double kHeadroom = 1.5;
inline constexpr double kSlack_s = 0.5;
// Without --timeout the run's deadline is the profile's default for the node: every check's
// modelled seconds times 2 plus 3 s, discovery's cap, and the verdict margin.
inline constexpr double kDefaultHeadroom = 2.0;
inline constexpr double kDefaultSlack_s = 3.0;
// Kept free at the end: a check past its deadline gets the cancel grace (0.5 s) to return, then
// the verdict is written.
inline constexpr double kVerdictMargin_s = 1.0;
// Discovery (NVML, the CUDA runtime) gets at most this, and never the checks' floors.
inline constexpr double kDiscoveryCap_s = 20.0;
}  // namespace plan_rules

// Discovery's model: NVML and the CUDA runtime opening and listing the node's GPUs.
WorkPlan discovery_work(int gpus);

// A check's place in the plan.
struct CheckAllotment {
  const Check* check = nullptr;
  WorkPlan full;                 // the profile's whole work
  WorkPlan work;                 // what this run does
  std::optional<double> work_s;  // the seconds its work was sized to; nullopt: the whole work
  double deadline_s = 0;         // its share of the run's time
};

struct RunPlan {
  NodeShape shape;
  double timeout_s = 0;
  bool timeout_given = false;
  WorkPlan discovery;
  double discovery_deadline_s = 0;
  double expected_s = 0;  // discovery and every check's work, as modelled
  double floor_s = 0;     // the least --timeout that gives this node a meaningful verdict
  bool reduced = false;   // some check does less than its profile's whole work
  std::vector<CheckAllotment> checks;
};

// The whole run for a node of this shape (before discovery, and for `preflight plan`).
// timeout_s: --timeout; nullopt: the profile's default for this shape. Throws InvalidInput naming
// the floor when a given --timeout is below it.
RunPlan plan_run(const std::vector<PlannedCheck>& checks, const WorkRequest& base,
                 std::optional<double> timeout_s);

// The checks alone, in the `available_s` left for them (after discovery, less the verdict
// margin). Throws InvalidInput naming the floor when it is below the checks' floors; `what`
// says where the time came from ("--timeout 20 s leaves 12.4 s after discovery").
std::vector<CheckAllotment> allot_checks(const std::vector<PlannedCheck>& checks,
                                         const WorkRequest& base, double available_s,
                                         const std::string& what);

// The least seconds the checks need (their floors, with headroom), and what they need for their
// whole work.
double checks_floor_s(const std::vector<CheckAllotment>& allotted);
double checks_full_s(const std::vector<CheckAllotment>& allotted);

// The least --timeout at which every check does its whole work (discovery at its modelled time,
// every check with headroom, the verdict margin): what the fleet gives its local checks.
double whole_work_s(const RunPlan& plan);

// "12.5 s" with one decimal, the way plans and refusals write seconds.
std::string plan_seconds(double s);

// The record of a plan for the verdict.
RunPlanRecord record_of(const RunPlan& plan);
CheckPlanRecord record_of(const CheckAllotment& allotment);

}  // namespace preflight
