// The events check's threshold keys. Sources: docs/checks/events.md, whose "Threshold keys"
// lists the same keys (tests/unit/test_thresholds.cpp keeps them in step), and
// docs/thresholds.md ("Kernel events").
#include "checks/events/events_thresholds.hpp"

namespace preflight {

const ThresholdSpecs& events_thresholds() {
  // The corrected-error limits follow mcelog's defaults (10 in 24 h per DIMM, per memory page and
  // per cache before it acts) over the same 24 h window; AER has no published default of its
  // own and takes the same figure (docs/thresholds.md).
  static const ThresholdSpecs specs = {
      {"events.window_hours", "h",
       "without a cursor in --state-dir, kernel events of the last this many hours count", 0, 8760,
       false, 24},
      {"events.mce_corrected_warn", "count",
       "corrected machine checks at or above this in the part of the log judged warn", 1, 1e9, true,
       10},
      {"events.edac_corrected_warn", "count",
       "corrected host memory errors (EDAC) at or above this in the part of the log judged warn", 1,
       1e9, true, 10},
      {"events.aer_corrected_warn", "count",
       "corrected PCIe errors (AER) on one device at or above this in the part of the log judged "
       "warn",
       1, 1e9, true, 10},
  };
  return specs;
}

}  // namespace preflight
