#include "checks/nvlink/nvlink_check.hpp"

#include <algorithm>
#include <set>

#include "checks/common/bandwidth_common.hpp"
#include "checks/common/counters.hpp"
#include "checks/common/findings.hpp"
#include "checks/common/judgement.hpp"
#include "checks/nvlink/nvlink_figures.hpp"
#include "checks/nvlink/nvlink_findings.hpp"
#include "checks/nvlink/nvlink_readings.hpp"
#include "checks/nvlink/nvlink_thresholds.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;

constexpr auto kNvlinkMeasurementBudget = 10s;

std::vector<const GpuReading*> cuda_gpus(const NodeReading& node) {
  std::vector<const GpuReading*> out;
  for (const auto& g : node.gpus) {
    if (g.cuda_ordinal >= 0) out.push_back(&g);
  }
  return out;
}

Matrix empty_matrix(std::string name, std::string unit,
                    const std::vector<const GpuReading*>& gpus) {
  Matrix m;
  m.name = std::move(name);
  m.unit = std::move(unit);
  for (const auto* g : gpus) m.labels.push_back(gpu_entity(g->index));
  m.values.assign(gpus.size(), std::vector<std::optional<double>>(gpus.size()));
  return m;
}

}  // namespace

NvlinkCheck::NvlinkCheck() {
  info_.name = "nvlink";
  info_.description =
      "GPU peer copies over every ordered GPU pair: peer access, unidirectional and "
      "bidirectional bandwidth (N x N matrices), verified, against the SKU's NVLinks";
  info_.needs_gpu = true;
  info_.budget = {std::chrono::seconds(30), std::chrono::seconds(90), std::chrono::seconds(180)};
  info_.thresholds = nvlink_thresholds();
  info_.findings = {&nvlink_findings(), &bandwidth_findings()};
  info_.fault_kinds = nvlink_fault_kinds();
  declare_counters(info_, {CounterFamily::gpu_nvlink});
  info_.figures = nvlink_figures().exports();
}

std::optional<std::string> NvlinkCheck::skip_reason(const CheckContext& ctx) const {
  if (auto why = no_cuda_gpu_reason(ctx)) return why;
  if (cuda_gpus(*ctx.node).size() < 2) {
    return std::string("a single GPU: there is no GPU pair to measure");
  }
  return std::nullopt;
}

CheckResult NvlinkCheck::run(CheckContext& ctx) const {
  CheckResult result;
  report_untested_gpus(*ctx.node, result.findings);
  BandwidthEngine& engine = *ctx.engines.bandwidth;
  // The health reading carries the NVLink topology: which GPUs each link reaches.
  NodeReading node = *ctx.node;
  ctx.engines.node->read_health(node);
  const auto gpus = cuda_gpus(node);
  const std::size_t n = gpus.size();
  const double expected = ctx.thresholds->get("nvlink.expected_gbps");
  const NvlinkWork work = plan_nvlink(bandwidth_request(ctx, static_cast<int>(n)));
  const MeasurementShape& shape = work.shape;
  result.plan = coverage_record(work.plan);
  if (!work.rotation.complete()) {
    // The model names GPUs by position; the pairs covered by the GPUs' own indices.
    std::set<std::string> covered;
    for (const auto& [a, b] : work.rotation.ordered_pairs()) {
      covered.insert(pair_entity(gpus[static_cast<std::size_t>(a)]->index,
                                 gpus[static_cast<std::size_t>(b)]->index));
    }
    result.plan->covered.assign(covered.begin(), covered.end());
  }
  const auto end = ctx.finish_by(1s);
  const auto next_deadline = [&] {
    return std::min(end, SteadyClock::now() + kNvlinkMeasurementBudget);
  };

  // NVLink replay, recovery and CRC counts around the copies.
  CounterWatch counters(ctx, info_.name, {CounterFamily::gpu_nvlink});
  // Peer access of every ordered pair, every run (cheap): a pair that lost it is found whatever
  // the rotation's step.
  std::vector<std::vector<bool>> access(n, std::vector<bool>(n, false));
  Matrix access_matrix = empty_matrix("peer_access", "1 yes, 0 no", gpus);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const int a = gpus[i]->cuda_ordinal;
      const int b = gpus[j]->cuda_ordinal;
      const auto r = call_bounded<PeerAccess>(ctx, next_deadline(),
                                              [&engine, a, b] { return engine.peer_access(a, b); });
      if (!r) {
        result.findings.push_back(make_finding(
            bandwidth_findings(), "BANDWIDTH_TIMEOUT", pair_entity(gpus[i]->index, gpus[j]->index),
            "the peer access query did not return before the deadline"));
        result.summary = "peer access query hung";
        return result;
      }
      if (!r->error.empty()) {
        result.findings.push_back(make_finding(bandwidth_findings(), "BANDWIDTH_CUDA_ERROR",
                                               pair_entity(gpus[i]->index, gpus[j]->index),
                                               "peer access query: " + r->error));
      }
      access[i][j] = r->supported;
      access_matrix.values[i][j] = r->supported ? 1.0 : 0.0;
    }
  }

  Matrix unidir = empty_matrix("unidirectional_gbps", "GB/s", gpus);
  Matrix bidir = empty_matrix("bidirectional_gbps", "GB/s", gpus);
  const auto measure = [&](const std::vector<std::pair<std::size_t, std::size_t>>& copies,
                           const std::string& what) -> std::optional<double> {
    CopyMeasurement m;
    for (const auto& [from, to] : copies) {
      CopyStream s;
      s.direction = CopyDirection::peer;
      s.cuda_ordinal = gpus[from]->cuda_ordinal;
      s.peer_ordinal = gpus[to]->cuda_ordinal;
      s.slow_factor = nvlink_slow_factor(*ctx.faults, gpus[from]->index, gpus[to]->index);
      m.streams.push_back(s);
    }
    m.bytes = shape.bytes;
    m.copies_per_sample = shape.copies_per_sample;
    m.samples = shape.samples;
    m.deadline = next_deadline();
    m.cancel = ctx.cancel;
    const auto r = call_bounded<MeasurementResult>(ctx, m.deadline,
                                                   [&engine, m] { return engine.measure(m); });
    const auto [a, b] = copies.front();
    if (judge_measurement_failure(r, pair_entity(gpus[a]->index, gpus[b]->index), what,
                                  result.findings)) {
      return std::nullopt;
    }
    const BandwidthStats stats = bandwidth_stats(r->total_gbps);
    if (stats.count == 0) return std::nullopt;
    return stats.median;
  };

  // The pairs of this run's step (every pair when the rotation is complete), by position in
  // `gpus`; the pairs of other steps stay null.
  bool stopped = false;
  for (const auto& [a, b] : work.rotation.ordered_pairs()) {
    const auto i = static_cast<std::size_t>(a);
    const auto j = static_cast<std::size_t>(b);
    if (!access[i][j]) continue;
    if (ctx.cancelled() || SteadyClock::now() >= end) {
      stopped = true;
      break;
    }
    unidir.values[i][j] = measure({{i, j}}, gpu_entity(gpus[i]->index) + " -> " +
                                                gpu_entity(gpus[j]->index) + " peer copies");
  }
  for (const auto& [a, b] : work.rotation.unordered_pairs()) {
    if (stopped) break;
    const auto i = static_cast<std::size_t>(a);
    const auto j = static_cast<std::size_t>(b);
    if (!access[i][j] || !access[j][i]) continue;
    if (ctx.cancelled() || SteadyClock::now() >= end) {
      stopped = true;
      break;
    }
    const auto both =
        measure({{i, j}, {j, i}}, gpu_entity(gpus[i]->index) + " <-> " +
                                      gpu_entity(gpus[j]->index) + " bidirectional peer copies");
    bidir.values[i][j] = both;
    bidir.values[j][i] = both;
  }

  // The readings: what was measured and the topology it is held to; judged like recorded ones.
  NvlinkReadings readings;
  for (const GpuReading* g : gpus) {
    NvlinkGpu e;
    e.index = g->index;
    e.pci_bus_id = g->pci_bus_id;
    e.nvlink_active = g->nvlink_active;
    e.nvlink_supported = g->nvlink_supported;
    e.nvlink_peer_bus_ids = g->nvlink_peer_bus_ids;
    e.nvlink_switch_links = g->nvlink_switch_links;
    readings.gpus.push_back(std::move(e));
  }
  readings.peer_access = access;
  readings.unidirectional_gbps = unidir.values;
  readings.bidirectional_gbps = bidir.values;
  for (const InjectedFault* fault : ctx.faults->of_kind("nvlink-slow")) {
    readings.injected_slow_pairs.push_back(pair_entity(fault->target.index, fault->target.index2));
  }
  result.readings = readings;
  add_judged(result.findings, judge_nvlink(readings, *ctx.thresholds));
  close_counters(result, counters.finish(ctx), *ctx.thresholds, info_.name);

  double lowest = 0.0;
  std::size_t measured = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (!unidir.values[i][j]) continue;
      lowest = measured == 0 ? *unidir.values[i][j] : std::min(lowest, *unidir.values[i][j]);
      ++measured;
    }
  }
  if (measured > 0) result.metrics.push_back(nvlink_figures().unidirectional_min_gbps("", lowest));
  // Reduced coverage is said, never silent: a rotated run names its step (docs/plan.md).
  const PairRotation& rotation = work.rotation;
  result.summary =
      std::to_string(measured) + " of " + std::to_string(n * (n - 1)) + " ordered pairs measured" +
      (rotation.complete() ? std::string()
                           : " (pairs rotate: step " + std::to_string(rotation.step + 1) + " of " +
                                 std::to_string(rotation.steps) + ")") +
      (measured > 0 ? ", lowest " + format_gbps(lowest) : std::string()) +
      (expected > 0 ? ", SKU's links carry " + format_gbps(expected)
                    : ", no NVLink expectation for this SKU");
  if (stopped) result.summary += "; its time ran out before every planned pair";
  if (work.plan.reduced) result.summary += "; reduced to fit its time: " + shape_text(shape);
  result.matrices = {access_matrix, unidir, bidir};
  return result;
}

WorkPlan NvlinkCheck::plan_work(const WorkRequest& request) const {
  return plan_nvlink(request).plan;
}

std::optional<std::vector<Finding>> NvlinkCheck::judge(const Readings& readings,
                                                       const Thresholds& thresholds) const {
  std::vector<Finding> findings = judge_nvlink(readings.get<NvlinkReadings>(), thresholds);
  for (Finding& f : judge_counters(readings, thresholds, info_.name)) findings.push_back(f);
  return findings;
}

std::vector<Finding> NvlinkCheck::observe(const Readings& readings) const {
  return observe_counters(readings);
}

}  // namespace preflight
