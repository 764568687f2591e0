#pragma once
#include "preflight/check.hpp"

namespace preflight {

// GPU peer copies over every ordered GPU pair: peer access, unidirectional and bidirectional
// bandwidth, as N x N matrices in the verdict, held to what the SKU's NVLinks carry. Where the
// time does not allow every pair (the quick profile on a large node, a short --timeout), a run
// copies over the pairs of one rotation step; the others stay null (not measured, not judged). It
// records its readings (the GPUs' NVLink topology, peer access, the matrices) and judges them with
// judge_nvlink; failures of the copies themselves are observations. docs/checks/nvlink.md.
class NvlinkCheck final : public Check {
 public:
  NvlinkCheck();
  const CheckInfo& info() const override { return info_; }
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  // plan_nvlink (bandwidth_plan.hpp): the pairs of this run's rotation step and the copy sizes.
  WorkPlan plan_work(const WorkRequest& request) const override;
  CheckResult run(CheckContext& ctx) const override;
  // judge_nvlink on recorded NvlinkReadings (nvlink_readings.hpp).
  // Error counters that rose under the copies (counters.hpp).
  std::vector<Finding> observe(const Readings& readings) const override;
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override;

 private:
  CheckInfo info_;
};

}  // namespace preflight
