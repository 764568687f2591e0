#pragma once
// The events check (docs/checks/events.md): what the hardware already told the kernel. It reads
// the kernel log, bounded and without blocking (/dev/kmsg, or a saved log with --kernel-log
// FILE), finds NVIDIA Xid errors, GPUs fallen off the bus, machine checks, EDAC memory errors,
// PCIe AER errors and network ports that went down, and judges each on its device by NVIDIA's
// Xid catalogue and the events.* limits. From the live log it counts what was logged since the
// last healthy verdict (a cursor in --state-dir), so an event stays one finding in every run
// until the node reboots or an operator acknowledges it (`preflight acknowledge`).
#include <optional>
#include <string>
#include <vector>

#include "checks/events/event_collector.hpp"
#include "checks/events/events_readings.hpp"
#include "preflight/check.hpp"

namespace preflight {

inline constexpr const char* kKernelLogFlag = "--kernel-log";

// xid:N@gpu=I and host-error:WORD@check=events (docs/checks/events.md, "Fault injection").
std::vector<FaultKindSpec> events_fault_kinds();

class EventsCheck final : public Check {
 public:
  explicit EventsCheck(KernelLogPaths paths = KernelLogPaths::from_environment());
  const CheckInfo& info() const override { return info_; }
  // --kernel-log FILE must be a regular file preflight can read, within the reader's bounds.
  void validate_options(const CheckOptions& options) const override;
  // Reading the log: kExpectedSeconds as modelled, at most kReadSeconds whatever its length
  // (docs/plan.md).
  WorkPlan plan_work(const WorkRequest& request) const override;
  CheckResult run(CheckContext& ctx) const override;
  std::optional<std::vector<Finding>> judge(const Readings& readings,
                                            const Thresholds& thresholds) const override;

  static constexpr double kReadSeconds = 0.5;
  static constexpr double kExpectedSeconds = 0.1;

 private:
  CheckInfo info_;
  KernelLogPaths paths_;
};

// For `preflight acknowledge --state-dir DIR`: the live log's last record, the cursor that makes
// the events logged so far stop counting (after a GPU reset, or once an operator has dealt with
// them). Throws InvalidInput when this boot's id or the log cannot be read.
KernelLogCursor kernel_log_end(const KernelLogPaths& paths = KernelLogPaths::from_environment());

}  // namespace preflight
