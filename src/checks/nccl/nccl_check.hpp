#pragma once
#include "preflight/check.hpp"

namespace preflight {

// NCCL on this node, as a training job would use it: all_gather and all_reduce over every GPU
// CUDA can use, in this one process (one communicator, one rank per GPU), every received element
// verified per source GPU, bus bandwidth of the largest size against the SKU
// (nccl.allgather_busbw_gbps, nccl.allreduce_busbw_gbps). docs/checks/nccl.md.
class NcclCheck final : public Check {
 public:
  NcclCheck();
  const CheckInfo& info() const override { return info_; }
  // The time model (nccl_plan.hpp): sizes and iterations of both collectives.
  WorkPlan plan_work(const WorkRequest& request) const override;
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  CheckResult run(CheckContext& ctx) const override;
  // The bus-bandwidth findings, from NcclReadings (judge_nccl).
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override;
  // Each recorded collective's timeout, failure and corrupted data (nccl_observations, as run()
  // makes them).
  std::vector<Finding> observe(const Readings& readings) const override;

 private:
  CheckInfo info_;
};

}  // namespace preflight
