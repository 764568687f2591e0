#include "checks/bandwidth/pcie_check.hpp"

#include <algorithm>

#include "checks/bandwidth/bandwidth_common.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;

// Each measurement gets this long; the check's own deadline caps it.
constexpr auto kMeasurementBudget = 15s;

struct Direction {
  const char* key;   // metric name part
  const char* what;  // for messages
  std::vector<CopyDirection> streams;
  int link_multiple;  // bidirectional: both directions of the link
};

const std::vector<Direction>& directions() {
  static const std::vector<Direction> all = {
      {"h2d", "host-to-device", {CopyDirection::host_to_device}, 1},
      {"d2h", "device-to-host", {CopyDirection::device_to_host}, 1},
      {"bidir", "bidirectional", {CopyDirection::host_to_device, CopyDirection::device_to_host}, 2},
  };
  return all;
}

PcieExpectation expectation_for(const GpuReading& g, const Thresholds& t) {
  // The link's maximum (what GPU and slot can train to) stands for the current link: at idle a
  // link down-trains to save power, so a reading taken between copies says little, while a
  // slot that cannot carry the GPU's generation shows in the maximum.
  return pcie_expectation(static_cast<int>(t.get("inventory.expected_pcie_gen")),
                          static_cast<int>(t.get("inventory.expected_pcie_width")),
                          g.pcie_gen_max_gpu.value_or(0), g.pcie_width_max.value_or(0),
                          g.pcie_gen_max_link.value_or(0), g.pcie_width_current.value_or(0),
                          t.get("pcie.fail_fraction"), t.get("pcie.warn_fraction"));
}

std::string link_text(const PcieExpectation& e) {
  if (!e.degraded.empty()) return e.degraded;
  return pcie_link_name(e.expected_generation, e.expected_width);
}

CopyMeasurement make_measurement(CheckContext& ctx, const std::vector<CopyStream>& streams,
                                 SteadyClock::time_point deadline) {
  const MeasurementShape shape = pcie_shape(ctx.profile);
  CopyMeasurement m;
  m.streams = streams;
  m.bytes = shape.bytes;
  m.copies_per_sample = shape.copies_per_sample;
  m.samples = shape.samples;
  m.deadline = deadline;
  m.cancel = ctx.cancel;
  return m;
}

}  // namespace

PcieCheck::PcieCheck() {
  info_.name = "pcie";
  info_.description =
      "host<->device copy bandwidth of every GPU's PCIe link (each GPU alone, then all at once), "
      "verified, against the link's generation and width";
  info_.needs_gpu = true;
  info_.budget = {std::chrono::seconds(20), std::chrono::seconds(60), std::chrono::seconds(120)};
  info_.fault_kinds = pcie_fault_kinds();
  // Only the one-GPU-at-a-time figures feed the fleet: the all-at-once ones depend on how many
  // GPUs share a switch.
  const auto one = [](const char* direction, const char* fleet) {
    return FigureExport{std::string(direction) + "_gbps",
                        {"gpu"},
                        {{"direction", direction}},
                        "preflight_pcie_bandwidth_bytes_per_second",
                        1e9,
                        "verified host<->GPU copy bandwidth, one GPU at a time",
                        fleet};
  };
  const auto all = [](const char* direction) {
    return FigureExport{std::string(direction) + "_all_gbps",
                        {"gpu"},
                        {{"direction", direction}},
                        "preflight_pcie_concurrent_bandwidth_bytes_per_second",
                        1e9,
                        "verified host<->GPU copy bandwidth with every GPU copying at once",
                        ""};
  };
  info_.figures = {one("h2d", "pcie_h2d_gbps"),
                   one("d2h", "pcie_d2h_gbps"),
                   one("bidir", ""),
                   all("h2d"),
                   all("d2h"),
                   all("bidir")};
}

std::optional<std::string> PcieCheck::skip_reason(const CheckContext& ctx) const {
  return no_cuda_gpu_reason(ctx);
}

CheckResult PcieCheck::run(CheckContext& ctx) const {
  CheckResult result;
  report_untested_gpus(*ctx.node, result.findings);
  BandwidthEngine& engine = *ctx.engines.bandwidth;
  NodeReading node = *ctx.node;
  ctx.engines.node->read_health(node);  // the PCIe link readings
  const auto end = ctx.deadline - 1s;
  const auto next_deadline = [&] { return std::min(end, SteadyClock::now() + kMeasurementBudget); };

  std::vector<const GpuReading*> usable;
  std::vector<PcieExpectation> expected;
  std::size_t measured = 0;
  for (const GpuReading& g : node.gpus) {
    if (g.cuda_ordinal < 0) continue;  // inventory reports it
    const PcieExpectation e = expectation_for(g, *ctx.thresholds);
    const std::string entity = gpu_entity(g.index);
    if (e.expected_link_gbps > 0)
      result.add_metric(entity, "pcie_link_gbps", e.expected_link_gbps, "GB/s");
    bool hung = false;
    for (const Direction& d : directions()) {
      if (ctx.cancelled() || SteadyClock::now() >= end) break;
      std::vector<CopyStream> streams;
      for (CopyDirection dir : d.streams) {
        CopyStream s;
        s.direction = dir;
        s.cuda_ordinal = g.cuda_ordinal;
        s.slow_factor = pcie_slow_factor(*ctx.faults, g.index);
        streams.push_back(s);
      }
      const CopyMeasurement m = make_measurement(ctx, streams, next_deadline());
      const auto r = call_bounded<MeasurementResult>(ctx, m.deadline,
                                                     [&engine, m] { return engine.measure(m); });
      hung = judge_measurement_failure(r, entity, std::string(d.what) + " copies", result.findings);
      if (hung) break;
      const BandwidthStats stats = bandwidth_stats(r->total_gbps);
      if (stats.count == 0) continue;
      ++measured;
      result.add_metric(entity, std::string(d.key) + "_gbps", stats.median, "GB/s");
      if (d.link_multiple == 1 && !r->streams.empty() && r->streams[0].numa_node >= 0) {
        result.add_metric(entity, "host_numa_node", r->streams[0].numa_node, "index");
      }
      const double fail = e.fail_below_gbps * d.link_multiple;
      const double warn = e.warn_below_gbps * d.link_multiple;
      const std::string text = std::string(d.what) + " " + format_gbps(stats.median) +
                               " (median of " + std::to_string(stats.count) + ", min " +
                               format_gbps(stats.min) + ") on " + link_text(e) + ", expected " +
                               format_gbps(e.expected_link_gbps * d.link_multiple) + " raw";
      if (fail > 0 && stats.median < fail) {
        result.findings.push_back(
            make_finding("PCIE_BANDWIDTH_LOW", entity, text).measured(stats.median, "GB/s", fail));
      } else if (warn > 0 && stats.median < warn) {
        result.findings.push_back(make_finding("PCIE_BANDWIDTH_MARGINAL", entity, text)
                                      .measured(stats.median, "GB/s", warn));
      }
    }
    if (!hung) {
      usable.push_back(&g);
      expected.push_back(e);
    }
  }

  // Every GPU at once, each direction: a switch or root port shared by several GPUs shows as
  // each GPU getting less than its link carries.
  if (usable.size() >= 2) {
    for (const Direction& d : directions()) {
      if (d.link_multiple != 1 || ctx.cancelled() || SteadyClock::now() >= end) continue;
      std::vector<CopyStream> streams;
      for (const GpuReading* g : usable) {
        CopyStream s;
        s.direction = d.streams[0];
        s.cuda_ordinal = g->cuda_ordinal;
        s.slow_factor = pcie_slow_factor(*ctx.faults, g->index);
        streams.push_back(s);
      }
      const CopyMeasurement m = make_measurement(ctx, streams, next_deadline());
      const auto r = call_bounded<MeasurementResult>(ctx, m.deadline,
                                                     [&engine, m] { return engine.measure(m); });
      const std::string what = std::string(d.what) + " copies on all GPUs at once";
      if (judge_measurement_failure(r, "node", what, result.findings)) break;
      result.add_metric("", std::string("all.") + d.key + "_gbps",
                        bandwidth_stats(r->total_gbps).median, "GB/s");
      for (std::size_t i = 0; i < usable.size() && i < r->streams.size(); ++i) {
        const BandwidthStats stats = bandwidth_stats(r->streams[i].gbps);
        if (stats.count == 0) continue;
        const std::string entity = gpu_entity(usable[i]->index);
        result.add_metric(entity, std::string(d.key) + "_all_gbps", stats.median, "GB/s");
        const double fail = expected[i].fail_below_gbps;
        if (fail > 0 && stats.median < fail) {
          result.findings.push_back(
              make_finding("PCIE_SHARED_BANDWIDTH_LOW", entity,
                           std::string(d.what) + " " + format_gbps(stats.median) + " while all " +
                               std::to_string(usable.size()) + " GPUs copy, on " +
                               link_text(expected[i]) + ", expected " +
                               format_gbps(expected[i].expected_link_gbps) + " raw")
                  .measured(stats.median, "GB/s", fail));
        }
      }
    }
  }

  result.summary =
      std::to_string(measured) + " measurements on " + std::to_string(usable.size()) + " GPUs";
  // The first GPU's one-direction figure (the all-GPUs figure comes after every GPU's).
  for (const Metric& m : result.metrics) {
    if (m.name == "h2d_gbps" || m.name == "all.h2d_gbps") {
      result.summary += ", " + (m.entity.empty() ? std::string("all") : m.entity) + " h2d " +
                        format_gbps(m.value);
      break;
    }
  }
  return result;
}

}  // namespace preflight
