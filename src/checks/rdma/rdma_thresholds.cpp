// The rdma check's threshold keys (RDMA port rates and transfers): range, generic value, and the
// value for a known SKU (a figure of its datasheet, src/model/sku_table.cpp, or one of this check's
// own). Sources: docs/thresholds.md; the check's page lists the same keys
// (tests/unit/test_thresholds.cpp keeps them in step).
#include "checks/rdma/rdma_thresholds.hpp"

namespace preflight {

const ThresholdSpecs& rdma_thresholds() {
  static const ThresholdSpecs specs = {
      // RDMA. min_port_gbps is a site's floor for every compute port (0: none). The rate a port
      // should have comes from the node shape (node_shape.hpp) or its siblings, not from the GPU
      // model: an H100 node may have 400 Gb/s InfiniBand or 100 Gb/s EFA (docs/thresholds.md).
      {"rdma.min_port_gbps", "Gb/s",
       "every active compute RDMA port must run at least this rate, Gb/s (0: no minimum)", 0, 3200,
       false, 0},
      {"rdma.sibling_fraction", "fraction",
       "a compute RDMA port below this share of the median rate of its sibling compute ports "
       "(same transport) fails RDMA_PORT_SLOW",
       0, 1, false, 0.75},
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
