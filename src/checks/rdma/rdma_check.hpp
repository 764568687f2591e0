#pragma once
#include <string>

#include "preflight/check.hpp"

namespace preflight {

// RDMA NICs with libibverbs: inventory of every device and port; the compute NICs told apart
// from storage and in-band ones (--rdma-devices, else PCIe proximity to the GPUs, else link layer
// and rate) and judged against expectations (--expect-rnics, rdma.min_port_gbps), with their
// PCIe links; then RDMA loopbacks of each NIC into host memory on every NUMA node and into every
// GPU's memory (the loopback mesh, rdma_math.hpp), and ordered NIC pairs through the fabric (all
// of them, or a step of each rotation where they do not fit the time: rdma_plan.hpp).
// docs/checks/rdma.md.
class RdmaCheck final : public Check {
 public:
  // `sysfs_root`: where the host's NUMA nodes are read (devices/system/node/online under it);
  // empty: PREFLIGHT_SYSFS_ROOT where set (the seam of the counters and the events check),
  // else /sys. Tests pass a tree of their own.
  explicit RdmaCheck(std::string sysfs_root = {});
  const CheckInfo& info() const override { return info_; }
  void validate_options(const CheckOptions& options) const override;
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  // The time model (rdma_plan.hpp): loopbacks and GPUDirect every run, NIC pairs rotating where
  // they do not fit.
  WorkPlan plan_work(const WorkRequest& request) const override;
  CheckResult run(CheckContext& ctx) const override;
  // Parses the readings (rdma_readings.hpp) and judges them (judge_rdma).
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override;
  // The devices that could not be read and the transfers that hung, failed or corrupted data
  // (rdma_observations, as run() makes them).
  std::vector<Finding> observe(const Readings& readings) const override;

 private:
  std::string sysfs_root() const;

  CheckInfo info_;
  std::string sysfs_root_;
};

// The value of --expect-rnics; throws InvalidInput for a bad one. nullopt when not given.
std::optional<int> expected_rnics(const CheckOptions& options);
// The value of --rdma-devices, in the order given; throws InvalidInput for a bad list (an empty
// name, a character no device name has, a name twice). Empty when not given.
std::vector<std::string> rdma_device_list(const CheckOptions& options);

}  // namespace preflight
