// Counters that should not move between runs (history_detail.hpp, counter_findings): a GPU's
// lifetime totals, which only ever grow while the GPU stays in the node. A rise since the
// previous run is memory wearing out between jobs, even when each run alone looks healthy.
#include <cmath>
#include <cstdio>
#include <utility>

#include "learned/history_detail.hpp"
#include "learned/learned_findings.hpp"
#include "model/bounded_input.hpp"
#include "preflight/catalogue.hpp"

namespace preflight::history_detail {

namespace {

struct HistoryCounter {
  const char* reading;  // the key in a GPU's entry of a check's readings ("gpus": [{...}])
  const char* what;     // what it counts, for the message
};

// The one table of counters the history follows, found by their reading's key in any check's
// per-GPU readings, so that no check is named here. The inventory check records the lifetime
// totals the driver keeps across reboots, named after GpuReading's fields
// (docs/checks/inventory.md, "Readings"). Retired pages are not among them: Ampere and Hopper
// repair memory by remapping rows, which replaced page retirement, so the remapped rows stand
// for them.
constexpr HistoryCounter kHistoryCounters[] = {
    {"ecc_uncorrected_aggregate", "uncorrectable ECC errors over the GPU's life (aggregate)"},
    {"ecc_corrected_aggregate", "correctable ECC errors over the GPU's life (aggregate)"},
    {"remapped_rows_uncorrected", "memory rows remapped for uncorrectable errors"},
    {"remapped_rows_corrected", "memory rows remapped for correctable errors"},
};

// A GPU's index as a reading holds it, at most this: a bound on text from a file.
constexpr long long kHistoryMaxGpuIndex = 100000;

struct CounterValue {
  std::string check;   // the check whose readings held it
  std::string entity;  // "gpu3"
  std::string uuid;    // the GPU's identity where recorded: a GPU swapped in starts anew
  std::string serial;
  const HistoryCounter* counter = nullptr;
  double value = 0;
};

std::string counter_reading_text(const Readings& gpu, const char* key) {
  const auto found = gpu.find(key);
  return found != gpu.end() && found->is_string() ? found->get<std::string>() : std::string();
}

// Every followed counter the verdict's checks recorded, once per GPU and counter (the first
// check's, in check order).
std::vector<CounterValue> counter_values(const Verdict& verdict) {
  std::vector<CounterValue> out;
  for (const CheckResult& check : verdict.checks) {
    if (!check.readings.is_object()) continue;
    const auto gpus = check.readings.find("gpus");
    if (gpus == check.readings.end() || !gpus->is_array()) continue;
    for (const Readings& gpu : *gpus) {
      if (!gpu.is_object()) continue;
      const auto index = gpu.find("index");
      if (index == gpu.end() || !index->is_number_integer()) continue;
      const long long i = index->get<long long>();
      if (i < 0 || i > kHistoryMaxGpuIndex) continue;
      CounterValue base;
      base.check = check.name;
      base.entity = "gpu" + std::to_string(i);
      base.uuid = counter_reading_text(gpu, "uuid");
      base.serial = counter_reading_text(gpu, "serial");
      // Discovery knows the GPU where the check's readings left its identity out.
      for (const GpuIdentity& known : verdict.system.gpus) {
        if (known.index != i) continue;
        if (base.uuid.empty()) base.uuid = known.uuid;
        if (base.serial.empty()) base.serial = known.serial;
      }
      for (const HistoryCounter& counter : kHistoryCounters) {
        const auto value = gpu.find(counter.reading);
        if (value == gpu.end() || !value->is_number()) continue;  // not read: no rise
        const double v = value->get<double>();
        if (!std::isfinite(v) || v < 0) continue;
        bool seen = false;
        for (const CounterValue& c : out) {
          seen = seen || (c.entity == base.entity && c.counter == &counter);
        }
        if (seen) continue;
        CounterValue c = base;
        c.counter = &counter;
        c.value = v;
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

// The same GPU: the same entity, and the same UUID (else serial) where both runs recorded one.
bool counter_same_gpu(const CounterValue& a, const CounterValue& b) {
  if (a.entity != b.entity || a.counter != b.counter) return false;
  if (!a.uuid.empty() && !b.uuid.empty()) return a.uuid == b.uuid;
  if (!a.serial.empty() && !b.serial.empty()) return a.serial == b.serial;
  return true;
}

}  // namespace

std::vector<Finding> counter_findings(const Verdict& current,
                                      const std::vector<EarlierRun>& earlier) {
  std::vector<Finding> out;
  const std::vector<CounterValue> now = counter_values(current);
  if (now.empty()) return out;
  std::vector<std::vector<CounterValue>> before(earlier.size());
  for (std::size_t i = 0; i < earlier.size(); ++i) before[i] = counter_values(*earlier[i].verdict);

  for (const CounterValue& c : now) {
    // The newest earlier run that read this counter on this GPU.
    const CounterValue* previous = nullptr;
    const Verdict* previous_run = nullptr;
    for (std::size_t i = earlier.size(); i-- > 0 && previous == nullptr;) {
      for (const CounterValue& b : before[i]) {
        if (counter_same_gpu(c, b)) {
          previous = &b;
          previous_run = earlier[i].verdict;
          break;
        }
      }
    }
    if (previous == nullptr || !(c.value > previous->value)) continue;
    char text[300];
    std::snprintf(text, sizeof text, "%s rose from %.15g to %.15g since the run of %s",
                  c.counter->what, previous->value, c.value, shown_time(*previous_run).c_str());
    Finding f = make_finding(learned_findings(), "COUNTER_ROSE", c.entity, text);
    f.judged = true;
    f.injected = check_drilled(current, c.check);
    // The limit: the count of the earlier run, which it should not have passed.
    f.measured(c.value, "count", previous->value);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace preflight::history_detail
