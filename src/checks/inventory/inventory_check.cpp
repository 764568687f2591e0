#include "checks/inventory/inventory_check.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

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
    const auto probe_budget =
        std::chrono::duration<double>(ctx.thresholds->get("inventory.probe_timeout_s"));
    for (auto& g : node.gpus) {
      // A GPU CUDA cannot see is reported as such; probing it would only repeat that.
      if (g.cuda_ordinal < 0 || probe_is_replaced(*ctx.faults, g.index)) continue;
      // Leave a little of the check's own deadline so a stuck probe is reported as
      // GPU_UNRESPONSIVE on its GPU rather than as a timeout of the whole check. A GPU reached
      // after an earlier one used up the time is reported unprobed (GPU_NOT_PROBED), not
      // blamed.
      const auto latest = ctx.deadline - std::chrono::milliseconds(500);
      if (ctx.cancelled() || SteadyClock::now() + std::chrono::seconds(1) > latest) {
        g.probe_error = "the check's time ran out before this GPU's turn";
        continue;
      }
      const auto deadline =
          std::min(latest, SteadyClock::now() +
                               std::chrono::duration_cast<SteadyClock::duration>(probe_budget));
      ctx.gpu->probe(g, deadline);
    }
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
