#pragma once
// Drills that tested nothing. An injected fault acts only inside its check, so a fault whose
// check was skipped (a GPU check on a node without GPUs) or never ran, or whose from-pass never
// came, leaves a drill that looks like a passing one. After the run, each such fault becomes
// one run-level INJECTED_FAULT_NOT_EXERCISED (warn), however many passes skipped its check.
// The judgement is pure: it reads the finished passes and nothing else.
#include <string>
#include <vector>

#include "preflight/check.hpp"
#include "preflight/faults.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// An injected fault and the check it acts in.
struct DrilledFault {
  InjectedFault fault;
  std::string check;  // empty: acts in no check of this run (then it is never judged here)
};

// The check each fault acts in: the check a check=NAME target names (the runner's hang), else
// the check whose declared kinds include the fault's kind.
std::vector<DrilledFault> drilled_checks(const FaultPlan& faults, const CheckRegistry& registry);

// One finding per fault that no pass exercised: in no pass from its from-pass on did its
// check run (status other than skip), or no such pass happened. `passes`: every finished pass
// in order, the first being pass 1 (a plain run is one pass). Findings are marked injected.
std::vector<Finding> unexercised_faults(const std::vector<DrilledFault>& faults,
                                        const std::vector<Verdict>& passes);

// Adds unexercised_faults to the run-level findings of `verdict` (the run's final verdict,
// made of `passes`) and aggregates it again, so a drill that tested nothing is at least warn.
void add_unexercised_faults(Verdict& verdict, const std::vector<DrilledFault>& faults,
                            const std::vector<Verdict>& passes, bool strict);

}  // namespace preflight
