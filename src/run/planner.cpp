#include "run/planner.hpp"

#include <algorithm>
#include <cmath>

#include "model/text_format.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using namespace plan_rules;

// Work the model expects to take no time (a GPU check on a node without GPUs, which the runner
// skips) needs no deadline of its own.
double need_s(double modelled_s) {
  return modelled_s > 0 ? kHeadroom * modelled_s + kSlack_s : 0.0;
}

double default_need_s(double modelled_s) {
  return modelled_s > 0 ? kDefaultHeadroom * modelled_s + kDefaultSlack_s : 0.0;
}

// The check's work for this request; a GPU check on a node without GPUs plans nothing (the
// runner skips it).
WorkPlan work_of(const Check& check, const WorkRequest& request) {
  if (check.info().needs_gpu && request.shape.gpus <= 0) {
    WorkPlan none;
    none.coverage = "no GPU to test";
    return none;
  }
  WorkPlan plan = check.plan_work(request);
  plan.floor_s = std::min(plan.floor_s, plan.expected_s);
  if (plan.expected_s > 0) {
    plan.expected_s += check.info().fixed_overhead_s;
    plan.floor_s += check.info().fixed_overhead_s;
  }
  return plan;
}

std::string shape_text(const NodeShape& shape) {
  return std::to_string(shape.gpus) + (shape.gpus == 1 ? " GPU, " : " GPUs, ") +
         std::to_string(shape.nics) + (shape.nics == 1 ? " NIC" : " NICs");
}

}  // namespace

std::string plan_seconds(double s) {
  return formatted("%.1f s", s);
}

WorkPlan discovery_work(int gpus) {
  // NVML's init and per-GPU queries, then the CUDA runtime's device list (docs/plan.md).
  WorkPlan plan;
  plan.expected_s = plan.floor_s = 0.3 + 0.1 * std::max(gpus, 0);
  plan.coverage = "NVML and the CUDA runtime list the GPUs";
  return plan;
}

double checks_floor_s(const std::vector<CheckAllotment>& allotted) {
  double total = 0;
  for (const auto& a : allotted) total += need_s(a.full.floor_s);
  return total;
}

double checks_full_s(const std::vector<CheckAllotment>& allotted) {
  double total = 0;
  for (const auto& a : allotted) total += need_s(a.full.expected_s);
  return total;
}

std::vector<CheckAllotment> allot_checks(const std::vector<PlannedCheck>& checks,
                                         const WorkRequest& base, double available_s,
                                         const std::string& what) {
  std::vector<CheckAllotment> out;
  for (const auto& p : checks) {
    CheckAllotment a;
    a.check = p.check;
    WorkRequest whole = base;
    whole.seconds.reset();
    a.full = a.work = work_of(*p.check, whole);
    out.push_back(std::move(a));
  }
  const double full = checks_full_s(out);
  const double floor = checks_floor_s(out);
  if (available_s >= full) {
    // Time to spare: every check does its whole work and every deadline widens alike.
    for (auto& a : out) {
      a.deadline_s = full > 0 ? need_s(a.full.expected_s) * available_s / full : 0.0;
    }
    return out;
  }
  if (available_s < floor) {
    throw InvalidInput(what + ", below the " + plan_seconds(floor) +
                       " the checks need for their least work (docs/plan.md)");
  }
  // Every check's work shrinks by the same fraction of the way from whole to floor.
  const double f = full > floor ? (available_s - floor) / (full - floor) : 1.0;
  for (auto& a : out) {
    const double seconds = a.full.floor_s + f * (a.full.expected_s - a.full.floor_s);
    if (seconds < a.full.expected_s) {
      WorkRequest sized = base;
      sized.seconds = seconds;
      a.work_s = seconds;
      a.work = work_of(*a.check, sized);
    }
    a.deadline_s = need_s(std::max(seconds, a.work.expected_s));
  }
  return out;
}

RunPlan plan_run(const std::vector<PlannedCheck>& checks, const WorkRequest& base,
                 std::optional<double> timeout_s) {
  RunPlan plan;
  plan.shape = base.shape;
  plan.discovery = discovery_work(base.shape.gpus);
  plan.timeout_given = timeout_s.has_value();

  // The whole work first, to know the floors and the default deadline.
  std::vector<CheckAllotment> whole = allot_checks(checks, base, 1e12, "");
  const double checks_floor = checks_floor_s(whole);
  plan.floor_s = std::ceil(need_s(plan.discovery.floor_s) + checks_floor + kVerdictMargin_s);
  if (timeout_s) {
    plan.timeout_s = *timeout_s;
    if (*timeout_s < plan.floor_s) {
      throw InvalidInput("--timeout " + plan_seconds(*timeout_s) + " is below the " +
                         plan_seconds(plan.floor_s) + " this node (" + shape_text(base.shape) +
                         ") needs for a meaningful verdict: discovery and every check's least "
                         "work, with headroom (docs/plan.md); give at least " +
                         plan_seconds(plan.floor_s) + " or fewer --checks");
    }
  } else {
    double total = kDiscoveryCap_s + kVerdictMargin_s;
    for (const auto& a : whole) total += default_need_s(a.full.expected_s);
    plan.timeout_s = std::ceil(total);
  }
  plan.discovery_deadline_s =
      std::min(kDiscoveryCap_s, plan.timeout_s - kVerdictMargin_s - checks_floor);
  // Discovery is planned at its modelled time; what it does not use goes to the checks.
  const double available = plan.timeout_s - kVerdictMargin_s - need_s(plan.discovery.expected_s);
  plan.checks = allot_checks(checks, base, available, "");
  plan.expected_s = plan.discovery.expected_s;
  for (const auto& a : plan.checks) {
    plan.expected_s += a.work.expected_s;
    plan.reduced = plan.reduced || a.work.reduced;
  }
  return plan;
}

double whole_work_s(const RunPlan& plan) {
  return std::ceil(need_s(plan.discovery.expected_s) + checks_full_s(plan.checks) +
                   kVerdictMargin_s);
}

RunPlanRecord record_of(const RunPlan& plan) {
  RunPlanRecord r;
  r.timeout_s = plan.timeout_s;
  r.timeout_given = plan.timeout_given;
  r.expected_s = plan.expected_s;
  r.floor_s = plan.floor_s;
  r.gpus = plan.shape.gpus;
  r.nics = plan.shape.nics;
  r.reduced = plan.reduced;
  return r;
}

CheckPlanRecord record_of(const CheckAllotment& a) {
  CheckPlanRecord r = coverage_record(a.work);
  r.expected_s = a.work.expected_s;
  r.deadline_s = a.deadline_s;
  return r;
}

}  // namespace preflight
