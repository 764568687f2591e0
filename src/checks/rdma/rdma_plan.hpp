#pragma once
// The rdma check's time model (docs/plan.md): how many transfers a run does and how long they
// take. Pure: RdmaCheck::plan_work() and RdmaCheck::run() size the work with the same function,
// so what `preflight plan` shows is what a run does. Tested in
// tests/checks/rdma/test_rdma_plan.cpp.
//
// A run lists the devices (a fixed cost), then runs transfers, each a setup (queue pairs created
// and connected, buffers filled and registered) and a fixed number of seconds of RDMA writes:
// a loopback per usable port and a GPUDirect loopback per NIC with a nearest GPU, every run, and
// NIC pairs. The pairs are what grows (n(n-1) for n NICs): where they do not fit, a run covers
// some shifts of the pair rotation (model/pair_rotation.hpp) and consecutive runs cover them all.
#include <string>
#include <vector>

#include "model/pair_rotation.hpp"
#include "preflight/work_plan.hpp"

namespace preflight {

namespace rdma_model {
// ibv_get_device_list, each device opened and its ports, GIDs and PCIe link read, plus sysfs for
// the NICs' places: assumed, to be measured by the acceptance kit.
inline constexpr double kListing_s = 0.2;
// Per transfer, before its writes: two protection domains and queue pairs created and connected,
// up to 64 MiB filled and registered twice (host or GPU memory), and the data verified after.
// Assumed, to be measured by the acceptance kit.
inline constexpr double kTransferSetup_s = 0.1;
// Seconds of RDMA writes per transfer. Quick was 0.25 s; 0.15 s lets loopbacks, GPUDirect and a
// shift of NIC pairs fit quick's target on 8 NICs. At 400 Gb/s 0.15 s is 7.5 GB written, far
// past the queue's fill and drain (about a millisecond), so the rate is still the steady one.
inline constexpr double kQuickTransfer_s = 0.15;
inline constexpr double kStandardTransfer_s = 2.0;
inline constexpr double kBurninTransfer_s = 10.0;
// The shortest a reduced run makes a transfer: 5 GB at 400 Gb/s, still a rate, not a latency.
inline constexpr double kMinTransfer_s = 0.1;
// Quick's whole work: loopbacks, GPUDirect and as many shifts of NIC pairs as fit in this many
// seconds (at least one): about 6 s of the quick profile's 30 s on 8 GPUs and 8 NICs
// (docs/plan.md).
inline constexpr double kQuickTarget_s = 6.5;
}  // namespace rdma_model

// What the work is counted over.
struct RdmaWorkShape {
  int nics = 0;       // endpoints of the NIC pairs: compute NICs with a usable port
  int loopbacks = 0;  // usable ports of the compute NICs
  int gpudirect = 0;  // NICs whose nearest GPU CUDA can use
};

// The shape the planner knows before the check runs: the NICs --rdma-devices names, else
// request.shape.nics, with one usable port each and GPUDirect on each when the node has GPUs.
RdmaWorkShape rdma_work_shape(const WorkRequest& request);

// The work of one run.
struct RdmaWork {
  RdmaWorkShape shape;
  // The NIC pairs this run covers: rotation.ordered_pairs(), endpoint indices into the compute
  // NICs with a usable port (rdma_pair_endpoints). Complete: every ordered pair.
  PairRotation rotation;
  int pair_transfers = 0;  // ordered pairs this run covers
  int all_pairs = 0;       // n(n-1)
  double transfer_s = 0;   // seconds of writes per transfer
  WorkPlan plan;
};

// The work for this request over this shape. `endpoints` names the pairs' endpoints for
// plan.covered ("mlx5_0-mlx5_1"); where it has fewer names than shape.nics, "nic<i>" stands for
// the i-th compute NIC.
RdmaWork plan_rdma(const WorkRequest& request, const RdmaWorkShape& shape,
                   const std::vector<std::string>& endpoints);

// RdmaCheck::plan_work: plan_rdma over rdma_work_shape(request), the pairs named by
// --rdma-devices where it is given.
WorkPlan plan_rdma_work(const WorkRequest& request);

// "8 of 56 NIC pairs (pairs rotate: step 2 of 7)", "56 of 56 NIC pairs", "no NIC pair (1 NIC)".
std::string rdma_pairs_text(const RdmaWork& work);

}  // namespace preflight
