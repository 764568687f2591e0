#pragma once
// What a check's pure judgement returns (judge_inventory, judge_gemm: unit-tested without the
// check), and the one way a check hands it to the runner.
#include <string>
#include <utility>
#include <vector>

#include "preflight/verdict.hpp"

namespace preflight {

struct CheckJudgement {
  std::vector<Finding> findings;
  Metrics metrics;
  std::string summary;
};

// The check's result: the judgement's findings, metrics and summary. The runner fills in the
// rest (name, status, duration).
inline CheckResult result_of(CheckJudgement judged) {
  CheckResult result;
  result.findings = std::move(judged.findings);
  result.metrics = std::move(judged.metrics);
  result.summary = std::move(judged.summary);
  return result;
}

// Appends findings made by Check::judge, marked as judged (Finding::judged): `preflight judge`
// replaces exactly these when it judges the readings again.
inline void add_judged(std::vector<Finding>& into, std::vector<Finding> judged) {
  for (Finding& f : judged) {
    f.judged = true;
    into.push_back(std::move(f));
  }
}

}  // namespace preflight
