#include "run/drill_coverage.hpp"

#include <algorithm>

#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "run/runner.hpp"

namespace preflight {

namespace {

std::string passes_text(int n) {
  return std::to_string(n) + (n == 1 ? " pass" : " passes");
}

const CheckResult* find_check(const Verdict& pass, const std::string& name) {
  const auto it = std::find_if(pass.checks.begin(), pass.checks.end(),
                               [&](const CheckResult& c) { return c.name == name; });
  return it == pass.checks.end() ? nullptr : &*it;
}

// Why the check did not run, from the first pass the fault was active in: the runner's "not
// run: WHY" (an earlier check hung, the deadline, a signal) or the check's own skip reason.
std::string why_not_run(const std::string& check, const CheckResult* first, const std::string& in) {
  if (first == nullptr) return check + " was not part of the run" + in;
  const std::string& reason = first->skip_reason;
  if (reason.rfind(kNotRunPrefix, 0) == 0) {
    return check + " was not run" + in + " (" + reason.substr(kNotRunPrefix.size()) + ")";
  }
  return check + " was skipped" + in + (reason.empty() ? "" : " (" + reason + ")");
}

// Which passes "in" covers: nothing for a plain run, so its message reads as a plain run's.
std::string passes_covered(int from, int last) {
  if (from == last) return last == 1 ? "" : " in pass " + std::to_string(from);
  if (from == 1) return " in all " + passes_text(last);
  return " in passes " + std::to_string(from) + " to " + std::to_string(last);
}

}  // namespace

std::vector<DrilledFault> drilled_checks(const FaultPlan& faults, const CheckRegistry& registry) {
  std::vector<DrilledFault> out;
  for (const InjectedFault& f : faults.all()) {
    DrilledFault d{f, {}};
    if (f.target.type == TargetType::check) {
      d.check = f.target.name;
    } else {
      for (const Check* check : registry.all()) {
        const auto& kinds = check->info().fault_kinds;
        if (std::any_of(kinds.begin(), kinds.end(),
                        [&](const FaultKindSpec& k) { return k.kind == f.kind; })) {
          d.check = check->info().name;
        }
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<Finding> unexercised_faults(const std::vector<DrilledFault>& faults,
                                        const std::vector<Verdict>& passes) {
  std::vector<Finding> out;
  const int last = static_cast<int>(passes.size());
  for (const DrilledFault& d : faults) {
    if (d.check.empty()) continue;
    const int from = std::max(d.fault.from_pass, 1);
    std::string why;
    if (from > last) {
      // --duration, --stop-on-fail or a stop ended the burn-in first (--repeat is refused).
      why = "pass " + std::to_string(from) + " never ran (the run ended after " +
            passes_text(last) + ")";
    } else {
      bool ran = false;
      for (int p = from; p <= last && !ran; ++p) {
        const CheckResult* c = find_check(passes[p - 1], d.check);
        ran = c != nullptr && c->status != Status::skip;
      }
      if (ran) continue;
      why = why_not_run(d.check, find_check(passes[from - 1], d.check), passes_covered(from, last));
    }
    Finding f = make_finding(runner_findings(), "INJECTED_FAULT_NOT_EXERCISED", "node",
                             "--inject-fault '" + d.fault.spec + "' was not exercised: " + why);
    f.injected = true;  // the drill's own doing, not the node's
    out.push_back(std::move(f));
  }
  return out;
}

void add_unexercised_faults(Verdict& verdict, const std::vector<DrilledFault>& faults,
                            const std::vector<Verdict>& passes, bool strict) {
  std::vector<Finding> found = unexercised_faults(faults, passes);
  if (found.empty()) return;
  for (Finding& f : found) verdict.findings.push_back(std::move(f));
  aggregate(verdict, strict);
}

}  // namespace preflight
