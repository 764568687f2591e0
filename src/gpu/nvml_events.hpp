#pragma once
// NVML's event stream for the run (nvmlEventSetCreate, nvmlDeviceRegisterEvents,
// nvmlEventSetWait_v2): Xid critical errors the driver raises while preflight loads the GPUs, so
// each lands on its GPU and on the check whose load was running (docs/checks/counters.md).
#include <memory>

#include "gpu/nvml_library.hpp"
#include "preflight/engine/node_backend.hpp"

namespace preflight {

// Registers every NVML GPU of `node` for Xid critical errors; nullptr when NVML is not usable or
// lacks the event functions. A GPU that cannot be registered is listed in the source's
// problems and left out.
std::shared_ptr<GpuEventSource> open_nvml_events(const NvmlLibrary& nvml, const NodeReading& node);

}  // namespace preflight
