#pragma once
// Error counters read before and after a load check (docs/checks/counters.md): a fault that
// shows only as corrected errors climbing under load (ECC, PCIe replays and AER, NVLink CRC and
// replays, RNIC symbol errors) while the figures hold. A load check opens a CounterWatch when its
// load starts and closes it when the load ends; the window goes into its readings under
// "counters", and judge_counters / observe_counters make the findings from those readings alone,
// so `preflight judge` makes them again.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "preflight/faults.hpp"
#include "preflight/thresholds.hpp"

namespace preflight {

// Which counters a check watches.
enum class CounterFamily {
  gpu_ecc,     // NVML volatile ECC counts (gemm, hbm)
  gpu_pcie,    // NVML PCIe replay counter and the GPU's AER counts in sysfs (pcie)
  gpu_nvlink,  // NVML NVLink replay, recovery and CRC counts, summed over links (nvlink, nccl)
  rnic,        // RDMA port counters and hw_counters in sysfs (rdma)
};

// One counter on one entity, read at both ends of the window. A side not read is nullopt.
struct CounterValue {
  std::string entity;   // "gpu0", "mlx5_0:1"
  std::string counter;  // "ecc_corrected_volatile", "pcie_replay", "symbol_error", ...
  std::optional<std::uint64_t> before;
  std::optional<std::uint64_t> after;
  bool injected = false;  // a drill added to `after`
  // The counter at the end of this check's load in the node's last healthy run, from
  // --state-dir; nullopt without one. Recorded, not judged: the rise between runs is the
  // node's history's to judge.
  std::optional<std::uint64_t> previous_run;
};

// Xid events the driver reported (NVML's event stream), counted per GPU, code and when: "load"
// (during this check's load) or "before" (since the previous check drained the stream).
struct CounterXid {
  std::string entity;  // "gpu0"; "gpu?" when the driver named a device that is none of the GPUs
  int xid = 0;
  std::string during;  // "load" or "before"
  std::uint64_t count = 0;
};

struct CounterWindow {
  double seconds = 0;  // between the two readings
  std::vector<CounterValue> values;
  // Whether the driver's Xid events were read (NodeBackend::open_events), and those it gave.
  bool xid_events_read = false;
  std::vector<CounterXid> xids;
  // Counters this node does not expose, once per entity and counter family: "gpu0: NVLink
  // error counters: Not Supported". Never a finding.
  std::vector<std::string> not_available;
  // What the next run compares with (`counters-<check>` in --state-dir): the values read at the
  // end of this load, one "entity counter value" line each. Empty without --state-dir or when a
  // drill changed a value; the app keeps it only when the verdict is healthy.
  std::string state_file;
  std::string state;
};

// Reads the families' counters now; finish() reads them again. Reads go through the node backend
// (NVML) and sysfs (PREFLIGHT_SYSFS_ROOT, default /sys), each bounded; a counter that cannot be
// read is listed as not available.
class CounterWatch {
 public:
  // `check`: the check watching, whose drills (counter_fault_kinds) finish() applies.
  CounterWatch(CheckContext& ctx, std::string check, std::vector<CounterFamily> families);
  // The window, with the check's drills aimed at this node added to `after`.
  CounterWindow finish(CheckContext& ctx);

 private:
  std::string check_;
  std::string state_dir_;
  std::map<std::pair<std::string, std::string>, std::uint64_t> previous_;
  std::vector<CounterFamily> families_;
  SteadyClock::time_point start_;
  CounterWindow window_;
};

// Readings: the window under "counters" of a check's readings (an object).
void record_counters(Readings& readings, const CounterWindow& window);
// nullopt when the readings hold no window (a verdict of an older version). Throws InvalidInput
// naming the field for one it cannot read.
std::optional<CounterWindow> counters_of(const Readings& readings);

// Judged findings (rates against `<check>.*` limits) and observations (uncorrectable counts that
// rose, a link that went down), from the readings alone.
std::vector<Finding> judge_counters(const Readings& readings, const Thresholds& thresholds,
                                    std::string_view check);
std::vector<Finding> observe_counters(const Readings& readings);

// What a check declares for the families it watches: its `<check>.*` limits, the codes (one
// table for every check) and its drills. A family's drills belong to one check (ECC: gemm;
// PCIe: pcie; NVLink: nvlink; RNIC: rdma); others get none.
ThresholdSpecs counter_thresholds(std::string_view check,
                                  const std::vector<CounterFamily>& families);
const FindingTable& counter_findings();
std::vector<FaultKindSpec> counter_fault_kinds(std::string_view check,
                                               const std::vector<CounterFamily>& families);

// The time model of the two readings (CheckInfo::fixed_overhead_s for the GPU checks; the rdma
// check's own model where it has ports to load): a few NVML calls per GPU
// and a few dozen small sysfs files, measured well under a millisecond each on the fake NVML;
// the budget leaves room for a real driver's answers (docs/checks/counters.md, "Cost").
inline constexpr double kCounterReadSeconds = 0.05;

// What a load check does with them, in three lines:
//   info():  declare_counters(info_, families)  - codes, `<check>.*` limits, drills;
//   run():   CounterWatch watch(ctx, name, families) when the load starts, and
//            close_counters(result, watch.finish(ctx), *ctx.thresholds, name) before returning;
//   judge() / observe(): append judge_counters / observe_counters of the same readings.
void declare_counters(CheckInfo& info, const std::vector<CounterFamily>& families);
// The window into the result's readings (when they are an object: a check that returned early
// without readings keeps none, and its findings stand as recorded), and its findings into the
// result: observations first, then the judged ones, marked judged.
void close_counters(CheckResult& result, const CounterWindow& window, const Thresholds& thresholds,
                    std::string_view check);

// The sum of "TOTAL_ERR_*" in a sysfs AER file's text ("RxErr 0\n...TOTAL_ERR_COR 3\n");
// nullopt when the text has no total.
std::optional<std::uint64_t> aer_total(std::string_view text);

}  // namespace preflight
