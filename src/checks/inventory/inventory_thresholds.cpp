// The inventory check's threshold keys (the node's state read at idle): range, generic value, and
// the value for a known SKU (a figure of its datasheet, src/model/sku_table.cpp, or one of this
// check's own). Sources: docs/thresholds.md; the check's page lists the same keys
// (tests/unit/test_thresholds.cpp keeps them in step).
#include "checks/inventory/inventory_thresholds.hpp"

namespace preflight {

const ThresholdSpecs& inventory_thresholds() {
  static const ThresholdSpecs specs = {
      {"inventory.temperature_warn_c", "C", "idle GPU temperature at or above this is a warning",
       20, 120, true, 75, "inventory.temperature_fail_c", true},
      {"inventory.temperature_fail_c", "C", "idle GPU temperature at or above this fails", 20, 120,
       true, 85},
      {"inventory.ecc_correctable_warn", "count", "volatile correctable ECC errors above this warn",
       0, 1e9, true, 1000},
      {"inventory.ecc_uncorrectable_max", "count",
       "volatile uncorrectable ECC errors above this fail", 0, 1e9, true, 0},
      {"inventory.foreign_memory_fail_mib", "MiB",
       "GPU memory held by other processes above this fails (any other process warns)", 0, 1e7,
       true, 1024},
      {"inventory.expected_pcie_gen",
       "gen",
       "PCIe generation the GPU's link must reach (0: no SKU expectation, only the device's own "
       "maximum)",
       0,
       6,
       true,
       0,
       {},
       false,
       &SkuDatasheet::pcie_gen},
      {"inventory.expected_pcie_width",
       "lanes",
       "PCIe width the link must have (0: no SKU expectation, only the device's own maximum)",
       0,
       32,
       true,
       0,
       {},
       false,
       &SkuDatasheet::pcie_width},
      {"inventory.expected_nvlink_links",
       "links",
       "NVLink links that must be active on each GPU of a multi-GPU node (0: none expected)",
       0,
       18,
       true,
       0,
       {},
       false,
       &SkuDatasheet::nvlink_links},
      {"inventory.probe_timeout_s", "s", "deadline of the per-GPU responsiveness probe", 1, 600,
       false, 10},
  };
  return specs;
}

}  // namespace preflight
