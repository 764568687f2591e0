#include "checks/inventory/inventory_check.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "checks/inventory/inventory_faults.hpp"
#include "checks/inventory/inventory_rules.hpp"
#include "checks/inventory/pci_scan.hpp"

namespace preflight {

namespace {

// Inside a container that exposes only some GPUs the PCI bus still shows all of them, so the
// two counts cannot be compared there.
bool pci_count_comparable() {
  const char* visible = std::getenv("NVIDIA_VISIBLE_DEVICES");
  return visible == nullptr || std::string(visible) == "all";
}

// One GPU's probe, shared with the thread that runs it: a thread stuck in the driver keeps it
// alive after the check has returned.
struct ProbeSlot {
  GpuReading gpu;
  SteadyClock::time_point deadline;
  std::mutex mutex;
  bool returned = false;
};

// Probes every GPU CUDA sees at once, each on a thread of its own, so that a GPU whose driver
// calls block (context creation, allocation) is reported GPU_UNRESPONSIVE on that GPU while
// the others are still probed, instead of the whole check timing out.
void probe_all(CheckContext& ctx, NodeReading& node) {
  const auto budget = std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(ctx.thresholds->get("inventory.probe_timeout_s")));
  // Leave a little of the check's own deadline to judge and return.
  const auto latest = ctx.deadline - std::chrono::milliseconds(500);
  const auto start = SteadyClock::now();
  const auto deadline = std::min(latest, start + budget);
  std::vector<std::shared_ptr<ProbeSlot>> slots(node.gpus.size());
  GpuBackend* backend = ctx.gpu;
  for (std::size_t i = 0; i < node.gpus.size(); ++i) {
    GpuReading& g = node.gpus[i];
    // A GPU CUDA cannot see is reported as such; probing it would only repeat that.
    if (g.cuda_ordinal < 0 || probe_is_replaced(*ctx.faults, g.index)) continue;
    if (ctx.cancelled() || SteadyClock::now() + std::chrono::seconds(1) > latest) {
      g.probe_error = "the check's time ran out before the probe";
      continue;
    }
    auto slot = std::make_shared<ProbeSlot>();
    slot->gpu = g;
    slot->deadline = deadline;
    slots[i] = slot;
    std::thread([slot, backend] {
      GpuReading probed = slot->gpu;
      try {
        backend->probe(probed, slot->deadline);
      } catch (const std::exception& e) {
        probed.responsive = false;
        probed.probe_error = e.what();
      }
      std::lock_guard<std::mutex> lock(slot->mutex);
      slot->gpu = std::move(probed);
      slot->returned = true;
    }).detach();
  }
  // The probe polls its own deadline; the grace lets it report that itself.
  const auto wait_until = std::min(latest, deadline + std::chrono::milliseconds(300));
  const auto all_returned = [&] {
    return std::all_of(slots.begin(), slots.end(), [](const std::shared_ptr<ProbeSlot>& s) {
      if (!s) return true;
      std::lock_guard<std::mutex> lock(s->mutex);
      return s->returned;
    });
  };
  while (!all_returned() && SteadyClock::now() < wait_until && !ctx.cancelled()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double waited = std::chrono::duration<double>(deadline - start).count();
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i]) continue;
    std::lock_guard<std::mutex> lock(slots[i]->mutex);
    GpuReading& g = node.gpus[i];
    if (slots[i]->returned) {
      g.responsive = slots[i]->gpu.responsive;
      g.probe_error = slots[i]->gpu.probe_error;
      g.probe_ms = slots[i]->gpu.probe_ms;
      continue;
    }
    g.responsive = false;
    char text[96];
    std::snprintf(text, sizeof text,
                  "the driver did not return within %.1f s (context creation "
                  "or allocation blocked)",
                  waited);
    g.probe_error = text;
    if (ctx.abandoned_threads) ctx.abandoned_threads->fetch_add(1);
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
  info_.fault_kinds = inventory_fault_kinds();
}

CheckResult InventoryCheck::run(CheckContext& ctx) {
  NodeReading node = *ctx.node;
  if (pci_count_comparable()) node.pci_gpu_count = count_nvidia_gpus_on_pci();

  if (!node.gpus.empty() && ctx.gpu != nullptr) {
    // Health first: it lists the other processes on each GPU before the probe creates this
    // process's own context there.
    ctx.gpu->read_health(node);
    probe_all(ctx, node);
  }
  apply_inventory_faults(*ctx.faults, node);

  InventoryJudgement judged = judge_inventory(node, *ctx.thresholds, ctx.expect);
  CheckResult result;
  result.name = info_.name;
  result.findings = std::move(judged.findings);
  result.metrics = std::move(judged.metrics);
  result.summary = std::move(judged.summary);
  result.status = status_from_findings(result.findings);
  return result;
}

}  // namespace preflight
