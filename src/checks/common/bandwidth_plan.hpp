#pragma once
// The time models of the bandwidth checks (pcie, nvlink, hbm; docs/plan.md): for a request (the
// node's shape, the profile, the seconds it may take) the sizes each check's run() uses and the
// seconds that work is modelled to take. plan_work() and run() call the same plan_* function, so
// `preflight plan` shows the work a run does. Pure: no hardware, no clock. The model's constants
// and where they come from are in bandwidth_plan.cpp; unit-tested in
// tests/checks/common/test_bandwidth_plan.cpp.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/pair_rotation.hpp"
#include "preflight/check.hpp"
#include "preflight/engine/bandwidth_engine.hpp"
#include "preflight/work_plan.hpp"

namespace preflight {

// Copy sizes and repetitions of one measurement.
struct MeasurementShape {
  std::size_t bytes = 0;
  int copies_per_sample = 0;
  int samples = 0;
};
// The profile's whole work (docs/checks/bandwidth.md, "Sizes per profile").
MeasurementShape pcie_shape(Profile profile);
MeasurementShape nvlink_shape(Profile profile);
MeasurementShape hbm_copy_shape(Profile profile);

// "64 MiB x 4 copies x 3 samples"
std::string shape_text(const MeasurementShape& shape);

// --- pcie: every GPU alone (host-to-device, device-to-host, bidirectional), then with two or
// more GPUs every GPU at once (host-to-device, device-to-host). Reduced by samples and copy size,
// down to 64 MiB x 4 copies x 2 samples; every GPU and every direction is always measured.
struct PcieWork {
  MeasurementShape shape;
  WorkPlan plan;
};
PcieWork plan_pcie(const WorkRequest& request);

// --- nvlink: peer access of every ordered pair, every run; unidirectional copies per ordered
// pair and bidirectional per unordered pair of the rotation's step. The quick profile's whole
// work is as many shifts as fit its target; standard and burnin cover every pair. Reduced by
// samples and copy size first, then by shifts per step (rotation), down to one shift.
struct NvlinkWork {
  MeasurementShape shape;
  PairRotation rotation;  // endpoints: the request's GPUs, by position 0..N-1
  WorkPlan plan;
};
NvlinkWork plan_nvlink(const WorkRequest& request);

// --- hbm: per GPU, device-local copies, then the pattern test over a slice of its memory.
// Reduced by copy samples, then burn-in's passes, then the patterns (down to address-in-address
// and its inverse), then the slice (halved down to 1 GiB), and last to address-in-address alone.
struct HbmWork {
  MeasurementShape copy;
  std::vector<MemoryPattern> patterns;
  // The pattern region of a GPU: `fraction` of its memory less the context reserve, at most
  // `cap_bytes` (0: no cap); hbm_pattern_bytes.
  double fraction = 0.0;
  std::uint64_t cap_bytes = 0;
  int passes = 1;  // burn-in repeats the patterns (new seed for random), more while time lasts
  WorkPlan plan;
};
// `gpu_memory_bytes`: the largest GPU's memory (run: what the GPUs report; plan_work: from the
// SKU, hbm_model_memory_bytes).
HbmWork plan_hbm(const WorkRequest& request, std::uint64_t gpu_memory_bytes);
// The bytes a GPU with this much memory tests.
std::uint64_t hbm_pattern_bytes(const HbmWork& work, std::uint64_t memory_total_bytes);
// A GPU's memory as the model assumes it before discovery: the SKU id's size ("h100-sxm5-80gb":
// 80 GiB), else 80 GiB.
std::uint64_t hbm_model_memory_bytes(const Thresholds* thresholds);

// --- What run() shares.
// The request as the check sees it (docs/plan.md): the planner's seconds and rotation, the
// context's profile, options and thresholds, and the GPUs this check measures.
WorkRequest bandwidth_request(const CheckContext& ctx, int gpus);

}  // namespace preflight
