#pragma once
#include <string>
#include <vector>

#include "checks/pcie/pcie_readings.hpp"
#include "preflight/check.hpp"

namespace preflight {

// Host<->device copy bandwidth of every GPU over its PCIe link (host-to-device,
// device-to-host, bidirectional), one GPU at a time, then every GPU at once to find switches or
// root ports that cannot carry all their GPUs. Each figure alone is held to what the GPU's link
// should carry (generation and width from the SKU table or the device); with every GPU copying,
// each is held to its fair share of the uplink it shares (read from sysfs), and each shared
// uplink to its own rate. docs/checks/pcie.md.
class PcieCheck final : public Check {
 public:
  // `sysfs_root`: where the PCI tree is read ("/sys"; tests pass a tree of their own).
  explicit PcieCheck(std::string sysfs_root = "/sys");
  const CheckInfo& info() const override { return info_; }
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  // plan_pcie (bandwidth_plan.hpp).
  WorkPlan plan_work(const WorkRequest& request) const override;
  CheckResult run(CheckContext& ctx) const override;
  // Error counters that rose under the copies (counters.hpp).
  std::vector<Finding> observe(const Readings& readings) const override;
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override;

 private:
  CheckInfo info_;
  std::string sysfs_root_;
};

// The pcie check's judgement: PCIE_BANDWIDTH_LOW / _MARGINAL on a GPU's one-GPU figures,
// PCIE_SHARED_BANDWIDTH_LOW on a GPU below its fair share with every GPU copying, and
// PCIE_UPLINK_BANDWIDTH_LOW on a shared uplink whose GPUs together move too little. Pure: built
// only from the readings and the thresholds.
std::vector<Finding> judge_pcie(const PcieReadings& readings, const Thresholds& thresholds);

}  // namespace preflight
