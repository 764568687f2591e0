// The nccl check's threshold keys (collective bus bandwidth): range, generic value, and the value
// for a known SKU (a figure of its datasheet, src/model/sku_table.cpp, or one of this check's own).
// Sources: docs/thresholds.md; the check's page lists the same keys
// (tests/unit/test_thresholds.cpp keeps them in step).
#include "checks/nccl/nccl_thresholds.hpp"

namespace preflight {
namespace {

// The busbw a healthy node of the SKU reaches, for both collectives: 80% of the SKU's NVLink
// bandwidth (docs/thresholds.md, the SKU tables); PCIe-only SKUs have none.
const std::vector<std::pair<std::string_view, double>> kBusbwBySku = {{"a100-sxm4-40gb", 240},
                                                                      {"a100-sxm4-80gb", 240},
                                                                      {"h100-sxm5-80gb", 360},
                                                                      {"h200-sxm-141gb", 360}};

}  // namespace

const ThresholdSpecs& nccl_thresholds() {
  static const ThresholdSpecs specs = {
      // NCCL on the node's GPUs. The busbw figures are policy derived from the SKU's NVLink
      // bandwidth (docs/thresholds.md), 0 where the SKU gives none (no judgement against them).
      {"nccl.allgather_busbw_gbps",
       "GB/s",
       "all-gather bus bandwidth (nccl-tests' busbw) a healthy node reaches at the largest size, "
       "all GPUs in one communicator (0: no figure)",
       0,
       10000,
       false,
       0,
       {},
       false,
       nullptr,
       kBusbwBySku},
      {"nccl.allreduce_busbw_gbps",
       "GB/s",
       "all-reduce bus bandwidth (nccl-tests' busbw) a healthy node reaches at the largest size "
       "(0: no figure)",
       0,
       10000,
       false,
       0,
       {},
       false,
       nullptr,
       kBusbwBySku},
      {"nccl.fail_fraction", "fraction",
       "the node's bus bandwidth below this share of the nccl.*_busbw_gbps figure fails", 0, 1,
       false, 0.6},
      {"nccl.warn_fraction", "fraction",
       "the node's bus bandwidth below this share of the nccl.*_busbw_gbps figure warns", 0, 1,
       false, 0.7, "nccl.fail_fraction", false},
  };
  return specs;
}

}  // namespace preflight
