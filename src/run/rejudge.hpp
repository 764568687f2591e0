#pragma once
// `preflight judge`: a recorded verdict judged again. Each check whose readings were recorded
// judges them with the thresholds given (Check::judge); its judged findings are replaced, its
// observations (corruption, hangs, device errors: Finding::judged false) kept, and those its
// readings prove (Check::observe) but the verdict lacks added; its status and the node's verdict
// are made again by the one aggregation rule. Host-only and pure: no hardware.
#include <string>
#include <vector>

#include "preflight/check.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// The effective thresholds as recorded in a verdict.
ThresholdsRecord record_of(const Thresholds& thresholds);

// The thresholds a verdict recorded, as a Thresholds: the recorded SKU's values replaced by every
// recorded value this version knows. Recorded keys this version does not know are returned in
// `unknown` (a verdict of another version). Throws InvalidInput for a value out of range.
// `specs`: this version's keys (CheckRegistry::threshold_specs()).
Thresholds thresholds_from_record(std::shared_ptr<const ThresholdSpecs> specs,
                                  const ThresholdsRecord& record, const std::string& origin,
                                  std::vector<std::string>& unknown);

struct RejudgeSettings {
  const Thresholds* thresholds = nullptr;
  std::string thresholds_by;               // for the verdict: how the thresholds were chosen
  std::string source;                      // the file the verdict came from
  std::string judged_at;                   // UTC ISO-8601
  bool strict = false;                     // warnings exit 1, as `run --strict`
  std::vector<FaultKindSpec> fault_kinds;  // to mark findings of the recorded injected faults
};

// The verdict judged again (Verdict::rejudged set). Checks unknown to this registry, skipped or
// without readings keep their findings and are listed in rejudged->checks_kept. Observations
// made again are counted in rejudged->observations_restored (the reported checks; a repeated
// run's other passes get theirs too, uncounted, as checks_rejudged counts). Throws
// InvalidInput (naming the check) for readings a check cannot read.
Verdict rejudge(const Verdict& recorded, const CheckRegistry& registry,
                const RejudgeSettings& settings);

}  // namespace preflight
