#pragma once
#include "preflight/check.hpp"

namespace preflight {

// Software and configuration of the node's GPUs, in seconds: count against expectations,
// driver and CUDA, MIG, ECC, memory health, persistence, clock events, temperature, PCIe link,
// NVLink, other processes, and a responsiveness probe per GPU.
class InventoryCheck final : public Check {
 public:
  InventoryCheck();
  const CheckInfo& info() const override { return info_; }
  // The time model (inventory_plan.hpp): NVML health and a probe per GPU, never reduced.
  WorkPlan plan_work(const WorkRequest& request) const override;
  CheckResult run(CheckContext& ctx) const override;
  // Every finding: all of them follow from the readings (InventoryReadings).
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override;

 private:
  CheckInfo info_;
};

}  // namespace preflight
