#include "checks/inventory/inventory_check.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "checks/inventory/inventory_faults.hpp"
#include "checks/inventory/inventory_figures.hpp"
#include "checks/inventory/inventory_findings.hpp"
#include "checks/inventory/inventory_plan.hpp"
#include "checks/inventory/inventory_rules.hpp"
#include "checks/inventory/inventory_thresholds.hpp"
#include "checks/inventory/pci_scan.hpp"
#include "run/bounded_task.hpp"

namespace preflight {

namespace {

// Inside a container that exposes only some GPUs the PCI bus still shows all of them, so the
// two counts cannot be compared there.
bool pci_count_comparable() {
  const char* visible = std::getenv("NVIDIA_VISIBLE_DEVICES");
  return visible == nullptr || std::string(visible) == "all";
}

// Probes every GPU CUDA sees at once, each on a thread of its own, so that a GPU whose driver
// calls block (context creation, allocation) is reported GPU_UNRESPONSIVE on that GPU while
// the others are still probed, instead of the whole check timing out.
void probe_all(CheckContext& ctx, NodeReading& node) {
  const auto budget = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(ctx.thresholds->get("inventory.probe_timeout_s")));
  // Leave a little of the check's own deadline to judge and return: 0.5 s, or a tenth of what
  // is left when that is less (a short deadline keeps its probes).
  const auto start = SteadyClock::now();
  const auto latest = ctx.finish_by(std::chrono::milliseconds(500));
  const auto deadline = std::min(latest, start + budget);
  // One task per GPU: a probe stuck in the driver is left behind with its own copy of the
  // reading, after the check has returned.
  std::vector<BoundedTask<GpuReading>> probes(node.gpus.size());
  NodeBackend* backend = ctx.engines.node;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    GpuReading& g = node.gpus[i];
    // A GPU CUDA cannot see is reported as such; probing it would only repeat that.
    if (g.cuda_ordinal < 0 || probe_is_replaced(*ctx.faults, g.index)) continue;
    if (ctx.cancelled() || SteadyClock::now() + std::chrono::seconds(1) > latest) {
      g.probe_error = "the check's time ran out before the probe";
      continue;
    }
    probes[i] = BoundedTask<GpuReading>::start([reading = g, backend, deadline] {
      GpuReading probed = reading;
      try {
        backend->probe(probed, deadline);
      } catch (const std::exception& e) {
        probed.responsive = false;
        probed.probe_error = e.what();
      }
      return probed;
    });
  }
  // The probe polls its own deadline; the grace lets it report that itself.
  const auto wait_until = std::min(latest, deadline + grace::kProbe);
  wait_all(
      probes, wait_until, [&ctx] { return ctx.cancelled(); }, std::chrono::milliseconds(5));
  const double waited = std::chrono::duration<double>(deadline - start).count();
  // The check's share of the run's time may end before the probe's own timeout: a probe cut
  // short there is unverified (GPU_NOT_PROBED), not unresponsive. A busy driver setting up
  // contexts on eight GPUs must not fail a node because the run was given little time.
  const bool cut_short = deadline < start + budget;
  const auto cut_short_text = [&] {
    char text[160];
    std::snprintf(text, sizeof text,
                  "the check's time ran out after %.1f s, before the probe's %.0f s timeout "
                  "(give the run a longer --timeout)",
                  waited, std::chrono::duration<double>(budget).count());
    return std::string(text);
  };
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (!probes[i].started()) continue;
    GpuReading& g = node.gpus[i];
    if (probes[i].returned()) {
      if (const auto probed = probes[i].take()) {
        g.responsive = probed->responsive;
        g.probe_error = probed->probe_error;
        g.probe_ms = probed->probe_ms;
        if (cut_short && probed->probe_timed_out) {
          g.responsive.reset();  // it gave up at the deadline the check's time set
          g.probe_error = cut_short_text();
        }
      } else {
        g.responsive = false;
        g.probe_error = probes[i].error();
      }
      continue;
    }
    if (ctx.abandoned_threads) ctx.abandoned_threads->fetch_add(1);
    if (cut_short) {
      g.probe_error = cut_short_text();
      continue;
    }
    g.responsive = false;
    char text[96];
    std::snprintf(text, sizeof text,
                  "the driver did not return within %.1f s (context creation "
                  "or allocation blocked)",
                  waited);
    g.probe_error = text;
  }
}

}  // namespace

InventoryCheck::InventoryCheck() {
  info_.name = "inventory";
  info_.description =
      "GPU count, driver/CUDA, MIG, ECC and memory health, persistence, clock events, "
      "temperature, PCIe link, NVLink, other processes, responsiveness probe";
  info_.needs_gpu = false;  // it is the check that says whether GPUs are there
  info_.required = true;
  info_.budget = {std::chrono::seconds(30), std::chrono::seconds(60), std::chrono::seconds(60)};
  info_.thresholds = inventory_thresholds();
  info_.findings = {&inventory_findings()};
  info_.fault_kinds = inventory_fault_kinds();
  info_.figures = inventory_figures().exports();
}

WorkPlan InventoryCheck::plan_work(const WorkRequest& request) const {
  return plan_inventory_work(request).plan;
}

CheckResult InventoryCheck::run(CheckContext& ctx) const {
  NodeReading node = *ctx.node;
  WorkRequest request = ctx.work_request();
  request.shape.gpus = static_cast<int>(node.gpus.size());
  const InventoryWork work = plan_inventory_work(request);
  if (pci_count_comparable()) node.pci_gpu_count = count_nvidia_gpus_on_pci();

  if (!node.gpus.empty() && ctx.engines.node != nullptr) {
    // Health first: it lists the other processes on each GPU before the probe creates this
    // process's own context there.
    ctx.engines.node->read_health(node);
    probe_all(ctx, node);
  }
  apply_inventory_faults(*ctx.faults, node);

  // The readings are taken after the faults, so a drill judged again still fails; the runner
  // marks the findings of injected faults, in the run and in `preflight judge`.
  InventoryReadings readings{std::move(node), ctx.expect};
  InventoryJudgement judged = judge_inventory(readings, *ctx.thresholds);
  CheckResult result;
  result.readings = readings;
  add_judged(result.findings, std::move(judged.findings));
  result.metrics = std::move(judged.metrics);
  result.summary = std::move(judged.summary);
  CheckPlanRecord plan;  // the runner fills expected_s and deadline_s
  plan.coverage = work.plan.coverage;
  result.plan = plan;
  return result;
}

std::optional<std::vector<Finding>> InventoryCheck::judge(const Readings& readings,
                                                          const Thresholds& thresholds) const {
  return judge_inventory(readings.get<InventoryReadings>(), thresholds).findings;
}

}  // namespace preflight
