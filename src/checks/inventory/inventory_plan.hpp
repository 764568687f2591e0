#pragma once
// The inventory check's time model (docs/plan.md): NVML's health queries of every GPU, then the
// responsiveness probe of every GPU at once. Not reducible: every GPU is always read and probed,
// so the floor is the whole work. Pure: no hardware, no clock. The constants and where they come
// from are in inventory_plan.cpp; unit-tested in tests/checks/inventory/test_inventory.cpp.
#include "preflight/work_plan.hpp"

namespace preflight {

struct InventoryWork {
  int gpus = 0;  // GPUs read and probed
  WorkPlan plan;
};

// The work for this request: request.seconds changes nothing (floor = expected). No GPU: the PCI
// bus and the expectations alone, 0.05 s.
InventoryWork plan_inventory_work(const WorkRequest& request);

}  // namespace preflight
