#pragma once
// The nccl check's time model (docs/plan.md): for a request (the node's GPUs, the profile, the
// seconds it may take) the sizes and iterations run() gives both collectives, and the seconds
// that work is modelled to take. plan_work() and run() call plan_nccl_work, so `preflight plan`
// shows the work a run does. Pure: no hardware, no clock. The constants and where they come from
// are in nccl_plan.cpp; unit-tested in tests/checks/nccl/test_nccl_plan.cpp.
#include <cstdint>
#include <vector>

#include "checks/nccl/nccl_math.hpp"
#include "preflight/engine/collective_engine.hpp"
#include "preflight/work_plan.hpp"

namespace preflight {

// The collectives the check runs, in order, each on a communicator of its own.
inline const std::vector<CollectiveOp>& nccl_ops() {
  static const std::vector<CollectiveOp> ops = {CollectiveOp::all_gather, CollectiveOp::all_reduce};
  return ops;
}

struct NcclWork {
  NcclPlan whole;  // the profile's sizes and iterations (nccl_plan)
  NcclPlan sizes;  // what this run measures: the whole, or fewer iterations and sizes
  // Modelled seconds of each collective (nccl_ops' order), for run()'s shares of the deadline.
  std::vector<double> collective_s;
  WorkPlan plan;
};

// The work for this request. Reduced (request.seconds below the whole work's) by iterations,
// down to 3, then by the smaller sizes: the largest size, the one judged against the SKU's bus
// bandwidth, is always kept (a smaller one would read as a slow node). Fewer than two GPUs:
// nothing to run (the check skips). smallest_memory_bytes: the smallest GPU's memory, which
// limits the sizes (nccl_plan; 0: unknown, as before discovery).
NcclWork plan_nccl_work(const WorkRequest& request, std::uint64_t smallest_memory_bytes = 0);

}  // namespace preflight
