#pragma once
#include "preflight/check.hpp"

namespace preflight {

// Large cuBLAS matrix products on every GPU of the node at once, for the profile's time: four
// corruption detectors (NaN/Inf, checksum, repeatability, cross-GPU consensus), TFLOP/s
// against the SKU and against the node's other GPUs, with NVML telemetry to explain a slow
// GPU. docs/checks/gemm.md.
class GemmCheck final : public Check {
 public:
  GemmCheck();
  const CheckInfo& info() const override { return info_; }
  void validate_options(const CheckOptions& options) const override;
  std::optional<std::chrono::seconds> budget(Profile profile,
                                             const CheckOptions& options) const override;
  // The time model (gemm_plan.hpp): product seconds per GPU and dtype.
  WorkPlan plan_work(const WorkRequest& request) const override;
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  CheckResult run(CheckContext& ctx) const override;
  // The speed findings of recorded readings (GemmReadings): judge_gemm_speed.
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override;
  // Each GPU and dtype whose recorded status says it did not complete (gemm_observations): the
  // corruption detectors' findings cannot be made again, the readings keep no products.
  std::vector<Finding> observe(const Readings& readings) const override;

 private:
  CheckInfo info_;
};

}  // namespace preflight
