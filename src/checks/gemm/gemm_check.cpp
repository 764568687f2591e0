#include "checks/gemm/gemm_check.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "checks/common/call_bounded.hpp"
#include "checks/common/counters.hpp"
#include "checks/common/findings.hpp"
#include "checks/gemm/gemm_faults.hpp"
#include "checks/gemm/gemm_figures.hpp"
#include "checks/gemm/gemm_findings.hpp"
#include "checks/gemm/gemm_judge.hpp"
#include "checks/gemm/gemm_math.hpp"
#include "checks/gemm/gemm_options.hpp"
#include "checks/gemm/gemm_plan.hpp"
#include "checks/gemm/gemm_readings.hpp"
#include "checks/gemm/gemm_thresholds.hpp"
#include "preflight/catalogue.hpp"
#include "run/bounded_task.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;
using Seconds = std::chrono::duration<double>;

constexpr auto kTelemetryInterval = 250ms;
// The check returns this long before its deadline, so the runner never has to abandon it: 1.5 s,
// or a tenth of the time it was given when that is less (a short deadline keeps its work).
constexpr auto kReturnMargin = 1500ms;
// A dtype's share of the time keeps its modelled setup, warm-up and drain (gemm_plan.cpp) times
// this for a node slower than the model before the products; the rest may be product time.
constexpr double kOverheadHeadroom = 1.5;
// The engine's hard deadline for a dtype comes this long before the end of its share (1 s, or a
// tenth of the share), so it reports timed_out itself.
constexpr double kJobMargin_s = 1.0;
constexpr double kJobMarginShare = 0.1;
// What a dtype needs after its workers are waited for: the telemetry thread's stop (300 ms at
// most) and the bookkeeping. The wait for the workers ends this long before the deadline.
constexpr auto kAfterWait = 400ms;
// After a cancel (the runner's deadline or a signal), how long workers get to drain.
constexpr auto kCancelDrain = 300ms;
// Loading cuBLAS (dlopen of libcublas and libcublasLt, about 0.1 s from a local disk).
constexpr auto kLibraryLoadBudget = 10s;

// NVML samples of the GPUs under test, taken by a thread of its own: an NVML call that hangs
// must not hold the products or the check.
struct TelemetryLog {
  std::vector<GpuReading> gpus;
  SteadyClock::time_point start;
  std::mutex mutex;
  std::condition_variable wake;
  std::vector<std::vector<GpuTelemetry>> samples;  // per entry of gpus
  bool stop = false;
  bool returned = false;
};

void sample_until_stopped(const std::shared_ptr<TelemetryLog>& log, NodeBackend* backend) {
  // At least one sample is taken even when the products end before this thread first runs,
  // so a short run still reports its clocks.
  std::unique_lock<std::mutex> lock(log->mutex);
  for (bool first = true; first || !log->stop; first = false) {
    lock.unlock();
    std::vector<std::optional<GpuTelemetry>> taken;
    for (const auto& gpu : log->gpus) taken.push_back(backend->telemetry(gpu));
    const double t = Seconds(SteadyClock::now() - log->start).count();
    lock.lock();
    for (std::size_t i = 0; i < taken.size(); ++i) {
      if (!taken[i]) continue;
      taken[i]->t_s = t;
      log->samples[i].push_back(*taken[i]);
    }
    log->wake.wait_for(lock, kTelemetryInterval, [&] { return log->stop; });
  }
  log->returned = true;
}

// Products of one dtype on every GPU at once. Returns one outcome per GPU of the node; counts
// the threads it had to leave behind.
std::vector<GemmGpuOutcome> run_dtype(CheckContext& ctx, GemmEngine& engine,
                                      const GemmSettings& settings, GemmDtype dtype,
                                      double product_seconds, SteadyClock::time_point job_deadline,
                                      int& abandoned) {
  std::vector<GemmGpuOutcome> outcomes;
  std::vector<std::optional<GemmJob>> jobs;  // parallel to outcomes; nullopt: not tested
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  auto log = std::make_shared<TelemetryLog>();
  log->start = SteadyClock::now();

  for (const GpuReading& gpu : ctx.node->gpus) {
    GemmGpuOutcome outcome;
    outcome.gpu_index = gpu.index;
    outcome.model = gpu.name;
    outcome.dtype = dtype;
    const auto size = choose_gemm_size(dtype, settings, gpu.memory_total_bytes);
    if (gpu.cuda_ordinal < 0) {
      outcome.not_tested = std::string(to_string(dtype)) +
                           ": not tested: CUDA does not see this GPU (see inventory)";
    } else if (!size) {
      outcome.not_tested = std::string(to_string(dtype)) +
                           ": not tested: not even a 4096^3 product fits in --gemm-memory-mib "
                           "and half of this GPU's memory";
    } else if (product_seconds < 0.5) {
      outcome.not_tested = std::string(to_string(dtype)) +
                           ": not tested: the check's time ran out before this dtype's turn";
    }
    if (!outcome.not_tested.empty()) {
      outcomes.push_back(std::move(outcome));
      jobs.emplace_back();
      continue;
    }
    GemmJob job;
    job.gpu_index = gpu.index;
    job.cuda_ordinal = gpu.cuda_ordinal;
    job.dtype = dtype;
    job.m = job.n = job.k = *size;
    job.input_range = gemm_input_range(dtype, job.m, job.k);
    const GemmTolerance tolerance = gemm_tolerance(dtype, job.m, job.k, job.input_range);
    job.output_roundoff = tolerance.output_roundoff;
    job.accumulation_gamma = tolerance.accumulation_gamma;
    job.seed = settings.seed;
    job.repeats_per_round = settings.repeats_per_round;
    job.product_seconds = product_seconds;
    job.deadline = job_deadline;
    job.cancel = cancel;
    apply_gemm_faults(*ctx.faults, job);
    log->gpus.push_back(gpu);
    outcomes.push_back(std::move(outcome));
    jobs.emplace_back(std::move(job));
  }
  log->samples.resize(log->gpus.size());

  // Every GPU at once, each on a thread the check can leave behind if the driver never
  // returns; the other GPUs' results still arrive. A worker keeps its own copy of the job.
  std::vector<BoundedTask<GemmGpuRun>> runs(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i]) continue;
    runs[i] = BoundedTask<GemmGpuRun>::start([job = *jobs[i], &engine] { return engine.run(job); });
  }
  NodeBackend* backend = ctx.engines.node;
  if (!log->gpus.empty()) {
    BoundedTask<bool>::start([log, backend] {
      sample_until_stopped(log, backend);
      return true;
    });
  }

  // The engine polls job_deadline itself; the extra second lets it report timed_out, within
  // the check's deadline all the same. A cancel (the runner's deadline, a signal) is passed on
  // to the workers, which get kCancelDrain.
  const auto wait_until = std::min(job_deadline + grace::kGemmProducts,
                                   std::max(job_deadline, ctx.deadline - kAfterWait));
  if (wait_all(runs, wait_until, [&ctx] { return ctx.cancelled(); }) == TaskEnd::stopped) {
    cancel->store(true);
    wait_all(runs, std::min(wait_until, SteadyClock::now() + kCancelDrain), [] { return false; });
  }

  {
    std::lock_guard<std::mutex> lock(log->mutex);
    log->stop = true;
  }
  log->wake.notify_all();
  const auto telemetry_wait = SteadyClock::now() + 300ms;
  while (SteadyClock::now() < telemetry_wait) {
    {
      std::lock_guard<std::mutex> lock(log->mutex);
      if (log->returned || log->gpus.empty()) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  std::size_t sampled = 0;
  {
    std::lock_guard<std::mutex> lock(log->mutex);
    if (!log->returned && !log->gpus.empty()) ++abandoned;
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      if (!jobs[i]) continue;
      outcomes[i].telemetry = log->samples[sampled++];
    }
  }

  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!runs[i].started()) continue;
    if (!runs[i].returned()) {
      ++abandoned;  // run stays nullopt: GEMM_TIMEOUT
      cancel->store(true);
      continue;
    }
    if (auto run = runs[i].take()) {
      outcomes[i].run = std::move(run);
    } else {
      GemmGpuRun failed;
      failed.gpu_index = outcomes[i].gpu_index;
      failed.dtype = dtype;
      failed.error = runs[i].error();
      failed.error_stage = "setup";
      outcomes[i].run = std::move(failed);
    }
  }
  return outcomes;
}

}  // namespace

GemmCheck::GemmCheck() {
  info_.name = "gemm";
  info_.description =
      "large cuBLAS matrix products on every GPU at once: NaN/Inf, checksum, repeatability and "
      "cross-GPU consensus; TFLOP/s against the SKU and the node's other GPUs";
  info_.needs_gpu = true;
  const CheckOptions none;
  for (Profile p : kAllProfiles) {
    info_.budget[static_cast<std::size_t>(p)] = gemm_budget(parse_gemm_settings(p, none));
  }
  info_.thresholds = gemm_thresholds();
  info_.findings = {&gemm_findings(), &shared_findings()};
  info_.fault_kinds = gemm_fault_kinds();
  declare_counters(info_, {CounterFamily::gpu_ecc});
  info_.figures = gemm_figures().exports();
  info_.bars = gemm_figures().bars();
  info_.options = gemm_option_specs();
}

void GemmCheck::validate_options(const CheckOptions& options) const {
  (void)parse_gemm_settings(Profile::quick, options);
}

std::optional<std::chrono::seconds> GemmCheck::budget(Profile profile,
                                                      const CheckOptions& options) const {
  return gemm_budget(parse_gemm_settings(profile, options));
}

std::optional<std::string> GemmCheck::skip_reason(const CheckContext& ctx) const {
  if (ctx.engines.gemm == nullptr) {
    return std::string("this binary has no GEMM engine (built without CUDA)");
  }
  return std::nullopt;
}

WorkPlan GemmCheck::plan_work(const WorkRequest& request) const {
  return plan_gemm_work(request).plan;
}

CheckResult GemmCheck::run(CheckContext& ctx) const {
  // The work as planned (ctx.work: the planner's seconds), for the GPUs CUDA can use here.
  WorkRequest request = ctx.work_request();
  request.shape.gpus =
      static_cast<int>(std::count_if(ctx.node->gpus.begin(), ctx.node->gpus.end(),
                                     [](const GpuReading& g) { return g.cuda_ordinal >= 0; }));
  const GemmWork work = plan_gemm_work(request);
  const GemmSettings& settings = work.settings;
  GemmEngine& engine = *ctx.engines.gemm;
  const auto end = ctx.finish_by(kReturnMargin);

  // cuBLAS is loaded at run time. Without it no GPU can be tested, and that is the tool's
  // installation, not the node: TOOL_LIBRARY_MISSING (exit 3). Asked only where CUDA can use a
  // GPU; otherwise inventory has already said why not.
  const bool any_usable = std::any_of(ctx.node->gpus.begin(), ctx.node->gpus.end(),
                                      [](const GpuReading& g) { return g.cuda_ordinal >= 0; });
  if (any_usable) {
    const auto problem =
        call_bounded<std::string>(ctx, std::min(end, SteadyClock::now() + kLibraryLoadBudget),
                                  [&engine] { return engine.library_problem(); });
    if (!problem || !problem->empty()) {
      CheckResult result;
      result.findings.push_back(
          make_finding(shared_findings(), "TOOL_LIBRARY_MISSING", "node",
                       problem ? *problem : "loading cuBLAS did not return within its deadline"));
      result.summary = "cuBLAS not loaded: no GPU tested";
      return result;
    }
  }

  // ECC counts around the products: corrected errors that pour out only under load.
  CounterWatch counters(ctx, info_.name, {CounterFamily::gpu_ecc});
  std::vector<GemmGpuOutcome> outcomes;
  int abandoned = 0;
  for (std::size_t i = 0; i < settings.dtypes.size(); ++i) {
    // Each dtype gets its modelled share of what is left, so a node slower than the model
    // shortens every dtype's products rather than dropping the last dtypes.
    const auto now = SteadyClock::now();
    double still = 0.0;
    for (std::size_t j = i; j < work.dtypes.size(); ++j) still += work.dtypes[j].seconds;
    const double share =
        std::max(0.0, Seconds(end - now).count() * work.dtypes[i].seconds / std::max(still, 1e-9));
    const double product_seconds =
        ctx.cancelled()
            ? 0.0
            : std::min(work.product_seconds, share - kOverheadHeadroom * work.dtypes[i].overhead_s);
    const auto job_deadline =
        now + to_duration(share - std::min(kJobMargin_s, kJobMarginShare * share));
    if (abandoned > 0) {
      // A GPU stuck in the driver would stall every further dtype on it.
      for (const GpuReading& gpu : ctx.node->gpus) {
        GemmGpuOutcome skipped;
        skipped.gpu_index = gpu.index;
        skipped.model = gpu.name;
        skipped.dtype = settings.dtypes[i];
        skipped.not_tested = std::string(to_string(settings.dtypes[i])) +
                             ": not tested: a GPU did not return from the previous dtype";
        outcomes.push_back(std::move(skipped));
      }
      continue;
    }
    auto phase = run_dtype(ctx, engine, settings, settings.dtypes[i], product_seconds, job_deadline,
                           abandoned);
    for (auto& o : phase) outcomes.push_back(std::move(o));
  }
  if (ctx.abandoned_threads) ctx.abandoned_threads->fetch_add(abandoned);

  GemmJudgement judged = judge_gemm(outcomes, *ctx.thresholds, settings);
  Readings readings = judged.readings;
  CheckResult result = result_of(std::move(judged));
  result.readings = std::move(readings);
  CheckPlanRecord plan;  // the runner fills expected_s and deadline_s
  plan.reduced = work.plan.reduced;
  plan.coverage = work.plan.coverage;
  result.plan = plan;
  if (work.plan.reduced) {
    char text[96];
    std::snprintf(text, sizeof text,
                  " (products cut to %.1f s of %.1f s per dtype: the time given)",
                  work.product_seconds, settings.product_seconds);
    result.summary += text;
  }
  close_counters(result, counters.finish(ctx), *ctx.thresholds, info_.name);
  return result;
}

std::optional<std::vector<Finding>> GemmCheck::judge(const Readings& readings,
                                                     const Thresholds& thresholds) const {
  std::vector<Finding> findings = judge_gemm_speed(readings.get<GemmReadings>(), thresholds);
  for (Finding& f : judge_counters(readings, thresholds, info_.name)) findings.push_back(f);
  return findings;
}

std::vector<Finding> GemmCheck::observe(const Readings& readings) const {
  std::vector<Finding> findings = gemm_observations(readings.get<GemmReadings>());
  for (Finding& f : observe_counters(readings)) findings.push_back(f);
  return findings;
}

}  // namespace preflight
