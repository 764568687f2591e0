#pragma once
// Fault kinds of the gemm check. They act inside the real product loop on the GPU (the engine
// applies them between a product and its verification, or holds the GPU idle), so every
// detector is exercised end to end rather than fed a made-up reading.
#include <vector>

#include "preflight/engine/gemm_engine.hpp"
#include "preflight/faults.hpp"

namespace preflight {

std::vector<FaultKindSpec> gemm_fault_kinds();

// Sets the job's injection hooks from the faults aimed at its GPU; true when any applies.
bool apply_gemm_faults(const FaultPlan& faults, GemmJob& job);

}  // namespace preflight
