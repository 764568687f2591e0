#pragma once
#include "preflight/check.hpp"

namespace preflight {

// GPU memory: device-local copy bandwidth against the SKU's memory bandwidth, and a pattern test
// (zeros, ones, checkerboard, address-in-address, its inverse, random) over a slice of memory
// (quick) or most of the free memory (standard, burnin) that reports every bad address range.
// docs/checks/hbm.md.
class HbmCheck final : public Check {
 public:
  HbmCheck();
  const CheckInfo& info() const override { return info_; }
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  // plan_hbm (bandwidth_plan.hpp), for a GPU of the SKU's memory.
  WorkPlan plan_work(const WorkRequest& request) const override;
  CheckResult run(CheckContext& ctx) const override;
  // judge_hbm on recorded HbmReadings (hbm_readings.hpp); the pattern test's bad words are
  // observations and stay as recorded.
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override;
  // HBM_PATTERN_MISMATCH for each GPU whose recorded pattern test found bad words
  // (hbm_pattern_observation, as run() makes it).
  std::vector<Finding> observe(const Readings& readings) const override;

 private:
  CheckInfo info_;
};

}  // namespace preflight
