#pragma once
// What the three bandwidth checks (pcie, nvlink, hbm) share: their fault kinds, their time model
// and measurement sizes (bandwidth_plan.hpp), and the findings for a measurement that failed, hung
// or moved corrupted bytes.
#include <optional>
#include <string>
#include <vector>

#include "checks/common/bandwidth_math.hpp"
#include "checks/common/bandwidth_plan.hpp"
#include "checks/common/call_bounded.hpp"
#include "checks/common/entities.hpp"
#include "preflight/check.hpp"
#include "preflight/engine/bandwidth_engine.hpp"
#include "preflight/faults.hpp"

namespace preflight {

std::vector<FaultKindSpec> pcie_fault_kinds();    // pcie-slow:FACTOR@gpu=I
std::vector<FaultKindSpec> nvlink_fault_kinds();  // nvlink-slow:FACTOR@pair=I-J
std::vector<FaultKindSpec> hbm_fault_kinds();     // hbm-corrupt@gpu=I

// The slow factor a pcie-slow fault sets for this GPU (1: none).
double pcie_slow_factor(const FaultPlan& faults, int gpu_index);
// The slow factor an nvlink-slow fault sets for copies between these GPUs, either direction.
double nvlink_slow_factor(const FaultPlan& faults, int gpu_a, int gpu_b);

// The skip reason of a check that needs GPUs CUDA can use, when the node has none (they are
// listed but CUDA sees none of them: inventory says why).
std::optional<std::string> no_cuda_gpu_reason(const CheckContext& ctx);
// BANDWIDTH_GPU_NOT_TESTED for every GPU of the node that CUDA cannot use.
void report_untested_gpus(const NodeReading& node, std::vector<Finding>& findings);

// Findings for a measurement's failure on `entity` ("gpu3", "gpu0-gpu1"): BANDWIDTH_TIMEOUT
// (result nullopt or timed_out), BANDWIDTH_CUDA_ERROR, BANDWIDTH_DATA_MISMATCH (a stream's
// destination held bad words). `what` names the measurement ("host-to-device copies").
// Returns true when the entity is unusable for further measurements (timed out).
bool judge_measurement_failure(const std::optional<MeasurementResult>& result,
                               const std::string& entity, const std::string& what,
                               std::vector<Finding>& findings);

}  // namespace preflight
