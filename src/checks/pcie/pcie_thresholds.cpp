// The pcie check's threshold keys (host<->device copy bandwidth): range, generic value, and the
// value for a known SKU (a figure of its datasheet, src/model/sku_table.cpp, or one of this check's
// own). Sources: docs/thresholds.md; the check's page lists the same keys
// (tests/unit/test_thresholds.cpp keeps them in step).
#include "checks/pcie/pcie_thresholds.hpp"

namespace preflight {

const ThresholdSpecs& pcie_thresholds() {
  static const ThresholdSpecs specs = {
      // Bandwidth checks. Fractions are policy (docs/thresholds.md); expected_gbps and
      // peak_gbps are datasheet figures, 0 where the SKU gives none (no judgement against them).
      {"pcie.fail_fraction", "fraction",
       "one-direction host<->device copy GB/s of one GPU alone below this share of the expected "
       "link's one-direction raw rate fails",
       0, 1, false, 0.6},
      {"pcie.warn_fraction", "fraction",
       "one-direction host<->device copy GB/s of one GPU alone below this share of the expected "
       "link's one-direction raw rate warns",
       0, 1, false, 0.7, "pcie.fail_fraction", false},
      {"pcie.bidir_fail_fraction", "fraction",
       "bidirectional host<->device copies (both directions together) below this share of twice "
       "the expected link's one-direction raw rate fail",
       0, 1, false, 0.4},
      {"pcie.bidir_warn_fraction", "fraction",
       "bidirectional host<->device copies (both directions together) below this share of twice "
       "the expected link's one-direction raw rate warn",
       0, 1, false, 0.45, "pcie.bidir_fail_fraction", false},
      {"pcie.shared_fail_fraction", "fraction",
       "with every GPU copying at once, a GPU below this share of its fair share of the uplink "
       "it shares (the uplink's raw rate over the GPUs behind it, at most its own link) fails; "
       "an uplink whose GPUs together get less than this share of its raw rate fails",
       0, 1, false, 0.6},
  };
  return specs;
}

}  // namespace preflight
