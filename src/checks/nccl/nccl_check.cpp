#include "checks/nccl/nccl_check.hpp"

#include <algorithm>
#include <utility>

#include "checks/common/call_bounded.hpp"
#include "checks/common/counters.hpp"
#include "checks/common/entities.hpp"
#include "checks/common/findings.hpp"
#include "checks/common/judgement.hpp"
#include "checks/nccl/nccl_figures.hpp"
#include "checks/nccl/nccl_findings.hpp"
#include "checks/nccl/nccl_math.hpp"
#include "checks/nccl/nccl_plan.hpp"
#include "checks/nccl/nccl_thresholds.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/engine/collective_engine.hpp"
#include "run/bounded_task.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;

// Loading libnccl.so.2 and asking CUDA for its devices, or making a unique id (NCCL picks its
// bootstrap interface): quick calls that only a stuck driver or network stack would hold up.
constexpr auto kQueryBudget = 15s;
// The check stops starting collectives this long before its deadline, so that an abandoned call
// leaves time for the verdict: 2 s, or a tenth of the time it was given when that is less (a
// short deadline keeps its work).
constexpr auto kNcclEndMargin = 2s;

// The rank of the GPU a fault targets; -1 (with FAULT_TARGET_MISSING) when it is not part of
// the communicator: a drill must not pass by testing nothing.
int fault_rank(const InjectedFault* fault, const std::vector<const GpuReading*>& gpus,
               std::vector<Finding>& findings) {
  if (fault == nullptr) return -1;
  for (std::size_t r = 0; r < gpus.size(); ++r) {
    if (gpus[r]->index == fault->target.index) return static_cast<int>(r);
  }
  Finding missing = make_finding(
      shared_findings(), "FAULT_TARGET_MISSING", fault->target.entity(),
      "--inject-fault " + fault->spec + ": CUDA cannot use this GPU, so it is in no communicator");
  missing.injected = true;
  findings.push_back(std::move(missing));
  return -1;
}

// The observations and metrics of one collective's run, and its readings (judged after every
// collective ran); false when the node should not be asked for more (a hang: the GPUs are
// likely stuck).
bool record_run(CollectiveOp op, const std::optional<CollectiveResult>& r, const NcclPlan& plan,
                double seconds, const std::vector<const GpuReading*>& gpus, CheckResult& result,
                NcclReadings& readings, std::string& summary) {
  const std::string what = nccl_op_name(op) + " over " + std::to_string(gpus.size()) + " GPUs";
  if (!r) {
    result.findings.push_back(make_finding(
        nccl_findings(), "NCCL_TIMEOUT", "node",
        what + ": the NCCL worker did not return after its deadline (a GPU or the driver stuck); "
               "its thread was left behind"));
    return false;
  }
  const std::string key = nccl_op_key(op);
  NcclCollectiveReading reading;
  reading.op = op;
  reading.initialized = r->initialized;
  reading.timed_out = r->timed_out;
  reading.error = r->error;
  for (const auto& size : r->sizes) {
    const std::string prefix = key + "." + std::to_string(size.bytes) + ".";
    result.metrics.push_back(
        nccl_figures().busbw_gbps("", size.busbw_gbps, {key, std::to_string(size.bytes)}));
    result.add_metric("", prefix + "algbw_gbps", size.algbw_gbps, "GB/s");
    reading.sizes.push_back({size.bytes, size.seconds, size.algbw_gbps, size.busbw_gbps});
  }
  std::uint64_t corrupt = 0;
  for (const auto& row : r->corrupt_from) {
    for (std::uint64_t n : row) corrupt += n;
  }
  reading.corrupt_elements = corrupt;
  // Who is to blame is recorded with the total, so that `preflight judge` blames the same GPUs.
  if (corrupt > 0) reading.corrupt_from = r->corrupt_from;
  reading.verified = r->verified;
  // Its timeout, failure and corrupted data, made from the reading as `preflight judge` makes
  // them (Check::observe): the run and the judge cannot tell them apart.
  for (Finding& f : nccl_observations(reading, readings.gpus, seconds)) {
    result.findings.push_back(std::move(f));
  }
  readings.collectives.push_back(std::move(reading));
  result.add_metric("", key + ".corrupt_elements", static_cast<double>(corrupt), "count");
  result.add_metric("", key + ".verified", r->verified ? 1.0 : 0.0, "bool");
  if (r->sizes.size() == plan.sizes.size() && !r->sizes.empty()) {
    summary += (summary.empty() ? "" : ", ") + nccl_op_name(op) + " " +
               format_gbps(r->sizes.back().busbw_gbps);
  }
  return !r->timed_out;
}

}  // namespace

NcclCheck::NcclCheck() {
  info_.name = "nccl";
  info_.description =
      "NCCL all-gather and all-reduce across every GPU of the node in one process: every element "
      "verified per source GPU, bus bandwidth against the SKU";
  info_.needs_gpu = true;
  info_.budget = {std::chrono::seconds(45), std::chrono::seconds(120), std::chrono::seconds(600)};
  info_.thresholds = nccl_thresholds();
  info_.findings = {&nccl_findings(), &shared_findings()};
  info_.fault_kinds = nccl_fault_kinds();
  declare_counters(info_, {CounterFamily::gpu_nvlink});
  info_.figures = nccl_figures().exports();
}

std::optional<std::string> NcclCheck::skip_reason(const CheckContext& ctx) const {
  if (ctx.engines.collective == nullptr) {
    return std::string("this binary has no NCCL engine (built without CUDA)");
  }
  int usable = 0;
  for (const auto& g : ctx.node->gpus) usable += g.cuda_ordinal >= 0 ? 1 : 0;
  if (usable == 0) return std::string("CUDA can use none of the node's GPUs (see inventory)");
  if (usable == 1) return std::string("one GPU: nothing to all-gather between");
  return std::nullopt;
}

WorkPlan NcclCheck::plan_work(const WorkRequest& request) const {
  return plan_nccl_work(request).plan;
}

CheckResult NcclCheck::run(CheckContext& ctx) const {
  CheckResult result;
  CollectiveEngine& engine = *ctx.engines.collective;
  // Before every call: an abandoned call must leave time for the verdict.
  const auto end = ctx.finish_by(kNcclEndMargin);
  // libnccl.so.2 is part of the tool's installation (the package recommends it): without it the
  // node was not tested, and that is not the node's fault (TOOL_LIBRARY_MISSING, exit 3).
  const auto problem =
      call_bounded<std::string>(ctx, std::min(end, SteadyClock::now() + kQueryBudget),
                                [&engine] { return engine.library_problem(); });
  if (!problem || !problem->empty()) {
    result.findings.push_back(
        make_finding(shared_findings(), "TOOL_LIBRARY_MISSING", "node",
                     problem ? *problem : "loading NCCL did not return within its deadline"));
    result.summary = "NCCL not loaded: not tested";
    return result;
  }
  const auto why = call_bounded<std::string>(ctx, std::min(end, SteadyClock::now() + kQueryBudget),
                                             [&engine] { return engine.unavailable_reason(); });
  if (!why) {
    result.findings.push_back(
        make_finding(nccl_findings(), "NCCL_TIMEOUT", "node",
                     "loading NCCL and listing the CUDA devices did not return"));
    result.summary = "NCCL did not answer";
    return result;
  }
  if (!why->empty()) {
    // CUDA itself unusable here: inventory says why; nothing to add.
    result.status = Status::skip;
    result.skip_reason = *why;
    result.summary = "skipped";
    return result;
  }

  std::vector<const GpuReading*> gpus;
  std::uint64_t smallest_memory = 0;
  for (const auto& g : ctx.node->gpus) {
    if (g.cuda_ordinal < 0) {
      result.findings.push_back(
          make_finding(nccl_findings(), "NCCL_GPU_NOT_TESTED", gpu_entity(g.index),
                       "not in the communicator: CUDA does not see this GPU (see inventory)"));
      continue;
    }
    gpus.push_back(&g);
    if (g.memory_total_bytes > 0 &&
        (smallest_memory == 0 || g.memory_total_bytes < smallest_memory)) {
      smallest_memory = g.memory_total_bytes;
    }
  }
  const int nranks = static_cast<int>(gpus.size());
  // The work as planned (ctx.work: the planner's seconds), for the GPUs in the communicator.
  WorkRequest request = ctx.work_request();
  request.shape.gpus = nranks;
  const NcclWork work = plan_nccl_work(request, smallest_memory);
  const NcclPlan& plan = work.sizes;
  std::vector<int> corrupt;
  for (const InjectedFault* f : ctx.faults->of_kind("nccl-corrupt")) {
    const int rank = fault_rank(f, gpus, result.findings);
    if (rank >= 0) corrupt.push_back(rank);
  }
  std::vector<double> slow(gpus.size(), 1.0);
  for (const InjectedFault* f : ctx.faults->of_kind("nccl-slow")) {
    const int rank = fault_rank(f, gpus, result.findings);
    if (rank >= 0) slow[static_cast<std::size_t>(rank)] = f->number.value_or(1.0);
  }

  // NVLink replay, recovery and CRC counts around the collectives.
  CounterWatch counters(ctx, info_.name, {CounterFamily::gpu_nvlink});
  NcclReadings readings;
  for (const GpuReading* g : gpus) readings.gpus.push_back(gpu_entity(g->index));
  readings.sizes_planned = plan.sizes;
  readings.iterations = plan.iterations;
  std::string summary;
  const std::vector<CollectiveOp>& ops = nccl_ops();
  std::size_t done = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ctx.cancelled() || SteadyClock::now() >= end) break;
    // The collectives left share what remains of the check's time, each its modelled part.
    const auto start = SteadyClock::now();
    double still = 0.0;
    for (std::size_t j = i; j < ops.size(); ++j) still += work.collective_s[j];
    const double part = still > 0 ? work.collective_s[i] / still : 1.0 / (ops.size() - i);
    const auto deadline =
        start + to_duration(std::chrono::duration<double>(end - start).count() * part);
    const auto id = call_bounded<std::pair<std::vector<char>, std::string>>(
        ctx, std::min(deadline, start + kQueryBudget), [&engine] {
          std::string error;
          std::vector<char> bytes = engine.unique_id(error);
          return std::make_pair(std::move(bytes), std::move(error));
        });
    if (!id || !id->second.empty()) {
      result.findings.push_back(make_finding(
          nccl_findings(), !id ? "NCCL_TIMEOUT" : "NCCL_INIT_FAILED", "node",
          !id ? "ncclGetUniqueId did not return" : nccl_op_name(ops[i]) + ": " + id->second));
      break;
    }
    CollectiveJob job;
    job.unique_id = id->first;
    job.nranks = nranks;
    job.first_rank = 0;
    for (const GpuReading* g : gpus) job.cuda_ordinals.push_back(g->cuda_ordinal);
    job.op = ops[i];
    job.sizes = plan.sizes;
    job.iterations = plan.iterations;
    job.seed = 0x5EED0000u + i;
    job.deadline = deadline;
    job.cancel = ctx.cancel;
    job.corrupt_local_ranks = corrupt;
    job.local_slow_factors = slow;
    // The engine aborts its communicators at the deadline (kNcclAbort); the wait for it ends
    // by the check's own deadline all the same (call_bounded adds kEngineCall).
    const auto wait = std::min(deadline + grace::kNcclAbort,
                               std::max(deadline, ctx.deadline - grace::kEngineCall));
    const auto r =
        call_bounded<CollectiveResult>(ctx, wait, [&engine, job] { return engine.run(job); });
    ++done;
    const double seconds = std::chrono::duration<double>(deadline - start).count();
    if (!record_run(ops[i], r, plan, seconds, gpus, result, readings, summary)) break;
  }
  result.readings = readings;
  add_judged(result.findings, judge_nccl(readings, *ctx.thresholds));
  close_counters(result, counters.finish(ctx), *ctx.thresholds, info_.name);
  if (done < ops.size() && !ctx.cancelled()) {
    result.summary =
        std::to_string(done) + " of " + std::to_string(ops.size()) + " collectives run; ";
  }
  result.add_metric("", "ranks", nranks, "count");
  result.summary +=
      std::to_string(nranks) + " GPUs" +
      (summary.empty() ? std::string()
                       : ": bus bandwidth " + summary + " at " + format_size(plan.sizes.back()));
  if (work.plan.reduced) {
    result.summary += " (" + std::to_string(plan.iterations) + " of " +
                      std::to_string(work.whole.iterations) + " iterations, " +
                      std::to_string(plan.sizes.size()) + " of " +
                      std::to_string(work.whole.sizes.size()) + " sizes: the time given)";
  }
  result.plan = coverage_record(work.plan);
  return result;
}

std::optional<std::vector<Finding>> NcclCheck::judge(const Readings& readings,
                                                     const Thresholds& thresholds) const {
  std::vector<Finding> findings = judge_nccl(readings.get<NcclReadings>(), thresholds);
  for (Finding& f : judge_counters(readings, thresholds, info_.name)) findings.push_back(f);
  return findings;
}

std::vector<Finding> NcclCheck::observe(const Readings& readings) const {
  const auto recorded = readings.get<NcclReadings>();
  std::vector<Finding> findings;
  for (const NcclCollectiveReading& c : recorded.collectives) {
    for (Finding& f : nccl_observations(c, recorded.gpus)) findings.push_back(std::move(f));
  }
  for (Finding& f : observe_counters(readings)) findings.push_back(std::move(f));
  return findings;
}

}  // namespace preflight
