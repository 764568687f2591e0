#include "checks/pcie/pcie_check.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "checks/common/bandwidth_common.hpp"
#include "checks/common/counters.hpp"
#include "checks/common/findings.hpp"
#include "checks/common/judgement.hpp"
#include "checks/pcie/pcie_figures.hpp"
#include "checks/pcie/pcie_findings.hpp"
#include "checks/pcie/pcie_thresholds.hpp"
#include "checks/pcie/pcie_topology.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;

// Each measurement gets this long; the check's own deadline caps it.
constexpr auto kPcieMeasurementBudget = 15s;

struct Direction {
  const char* key;   // metric name part, readings key
  const char* what;  // for messages
  std::vector<CopyDirection> streams;
  std::optional<PcieStats> PcieDirections::*slot;
};

const std::vector<Direction>& directions() {
  static const std::vector<Direction> all = {
      {"h2d", "host-to-device", {CopyDirection::host_to_device}, &PcieDirections::h2d},
      {"d2h", "device-to-host", {CopyDirection::device_to_host}, &PcieDirections::d2h},
      {"bidir",
       "bidirectional",
       {CopyDirection::host_to_device, CopyDirection::device_to_host},
       &PcieDirections::bidir},
  };
  return all;
}

bool is_bidir(const Direction& d) {
  return d.streams.size() == 2;
}

PcieExpectation expectation_for(const PcieGpuReadings& g, const Thresholds& t) {
  // The link's maximum (what GPU and slot can train to) stands for the current link: at idle a
  // link down-trains to save power, so a reading taken between copies says little, while a
  // slot that cannot carry the GPU's generation shows in the maximum. A path built slower than
  // the SKU's link (a Gen4 switch above a Gen5 GPU) lowers the expectation.
  const PcieGpuLink& link = g.link;
  return pcie_expectation_on_path(static_cast<int>(t.get("inventory.expected_pcie_gen")),
                                  static_cast<int>(t.get("inventory.expected_pcie_width")),
                                  link.gen_max_gpu.value_or(0), link.width_max.value_or(0),
                                  link.gen_max_link.value_or(0), link.width_current.value_or(0),
                                  g.path_gen_max.value_or(0), g.path_width_max.value_or(0),
                                  t.get("pcie.fail_fraction"), t.get("pcie.warn_fraction"));
}

std::string link_text(const PcieExpectation& e) {
  if (!e.degraded.empty()) return e.degraded;
  const std::string link = pcie_link_name(e.expected_generation, e.expected_width);
  return e.path_limited ? link + " (the most the PCIe path above it carries)" : link;
}

std::string stats_text(const char* what, const PcieStats& s) {
  return std::string(what) + " " + format_gbps(s.median_gbps) + " (median of " +
         std::to_string(s.count) + ", min " + format_gbps(s.min_gbps) + ")";
}

// One GPU alone: each direction against its link; bidirectional against twice the link with its
// own fractions (both directions at once reach less of the sum than one direction of its half).
void judge_alone(const PcieGpuReadings& g, const PcieExpectation& e, const Thresholds& t,
                 std::vector<Finding>& out) {
  for (const Direction& d : directions()) {
    const std::optional<PcieStats>& stats = g.alone.*d.slot;
    if (!stats) continue;
    const double raw = e.expected_link_gbps * (is_bidir(d) ? 2 : 1);
    const double fail = is_bidir(d) ? raw * t.get("pcie.bidir_fail_fraction") : e.fail_below_gbps;
    const double warn = is_bidir(d) ? raw * t.get("pcie.bidir_warn_fraction") : e.warn_below_gbps;
    const std::string text = stats_text(d.what, *stats) + " on " + link_text(e) + ", expected " +
                             format_gbps(raw) + " raw";
    const std::string entity = gpu_entity(g.index);
    if (fail > 0 && stats->median_gbps < fail) {
      out.push_back(make_finding(pcie_findings(), "PCIE_BANDWIDTH_LOW", entity, text)
                        .measured(stats->median_gbps, "GB/s", fail));
    } else if (warn > 0 && stats->median_gbps < warn) {
      out.push_back(make_finding(pcie_findings(), "PCIE_BANDWIDTH_MARGINAL", entity, text)
                        .measured(stats->median_gbps, "GB/s", warn));
    }
  }
}

// GPUs that share one way up to the CPU: an uplink of the readings, or one GPU whose topology is
// unknown (nullptr), held to its own link as if it had an uplink to itself.
struct Group {
  const PcieUplinkReadings* uplink = nullptr;
  std::vector<const PcieGpuReadings*> gpus;
};

std::vector<Group> groups_of(const PcieReadings& r) {
  std::map<std::string, const PcieGpuReadings*> by_entity;
  for (const auto& g : r.gpus) by_entity[gpu_entity(g.index)] = &g;
  std::vector<Group> groups;
  std::map<std::string, bool> placed;
  for (const auto& u : r.uplinks) {
    Group group;
    group.uplink = &u;
    for (const auto& name : u.gpus) {
      const auto it = by_entity.find(name);
      if (it == by_entity.end()) continue;  // from_json refuses these; a hand-built struct may not
      group.gpus.push_back(it->second);
      placed[name] = true;
    }
    groups.push_back(std::move(group));
  }
  for (const auto& g : r.gpus) {
    if (placed.count(gpu_entity(g.index)) == 0) groups.push_back({nullptr, {&g}});
  }
  return groups;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

// The uplink's one-direction raw rate and how messages name it. An uplink whose rate was not
// read is taken to be as fast as the fastest of its GPUs' links (the usual x16 switch uplink).
struct UplinkRate {
  double gbps = 0.0;
  std::string text;  // "uplink 0000:00:01.0 (Gen4 x16, 31.5 GB/s raw)"
};

UplinkRate uplink_rate(const Group& group, const std::map<int, PcieExpectation>& expected) {
  UplinkRate rate;
  const PcieUplinkReadings& u = *group.uplink;
  const int gen = u.gen_max.value_or(u.gen_current.value_or(0));
  const int width = u.width_max.value_or(u.width_current.value_or(0));
  rate.gbps = pcie_link_gbps(gen, width);
  std::string link = pcie_link_name(gen, width);
  const int gen_now = u.gen_current.value_or(0);
  const int width_now = u.width_current.value_or(0);
  if ((gen_now > 0 && gen_now < gen) || (width_now > 0 && width_now < width)) {
    link += ", read at " + pcie_link_name(gen_now, width_now);
  }
  if (rate.gbps <= 0.0) {
    const PcieExpectation* fastest = nullptr;
    for (const PcieGpuReadings* g : group.gpus) {
      const PcieExpectation& e = expected.at(g->index);
      if (fastest == nullptr || e.expected_link_gbps > fastest->expected_link_gbps) fastest = &e;
    }
    if (fastest != nullptr) rate.gbps = fastest->expected_link_gbps;
    link =
        "rate not read, taken as " +
        (fastest != nullptr ? pcie_link_name(fastest->expected_generation, fastest->expected_width)
                            : std::string("unknown"));
  }
  rate.text = "uplink " + u.id + " (" + link + ", " + format_gbps(rate.gbps) + " raw)";
  return rate;
}

// Every GPU copying at once, one direction: each GPU against its fair share of its uplink, and
// each shared uplink's total against its rate.
void judge_concurrent(const PcieReadings& r, const Direction& d,
                      const std::map<int, PcieExpectation>& expected, double fraction,
                      std::vector<Finding>& out) {
  const auto copying = [&d](const PcieGpuReadings* g) {
    return (g->all_at_once.*d.slot).has_value();
  };
  const auto all = std::count_if(r.gpus.begin(), r.gpus.end(),
                                 [&](const PcieGpuReadings& g) { return copying(&g); });
  if (all < 2) return;  // one GPU "at once" is the one-GPU figure again
  const std::string during = " while all " + std::to_string(all) + " GPUs copy";
  for (const Group& group : groups_of(r)) {
    std::vector<const PcieGpuReadings*> members;
    std::copy_if(group.gpus.begin(), group.gpus.end(), std::back_inserter(members), copying);
    if (members.empty()) continue;
    const int n = static_cast<int>(members.size());
    UplinkRate rate;
    if (group.uplink != nullptr) rate = uplink_rate(group, expected);
    std::vector<double> own_links;
    double total = 0.0;
    for (const PcieGpuReadings* g : members) {
      const PcieExpectation& e = expected.at(g->index);
      const PcieStats& stats = *(g->all_at_once.*d.slot);
      own_links.push_back(e.expected_link_gbps);
      total += stats.median_gbps;
      const std::string entity = gpu_entity(g->index);
      std::string where;
      double fair = e.expected_link_gbps;
      if (group.uplink == nullptr) {
        where = entity + "'s uplink is not known (PCIe topology not read): held to its own link, " +
                link_text(e) + ", " + format_gbps(e.expected_link_gbps) + " raw";
      } else {
        fair = pcie_fair_share(e.expected_link_gbps, rate.gbps, n);
        std::vector<std::string> others;
        for (const PcieGpuReadings* o : members) {
          if (o != g) others.push_back(gpu_entity(o->index));
        }
        where = others.empty() ? entity + " has " + rate.text + " to itself"
                               : entity + " shares " + rate.text + " with " + join(others);
      }
      const double limit = fair * fraction;
      if (limit > 0 && stats.median_gbps < limit) {
        out.push_back(make_finding(pcie_findings(), "PCIE_SHARED_BANDWIDTH_LOW", entity,
                                   stats_text(d.what, stats) + during + "; " + where +
                                       ": fair share " + format_gbps(fair))
                          .measured(stats.median_gbps, "GB/s", limit));
      }
    }
    if (group.uplink == nullptr || n < 2) continue;
    const double capacity = pcie_uplink_capacity(rate.gbps, own_links);
    const double limit = capacity * fraction;
    if (limit > 0 && total < limit) {
      std::vector<std::string> names;
      for (const PcieGpuReadings* g : members) names.push_back(gpu_entity(g->index));
      out.push_back(make_finding(pcie_findings(), "PCIE_UPLINK_BANDWIDTH_LOW", group.uplink->id,
                                 std::string(d.what) + " " + format_gbps(total) +
                                     " in total through " + rate.text + " from " + join(names) +
                                     during + ", of " + format_gbps(capacity) + " it carries")
                        .measured(total, "GB/s", limit));
    }
  }
}

CopyMeasurement make_measurement(CheckContext& ctx, const MeasurementShape& shape,
                                 const std::vector<CopyStream>& streams,
                                 SteadyClock::time_point deadline) {
  CopyMeasurement m;
  m.streams = streams;
  m.bytes = shape.bytes;
  m.copies_per_sample = shape.copies_per_sample;
  m.samples = shape.samples;
  m.deadline = deadline;
  m.cancel = ctx.cancel;
  return m;
}

PcieStats stats_of(const BandwidthStats& s) {
  return {s.median, s.min, static_cast<int>(s.count)};
}

PcieGpuLink link_of(const GpuReading& g) {
  return {g.pcie_gen_current, g.pcie_gen_max_link, g.pcie_gen_max_gpu, g.pcie_width_current,
          g.pcie_width_max};
}

// The readings' topology part: each GPU's place in the PCI tree and the uplinks they share.
void add_topology(const std::string& sysfs_root, PcieReadings& readings) {
  std::vector<std::pair<int, std::string>> ids;
  for (const auto& g : readings.gpus) ids.emplace_back(g.index, g.bus_id);
  const PcieTopology topology = read_pcie_topology(sysfs_root, ids);
  for (const auto& [index, location] : topology.gpus) {
    for (auto& g : readings.gpus) {
      if (g.index != index) continue;
      g.numa_node = location.numa_node;
      g.root_port = location.root_port;
      g.bridges = location.bridges;
      g.path_gen_max = location.path_gen_max;
      g.path_width_max = location.path_width_max;
    }
  }
  for (const PcieUplink& up : topology.uplinks) {
    PcieUplinkReadings u;
    u.id = up.id;
    u.device = up.device;
    u.gen_current = up.link.gen_current;
    u.width_current = up.link.width_current;
    u.gen_max = up.link.gen_max;
    u.width_max = up.link.width_max;
    for (int index : up.gpus) u.gpus.push_back(gpu_entity(index));
    readings.uplinks.push_back(std::move(u));
  }
  if (topology.gpus.empty()) {
    readings.topology = "unknown";
  } else {
    readings.topology = topology.gpus.size() == readings.gpus.size() ? "sysfs" : "partial";
  }
}

}  // namespace

std::vector<Finding> judge_pcie(const PcieReadings& readings, const Thresholds& thresholds) {
  std::vector<Finding> out;
  std::map<int, PcieExpectation> expected;
  for (const auto& g : readings.gpus) {
    const PcieExpectation e = expectation_for(g, thresholds);
    expected[g.index] = e;
    judge_alone(g, e, thresholds, out);
  }
  const double fraction = thresholds.get("pcie.shared_fail_fraction");
  for (const Direction& d : directions()) {
    if (!is_bidir(d)) judge_concurrent(readings, d, expected, fraction, out);
  }
  return out;
}

PcieCheck::PcieCheck(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {
  info_.name = "pcie";
  info_.description =
      "host<->device copy bandwidth of every GPU's PCIe link (each GPU alone, then all at once), "
      "verified, against the link's generation and width and the uplinks GPUs share";
  info_.needs_gpu = true;
  info_.budget = {std::chrono::seconds(20), std::chrono::seconds(60), std::chrono::seconds(120)};
  info_.thresholds = pcie_thresholds();
  info_.findings = {&pcie_findings(), &bandwidth_findings()};
  info_.fault_kinds = pcie_fault_kinds();
  declare_counters(info_, {CounterFamily::gpu_pcie});
  info_.figures = pcie_figures().exports();
}

std::optional<std::string> PcieCheck::skip_reason(const CheckContext& ctx) const {
  return no_cuda_gpu_reason(ctx);
}

WorkPlan PcieCheck::plan_work(const WorkRequest& request) const {
  return plan_pcie(request).plan;
}

std::optional<std::vector<Finding>> PcieCheck::judge(const Readings& readings,
                                                     const Thresholds& thresholds) const {
  std::vector<Finding> findings = judge_pcie(readings.get<PcieReadings>(), thresholds);
  for (Finding& f : judge_counters(readings, thresholds, info_.name)) findings.push_back(f);
  return findings;
}

std::vector<Finding> PcieCheck::observe(const Readings& readings) const {
  return observe_counters(readings);
}

CheckResult PcieCheck::run(CheckContext& ctx) const {
  CheckResult result;
  report_untested_gpus(*ctx.node, result.findings);
  BandwidthEngine& engine = *ctx.engines.bandwidth;
  NodeReading node = *ctx.node;
  ctx.engines.node->read_health(node);  // the PCIe link readings
  const auto cuda_count = std::count_if(node.gpus.begin(), node.gpus.end(),
                                        [](const GpuReading& g) { return g.cuda_ordinal >= 0; });
  const PcieWork work = plan_pcie(bandwidth_request(ctx, static_cast<int>(cuda_count)));
  result.plan = coverage_record(work.plan);
  const auto end = ctx.finish_by(1s);
  const auto next_deadline = [&] {
    return std::min(end, SteadyClock::now() + kPcieMeasurementBudget);
  };

  PcieReadings readings;
  for (const GpuReading& g : node.gpus) {
    if (g.cuda_ordinal < 0) continue;  // inventory reports it
    PcieGpuReadings r;
    r.index = g.index;
    r.bus_id = g.pci_bus_id;
    r.link = link_of(g);
    readings.gpus.push_back(std::move(r));
  }
  add_topology(sysfs_root_, readings);

  // PCIe replays and AER counts around the copies: a link that retransmits while its bandwidth
  // holds.
  CounterWatch counters(ctx, info_.name, {CounterFamily::gpu_pcie});
  std::vector<const GpuReading*> usable;
  std::vector<PcieGpuReadings*> usable_readings;
  std::size_t measured = 0;
  std::size_t slot = 0;
  for (const GpuReading& g : node.gpus) {
    if (g.cuda_ordinal < 0) continue;
    PcieGpuReadings& reading = readings.gpus[slot++];
    const std::string entity = gpu_entity(g.index);
    const PcieExpectation e = expectation_for(reading, *ctx.thresholds);
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
      const CopyMeasurement m = make_measurement(ctx, work.shape, streams, next_deadline());
      const auto r = call_bounded<MeasurementResult>(ctx, m.deadline,
                                                     [&engine, m] { return engine.measure(m); });
      hung = judge_measurement_failure(r, entity, std::string(d.what) + " copies", result.findings);
      if (hung) break;
      const BandwidthStats stats = bandwidth_stats(r->total_gbps);
      if (stats.count == 0) continue;
      ++measured;
      reading.alone.*d.slot = stats_of(stats);
      result.metrics.push_back(pcie_figures().alone(d.key)(entity, stats.median));
      if (!is_bidir(d) && !r->streams.empty() && r->streams[0].numa_node >= 0) {
        result.add_metric(entity, "host_numa_node", r->streams[0].numa_node, "index");
        reading.host_numa_node = r->streams[0].numa_node;
      }
    }
    if (!hung) {
      usable.push_back(&g);
      usable_readings.push_back(&reading);
    }
  }

  // Every GPU at once, each direction: a switch or root port shared by several GPUs shows as
  // each GPU getting less than its link carries; judge_pcie holds them to their uplinks.
  if (usable.size() >= 2) {
    for (const Direction& d : directions()) {
      if (is_bidir(d) || ctx.cancelled() || SteadyClock::now() >= end) continue;
      std::vector<CopyStream> streams;
      for (const GpuReading* g : usable) {
        CopyStream s;
        s.direction = d.streams[0];
        s.cuda_ordinal = g->cuda_ordinal;
        s.slow_factor = pcie_slow_factor(*ctx.faults, g->index);
        streams.push_back(s);
      }
      const CopyMeasurement m = make_measurement(ctx, work.shape, streams, next_deadline());
      const auto r = call_bounded<MeasurementResult>(ctx, m.deadline,
                                                     [&engine, m] { return engine.measure(m); });
      const std::string what = std::string(d.what) + " copies on all GPUs at once";
      if (judge_measurement_failure(r, "node", what, result.findings)) break;
      result.add_metric("", std::string("all.") + d.key + "_gbps",
                        bandwidth_stats(r->total_gbps).median, "GB/s");
      for (std::size_t i = 0; i < usable.size() && i < r->streams.size(); ++i) {
        const BandwidthStats stats = bandwidth_stats(r->streams[i].gbps);
        if (stats.count == 0) continue;
        usable_readings[i]->all_at_once.*d.slot = stats_of(stats);
        result.metrics.push_back(
            pcie_figures().all_at_once(d.key)(gpu_entity(usable[i]->index), stats.median));
      }
    }
  }

  result.readings = readings;
  add_judged(result.findings, judge_pcie(readings, *ctx.thresholds));
  close_counters(result, counters.finish(ctx), *ctx.thresholds, info_.name);
  result.summary =
      std::to_string(measured) + " measurements on " + std::to_string(usable.size()) + " GPUs";
  if (readings.topology == "unknown") result.summary += ", PCIe topology unknown";
  // The first GPU's one-direction figure (the all-GPUs figure comes after every GPU's).
  for (const Metric& m : result.metrics) {
    if (m.name == "h2d_gbps" || m.name == "all.h2d_gbps") {
      result.summary += ", " + (m.entity.empty() ? std::string("all") : m.entity) + " h2d " +
                        format_gbps(m.value);
      break;
    }
  }
  // Less than the profile's whole work is said, never silent (docs/plan.md).
  if (work.plan.reduced) result.summary += "; reduced to fit its time: " + shape_text(work.shape);
  return result;
}

}  // namespace preflight
