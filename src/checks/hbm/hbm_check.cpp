#include "checks/hbm/hbm_check.hpp"

#include <algorithm>
#include <utility>

#include "checks/common/bandwidth_common.hpp"
#include "checks/common/counters.hpp"
#include "checks/common/findings.hpp"
#include "checks/common/judgement.hpp"
#include "checks/hbm/hbm_figures.hpp"
#include "checks/hbm/hbm_findings.hpp"
#include "checks/hbm/hbm_readings.hpp"
#include "checks/hbm/hbm_thresholds.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;

constexpr auto kCopyBudget = 15s;

// The device-local copies of one GPU: their reading (nullopt when they failed or moved no
// sample), metrics, and the failures as observations. `hung`: the GPU is unusable.
std::optional<HbmCopyReading> measure_copy(CheckContext& ctx, BandwidthEngine& engine,
                                           const HbmWork& work, const GpuReading& g,
                                           SteadyClock::time_point deadline, CheckResult& result,
                                           bool& hung) {
  const std::string entity = gpu_entity(g.index);
  const MeasurementShape& shape = work.copy;
  CopyMeasurement m;
  CopyStream s;
  s.direction = CopyDirection::device_to_device;
  s.cuda_ordinal = g.cuda_ordinal;
  m.streams = {s};
  m.bytes = shape.bytes;
  m.copies_per_sample = shape.copies_per_sample;
  m.samples = shape.samples;
  m.deadline = deadline;
  m.cancel = ctx.cancel;
  const auto r =
      call_bounded<MeasurementResult>(ctx, deadline, [&engine, m] { return engine.measure(m); });
  hung = judge_measurement_failure(r, entity, "device-local copies", result.findings);
  if (hung) return std::nullopt;
  const BandwidthStats stats = bandwidth_stats(r->total_gbps);
  if (stats.count == 0) return std::nullopt;
  HbmCopyReading copy;
  copy.copy_gbps = stats.median;
  // A copy reads and writes every byte: memory traffic is twice the bytes copied, which is what
  // the datasheet's memory bandwidth counts.
  copy.traffic_gbps = 2.0 * stats.median;
  copy.samples = stats.count;
  result.add_metric(entity, "hbm_copy_gbps", copy.copy_gbps, "GB/s");
  result.metrics.push_back(hbm_figures().traffic_gbps(entity, copy.traffic_gbps));
  return copy;
}

// The pattern test of one GPU: its reading (nullopt when it did not run), metrics, and its
// timeouts and CUDA errors as observations.
std::optional<HbmPatternReading> run_patterns(CheckContext& ctx, BandwidthEngine& engine,
                                              const HbmWork& work, const GpuReading& g,
                                              SteadyClock::time_point end, CheckResult& result) {
  const std::string entity = gpu_entity(g.index);
  PatternJob job;
  job.cuda_ordinal = g.cuda_ordinal;
  job.bytes = hbm_pattern_bytes(work, g.memory_total_bytes);
  job.patterns = work.patterns;
  job.cancel = ctx.cancel;
  job.inject_corrupt = ctx.faults->for_gpu("hbm-corrupt", g.index) != nullptr;
  if (job.bytes == 0) return std::nullopt;

  // The planned passes (burn-in: more than one), each with a new seed for random; burn-in
  // repeats them while time is left, the other profiles run them once.
  std::uint64_t bad_words = 0;
  std::uint64_t tested = 0;
  std::vector<BadRange> ranges;
  bool truncated = false;
  double seconds = 0.0;
  int passes = 0;
  for (;;) {
    job.seed = 0xB0BA + static_cast<std::uint64_t>(passes);
    job.deadline = end;
    const auto r =
        call_bounded<PatternResult>(ctx, end, [&engine, job] { return engine.pattern_test(job); });
    if (!r || r->timed_out) {
      result.findings.push_back(
          make_finding(bandwidth_findings(), "BANDWIDTH_TIMEOUT", entity,
                       "memory pattern test did not complete before the deadline"));
      break;
    }
    if (!r->error.empty()) {
      result.findings.push_back(make_finding(bandwidth_findings(), "BANDWIDTH_CUDA_ERROR", entity,
                                             "memory pattern test: " + r->error));
    }
    ++passes;
    bad_words += r->bad_words;
    tested += r->bytes_tested * r->patterns_run.size();
    seconds += r->seconds;
    truncated = truncated || r->ranges_truncated;
    for (const auto& range : r->ranges) {
      if (ranges.size() < kMaxBadRanges) ranges.push_back(range);
    }
    job.inject_corrupt = false;  // one injected word per run
    const double last = r->seconds;
    const double left = std::chrono::duration<double>(end - SteadyClock::now()).count();
    if (!r->error.empty() || ctx.cancelled()) break;
    // A planned pass starts when one more fits, with a fifth to spare; passes beyond the plan
    // (burn-in) only with room for two more and a second.
    const bool planned = passes < work.passes;
    if (planned ? left < 1.2 * last : ctx.profile != Profile::burnin || left < 2 * last + 1.0) {
      break;
    }
  }
  result.add_metric(entity, "pattern_bytes", static_cast<double>(job.bytes), "B");
  result.add_metric(entity, "pattern_passes", passes, "count");
  result.metrics.push_back(hbm_figures().pattern_bad_words(entity, static_cast<double>(bad_words)));
  if (seconds > 0) result.add_metric(entity, "pattern_gbps", tested / seconds / 1e9, "GB/s");
  HbmPatternReading pattern;
  pattern.bytes = job.bytes;
  pattern.passes = passes;
  pattern.bad_words = bad_words;
  pattern.bad_ranges = std::move(ranges);
  pattern.ranges_truncated = truncated;
  return pattern;
}

}  // namespace

HbmCheck::HbmCheck() {
  info_.name = "hbm";
  info_.description =
      "GPU memory: device-local copy bandwidth against the SKU, and a pattern test (address-in-"
      "address and others) over a slice (quick) or most of the free memory, with bad ranges";
  info_.needs_gpu = true;
  info_.budget = {std::chrono::seconds(20), std::chrono::seconds(90), std::chrono::seconds(600)};
  info_.thresholds = hbm_thresholds();
  info_.findings = {&hbm_findings(), &bandwidth_findings()};
  info_.fault_kinds = hbm_fault_kinds();
  declare_counters(info_, {CounterFamily::gpu_ecc});
  info_.figures = hbm_figures().exports();
}

std::optional<std::string> HbmCheck::skip_reason(const CheckContext& ctx) const {
  return no_cuda_gpu_reason(ctx);
}

CheckResult HbmCheck::run(CheckContext& ctx) const {
  CheckResult result;
  report_untested_gpus(*ctx.node, result.findings);
  BandwidthEngine& engine = *ctx.engines.bandwidth;
  const auto end = ctx.finish_by(1s);
  std::vector<const GpuReading*> gpus;
  std::uint64_t memory = 0;  // the largest GPU's: the model sizes the slowest GPU's work
  for (const auto& g : ctx.node->gpus) {
    if (g.cuda_ordinal < 0) continue;
    gpus.push_back(&g);
    memory = std::max(memory, g.memory_total_bytes);
  }
  const HbmWork work = plan_hbm(bandwidth_request(ctx, static_cast<int>(gpus.size())), memory);
  result.plan = coverage_record(work.plan);
  // ECC counts around the copies and patterns: the memory test is where they would climb.
  CounterWatch counters(ctx, info_.name, {CounterFamily::gpu_ecc});
  HbmReadings readings;
  std::size_t done = 0;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (ctx.cancelled() || SteadyClock::now() >= end) break;
    const GpuReading& g = *gpus[i];
    HbmGpuReading reading;
    reading.gpu = gpu_entity(g.index);
    bool hung = false;
    reading.copy = measure_copy(ctx, engine, work, g,
                                std::min(end, SteadyClock::now() + kCopyBudget), result, hung);
    if (!hung) {
      // The GPUs left share what remains of the check's time.
      const auto share = (end - SteadyClock::now()) / static_cast<int>(gpus.size() - i);
      reading.pattern = run_patterns(ctx, engine, work, g, SteadyClock::now() + share, result);
      // Bad words are an observation: corrupted memory whatever the thresholds say.
      if (auto mismatch = hbm_pattern_observation(reading)) {
        result.findings.push_back(std::move(*mismatch));
      }
      ++done;
    }
    readings.gpus.push_back(std::move(reading));
  }
  result.readings = readings;
  add_judged(result.findings, judge_hbm(readings, *ctx.thresholds));
  close_counters(result, counters.finish(ctx), *ctx.thresholds, info_.name);
  result.summary = std::to_string(done) + " of " + std::to_string(gpus.size()) + " GPUs tested";
  for (const Metric& m : result.metrics) {
    if (m.name == "hbm_traffic_gbps") {
      result.summary += ", " + m.entity + " memory traffic " + format_gbps(m.value);
      break;
    }
  }
  // Less than the profile's whole work is said, never silent (docs/plan.md).
  if (work.plan.reduced) result.summary += "; reduced to fit its time: " + work.plan.coverage;
  return result;
}

WorkPlan HbmCheck::plan_work(const WorkRequest& request) const {
  return plan_hbm(request, hbm_model_memory_bytes(request.thresholds)).plan;
}

std::optional<std::vector<Finding>> HbmCheck::judge(const Readings& readings,
                                                    const Thresholds& thresholds) const {
  std::vector<Finding> findings = judge_hbm(readings.get<HbmReadings>(), thresholds);
  for (Finding& f : judge_counters(readings, thresholds, info_.name)) findings.push_back(f);
  return findings;
}

std::vector<Finding> HbmCheck::observe(const Readings& readings) const {
  std::vector<Finding> findings;
  for (const HbmGpuReading& g : readings.get<HbmReadings>().gpus) {
    if (auto mismatch = hbm_pattern_observation(g)) findings.push_back(std::move(*mismatch));
  }
  for (Finding& f : observe_counters(readings)) findings.push_back(f);
  return findings;
}

}  // namespace preflight
