// The hbm check's threshold keys (GPU memory bandwidth and the pattern test's size): range, generic
// value, and the value for a known SKU (a figure of its datasheet, src/model/sku_table.cpp, or one
// of this check's own). Sources: docs/thresholds.md; the check's page lists the same keys
// (tests/unit/test_thresholds.cpp keeps them in step).
#include "checks/hbm/hbm_thresholds.hpp"

namespace preflight {

const ThresholdSpecs& hbm_thresholds() {
  static const ThresholdSpecs specs = {
      {"hbm.peak_gbps",
       "GB/s",
       "datasheet memory bandwidth, decimal GB/s (0: unknown)",
       0,
       20000,
       false,
       0,
       {},
       false,
       &SkuDatasheet::hbm_gbps},
      {"hbm.fail_fraction", "fraction",
       "device-local copy traffic (read + write) below this share of hbm.peak_gbps fails", 0, 1,
       false, 0.6},
      {"hbm.warn_fraction", "fraction",
       "device-local copy traffic (read + write) below this share of hbm.peak_gbps warns", 0, 1,
       false, 0.7, "hbm.fail_fraction", false},
      {"hbm.quick_test_mib", "MiB", "region the memory pattern test covers in the quick profile",
       64, 1048576, true, 2048},
      {"hbm.test_fraction", "fraction",
       "share of the free GPU memory the pattern test covers in the standard and burnin profiles",
       0.05, 0.98, false, 0.9},
  };
  return specs;
}

}  // namespace preflight
