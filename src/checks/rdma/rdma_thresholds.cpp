// The rdma check's threshold keys (RDMA port rates and transfers): range, generic value, and the
// value for a known SKU (a figure of its datasheet, src/model/sku_table.cpp, or one of this check's
// own). Sources: docs/thresholds.md; the check's page lists the same keys
// (tests/unit/test_thresholds.cpp keeps them in step).
#include "checks/rdma/rdma_thresholds.hpp"

namespace preflight {

const ThresholdSpecs& rdma_thresholds() {
  static const ThresholdSpecs specs = {
      // RDMA. min_port_gbps is the node's NIC configuration, not the GPU's: the SKU values are
      // the DGX reference nodes' NICs (docs/thresholds.md), other fabrics override them.
      {"rdma.min_port_gbps",
       "Gb/s",
       "every active RDMA port must run at least this rate, Gb/s (0: no minimum)",
       0,
       3200,
       false,
       0,
       {},
       false,
       nullptr,
       {{"a100-sxm4-40gb", 200},
        {"a100-sxm4-80gb", 200},
        {"h100-sxm5-80gb", 400},
        {"h200-sxm-141gb", 400}}},
      {"rdma.fail_fraction", "fraction",
       "an RDMA transfer's Gb/s below this share of the expected port rate fails", 0, 1, false,
       0.75},
      {"rdma.warn_fraction", "fraction",
       "an RDMA transfer's Gb/s below this share of the expected port rate warns", 0, 1, false, 0.9,
       "rdma.fail_fraction", false},
  };
  return specs;
}

}  // namespace preflight
