#include "checks/bandwidth/nvlink_check.hpp"

#include <algorithm>
#include <map>

#include "checks/bandwidth/bandwidth_common.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;

constexpr auto kMeasurementBudget = 10s;

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

// Findings of one code on one unordered pair are merged: "gpu0 -> gpu1 212.0 GB/s; gpu1 -> gpu0
// 215.3 GB/s".
struct PairFinding {
  std::string code;
  std::string entity;
  std::string text;
  double worst = 0.0;
  double limit = 0.0;
  bool measured = false;
  NvlinkPairExpectation expected;  // of the first direction noted
};

}  // namespace

NvlinkCheck::NvlinkCheck() {
  info_.name = "nvlink";
  info_.description =
      "GPU peer copies over every ordered GPU pair: peer access, unidirectional and "
      "bidirectional bandwidth (N x N matrices), verified, against the SKU's NVLinks";
  info_.needs_gpu = true;
  info_.budget = {std::chrono::seconds(30), std::chrono::seconds(90), std::chrono::seconds(180)};
  info_.fault_kinds = nvlink_fault_kinds();
  info_.figures = {{"unidirectional_min_gbps",
                    {},
                    {},
                    "preflight_nvlink_min_bandwidth_bytes_per_second",
                    1e9,
                    "slowest GPU pair's unidirectional copy bandwidth",
                    "nvlink_gbps"}};
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
  const Thresholds& t = *ctx.thresholds;
  const double expected = t.get("nvlink.expected_gbps");
  const int links_per_gpu = static_cast<int>(t.get("inventory.expected_nvlink_links"));
  // Each pair's expectation: all links through NVSwitches, or the links joining the two GPUs
  // directly (a 4-GPU board gives each pair a third of them).
  std::vector<std::vector<NvlinkPairExpectation>> pair_expected(
      n, std::vector<NvlinkPairExpectation>(n));
  BandwidthMatrix fail_limits(n, std::vector<std::optional<double>>(n));
  BandwidthMatrix warn_limits = fail_limits;
  BandwidthMatrix bidir_fail = fail_limits;
  BandwidthMatrix bidir_warn = fail_limits;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const NvlinkPairExpectation e =
          nvlink_pair_expectation(expected, links_per_gpu, *gpus[i], *gpus[j]);
      pair_expected[i][j] = e;
      fail_limits[i][j] = e.gbps * t.get("nvlink.fail_fraction");
      warn_limits[i][j] = e.gbps * t.get("nvlink.warn_fraction");
      bidir_fail[i][j] = 2 * *fail_limits[i][j];
      bidir_warn[i][j] = 2 * *warn_limits[i][j];
    }
  }
  const auto end = ctx.deadline - 1s;
  const auto next_deadline = [&] { return std::min(end, SteadyClock::now() + kMeasurementBudget); };
  const MeasurementShape shape = nvlink_shape(ctx.profile);

  // Peer access of every ordered pair.
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
        result.findings.push_back(
            make_finding("BANDWIDTH_TIMEOUT", pair_entity(gpus[i]->index, gpus[j]->index),
                         "the peer access query did not return before the deadline"));
        result.summary = "peer access query hung";
        return result;
      }
      if (!r->error.empty()) {
        result.findings.push_back(make_finding("BANDWIDTH_CUDA_ERROR",
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

  bool stopped = false;
  for (std::size_t i = 0; i < n && !stopped; ++i) {
    for (std::size_t j = 0; j < n && !stopped; ++j) {
      if (i == j || !access[i][j]) continue;
      if (ctx.cancelled() || SteadyClock::now() >= end) {
        stopped = true;
        break;
      }
      unidir.values[i][j] = measure({{i, j}}, gpu_entity(gpus[i]->index) + " -> " +
                                                  gpu_entity(gpus[j]->index) + " peer copies");
    }
  }
  for (std::size_t i = 0; i < n && !stopped; ++i) {
    for (std::size_t j = i + 1; j < n && !stopped; ++j) {
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
  }

  // Judgement: the unidirectional matrix against the SKU's links, the bidirectional one
  // against twice that. Without an NVLink expectation (PCIe cards, unknown SKU) the matrices
  // are reported and nothing is judged: peer copies over PCIe are not a fault.
  std::map<std::pair<std::string, std::string>, PairFinding> merged;
  const auto note = [&](const PairJudgement& p, const std::string& kind) {
    const int a = gpus[p.from]->index;
    const int b = gpus[p.to]->index;
    std::string code;
    std::string text = kind + gpu_entity(a) + " -> " + gpu_entity(b);
    switch (p.kind) {
      case PairClass::no_peer_access:
        code = "NVLINK_NO_PEER_ACCESS";
        text = gpu_entity(a) + " cannot access " + gpu_entity(b) + "'s memory";
        break;
      case PairClass::fail:
        code = "NVLINK_BANDWIDTH_LOW";
        text += " " + format_gbps(p.value);
        break;
      case PairClass::warn:
        code = "NVLINK_BANDWIDTH_MARGINAL";
        text += " " + format_gbps(p.value);
        break;
      default:
        return;
    }
    PairFinding& f = merged[{pair_entity(a, b), code}];
    if (f.code.empty()) {
      f.code = code;
      f.entity = pair_entity(a, b);
      f.worst = p.value;
      f.expected = pair_expected[p.from][p.to];
    }
    f.text += (f.text.empty() ? "" : "; ") + text;
    if (p.kind == PairClass::fail || p.kind == PairClass::warn) {
      // Value and limit come from the first direction noted (unidirectional ones come first);
      // a bidirectional figure is on another scale and only adds to the text.
      if (!f.measured) {
        f.measured = true;
        f.worst = p.value;
        f.limit = p.limit;
      } else if (p.limit == f.limit) {
        f.worst = std::min(f.worst, p.value);
      }
    }
  };
  for (const auto& p : classify_matrix(unidir.values, access, fail_limits, warn_limits)) {
    // Without peer access a pair is a fault only where NVLink joins the two GPUs.
    if (p.kind == PairClass::no_peer_access && pair_expected[p.from][p.to].gbps <= 0) continue;
    note(p, "");
  }
  std::vector<std::vector<bool>> both(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) both[i][j] = i != j && access[i][j] && access[j][i];
  }
  for (const auto& p : classify_matrix(bidir.values, both, bidir_fail, bidir_warn)) {
    if (p.kind != PairClass::no_peer_access && p.from < p.to) note(p, "bidirectional ");
  }
  for (auto& [key, f] : merged) {
    std::string message = f.text;
    if (f.measured) {
      message += "; expected " + format_gbps(f.expected.gbps) + " per direction (" +
                 f.expected.basis + ")";
    } else {
      message += " (" + f.expected.basis + ")";
    }
    // Literal codes: the catalogue test finds every emitted code in the sources.
    Finding finding = f.code == "NVLINK_NO_PEER_ACCESS"
                          ? make_finding("NVLINK_NO_PEER_ACCESS", f.entity, message)
                      : f.code == "NVLINK_BANDWIDTH_LOW"
                          ? make_finding("NVLINK_BANDWIDTH_LOW", f.entity, message)
                          : make_finding("NVLINK_BANDWIDTH_MARGINAL", f.entity, message);
    if (f.measured) finding.measured(f.worst, "GB/s", f.limit);
    // nvlink-slow@pair=I-J names the pair in either order; the finding's entity is ordered.
    for (const InjectedFault* fault : ctx.faults->of_kind("nvlink-slow")) {
      if (pair_entity(fault->target.index, fault->target.index2) == f.entity) {
        finding.injected = true;
      }
    }
    result.findings.push_back(std::move(finding));
  }

  double lowest = 0.0;
  std::size_t measured = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (!unidir.values[i][j]) continue;
      lowest = measured == 0 ? *unidir.values[i][j] : std::min(lowest, *unidir.values[i][j]);
      ++measured;
    }
  }
  if (measured > 0) result.add_metric("", "unidirectional_min_gbps", lowest, "GB/s");
  result.summary = std::to_string(measured) + " of " + std::to_string(n * (n - 1)) +
                   " ordered pairs measured" +
                   (measured > 0 ? ", lowest " + format_gbps(lowest) : std::string()) +
                   (expected > 0 ? ", SKU's links carry " + format_gbps(expected)
                                 : ", no NVLink expectation for this SKU");
  result.matrices = {access_matrix, unidir, bidir};
  return result;
}

}  // namespace preflight
