// The inventory check's time model: a walk of the PCI bus and the judgement, NVML's health
// queries per GPU (one after another), and the responsiveness probe of every GPU at once (a
// context, one kernel, one copy each).
#include "checks/inventory/inventory_plan.hpp"

#include <algorithm>
#include <string>

namespace preflight {
namespace {

// --- The model's constants, assumed, to be measured by the acceptance kit (docs/plan.md).
// The PCI bus walk in sysfs (count_nvidia_gpus_on_pci) and the judgement of the readings: what
// the check costs when there is nothing to run.
constexpr double kBase_s = 0.05;
// NVML's health queries of one GPU (ECC, retired pages, processes, clocks, PCIe, NVLink): some
// twenty calls of about a millisecond, a few slower.
constexpr double kHealthPerGpu_s = 0.05;
// The probe of the first GPU: the CUDA primary context (the slow part), the probe kernel's module
// load, one kernel and one copy.
constexpr double kProbe_s = 1.2;
// The probes run at once, each on a thread, but the driver serializes part of context creation.
constexpr double kProbePerExtraGpu_s = 0.2;

}  // namespace

InventoryWork plan_inventory_work(const WorkRequest& request) {
  InventoryWork work;
  work.gpus = std::max(request.shape.gpus, 0);
  const int n = work.gpus;
  work.plan.expected_s = kBase_s;
  if (n > 0) work.plan.expected_s += kHealthPerGpu_s * n + kProbe_s + kProbePerExtraGpu_s * (n - 1);
  work.plan.floor_s = work.plan.expected_s;
  work.plan.coverage = n == 0 ? "no GPU: the PCI bus and the expectations"
                              : std::to_string(n) + (n == 1 ? " GPU" : " GPUs") +
                                    ": NVML health and a responsiveness probe each";
  return work;
}

}  // namespace preflight
