#pragma once
// The time model's vocabulary (docs/plan.md). Each check models its own time in its folder: given
// the node's shape and the seconds it may spend, it says how much work it will do and how long
// that is expected to take (Check::plan_work). The planner (run/planner.hpp) divides a run's
// deadline among the checks by these models; the check's run() sizes its work by the same
// function, so the plan shown by `preflight plan` is the work the run does.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace preflight {

class Thresholds;
class CheckOptions;
enum class Profile;

// What the model needs to know of a node. From discovery for a run; from --node for a described
// one (`preflight plan --node gpus=8,sku=h100-sxm5-80gb,nics=8`).
struct NodeShape {
  // nics when the NICs were not counted (the fleet plans from its command line alone, the same
  // on every rank): the rdma check's model takes them from its options, else one per GPU.
  static constexpr int kNicsFromOptions = -1;
  int gpus = 0;  // GPUs the checks will use
  int nics = 0;  // compute RDMA NICs; the rdma check counts them again when it runs
};

// What a check is asked to plan.
struct WorkRequest {
  Profile profile{};
  NodeShape shape;
  const Thresholds* thresholds = nullptr;  // the SKU's figures (bandwidths, TFLOP/s)
  const CheckOptions* options = nullptr;   // never null
  // The most modelled seconds the work may take; nullopt: the profile's whole work.
  std::optional<double> seconds;
  // This run's place in the pair rotation (--rotation, or the counter in --state-dir): where a
  // run covers only some pairs, run r covers step r mod steps.
  std::uint64_t rotation = 0;
};

// What a check will do and how long the model expects it to take.
struct WorkPlan {
  double expected_s = 0;  // modelled seconds of this work
  double floor_s = 0;     // modelled seconds of the least work that still gives a verdict
  bool reduced = false;   // less than the profile's whole work: the time did not allow it
  std::string coverage;   // one line: "16 of 56 ordered pairs (step 2 of 4); 64 MiB x 4 x 3"
  // Pair rotation: this run covers step `rotation_step` (0-based) of `rotation_steps`, so
  // rotation_steps consecutive runs cover every pair. 1 step: every pair, every run.
  int rotation_step = 0;
  int rotation_steps = 1;
  std::vector<std::string> covered;  // the pairs this run covers ("gpu0-gpu1"), when rotated
};

}  // namespace preflight
