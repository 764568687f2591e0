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

}  // namespace preflight
