// The nvlink check's threshold keys (GPU-to-GPU copy bandwidth): range, generic value, and the
// value for a known SKU (a figure of its datasheet, src/model/sku_table.cpp, or one of this check's
// own). Sources: docs/thresholds.md; the check's page lists the same keys
// (tests/unit/test_thresholds.cpp keeps them in step).
#include "checks/nvlink/nvlink_thresholds.hpp"

namespace preflight {

const ThresholdSpecs& nvlink_thresholds() {
  static const ThresholdSpecs specs = {
      {"nvlink.expected_gbps",
       "GB/s",
       "one-direction GPU-to-GPU NVLink bandwidth of the SKU's full link set (0: no NVLink "
       "expected)",
       0,
       2000,
       false,
       0,
       {},
       false,
       &SkuDatasheet::nvlink_gbps},
      {"nvlink.fail_fraction", "fraction",
       "a GPU pair's peer copy GB/s below this share of nvlink.expected_gbps fails", 0, 1, false,
       0.6},
      {"nvlink.warn_fraction", "fraction",
       "a GPU pair's peer copy GB/s below this share of nvlink.expected_gbps warns", 0, 1, false,
       0.7, "nvlink.fail_fraction", false},
  };
  return specs;
}

}  // namespace preflight
