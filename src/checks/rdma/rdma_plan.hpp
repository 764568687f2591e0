#pragma once
// The rdma check's time model (docs/plan.md): how many transfers a run does and how long they
// take. Pure: RdmaCheck::plan_work() and RdmaCheck::run() size the work with the same function,
// so what `preflight plan` shows is what a run does. Tested in
// tests/checks/rdma/test_rdma_plan.cpp.
//
// A run lists the devices (a fixed cost), then runs transfers, each a setup (queue pairs created
// and connected, buffers filled and registered) and a fixed number of seconds of RDMA writes.
// Three parts grow with the node, each cut into shifts that give every NIC one transfer
// (rdma_math.hpp, RdmaCoverage): the loopback mesh into host memory (a shift per NUMA node), the
// GPUDirect mesh (a shift per GPU) and the NIC pairs (n-1 shifts, model/pair_rotation.hpp). A
// further port of a NIC adds a loopback to every run. Where the parts do not all fit, a run
// covers some shifts of each and consecutive runs cover them all.
#include <cstdint>
#include <string>
#include <vector>

#include "checks/rdma/rdma_math.hpp"  // RdmaCoverage
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
// Seconds of RDMA writes per transfer. Quick was 0.25 s; 0.15 s lets a shift of each part fit
// quick's target on 8 NICs. At 400 Gb/s 0.15 s is 7.5 GB written, far past the queue's fill and
// drain (about a millisecond), so the rate is still the steady one.
inline constexpr double kQuickTransfer_s = 0.15;
inline constexpr double kStandardTransfer_s = 2.0;
inline constexpr double kBurninTransfer_s = 10.0;
// The shortest a reduced run makes a transfer: 5 GB at 400 Gb/s, still a rate, not a latency.
inline constexpr double kMinTransfer_s = 0.1;
// Quick's whole work: as few steps of the rotations as fit in this many seconds (at least a shift
// of each part): about 6 s of the quick profile's 30 s on 8 GPUs and 8 NICs (docs/plan.md).
inline constexpr double kQuickTarget_s = 6.5;
// NUMA nodes the model counts before the check has read the host's (a plan from --node, the
// fleet's plan from its command line): the two sockets of the DGX and HGX boards. The check
// counts them again when it runs.
inline constexpr int kModelNumaNodes = 2;
}  // namespace rdma_model

// What the work is counted over.
struct RdmaWorkShape {
  int nics = 0;  // compute NICs with a usable port: the pairs' endpoints, the mesh's rows
  int extra_loopbacks = 0;  // usable ports beyond each NIC's first: a loopback each, every run
  int numa_cells = 1;       // loopbacks into host memory per NIC (RdmaMesh::host_cells)
  int gpu_cells = 0;        // GPUDirect loopbacks per NIC: the GPUs CUDA can use
};

// The shape the planner knows before the check runs: the NICs --rdma-devices names, else
// request.shape.nics, with one usable port each, rdma_model::kModelNumaNodes NUMA nodes and a
// GPUDirect cell per NIC and GPU.
RdmaWorkShape rdma_work_shape(const WorkRequest& request);

// One mesh part's rotation: its shifts 0..shifts-1 in order, cut into steps of shifts_per_step;
// run r covers step r mod steps.
struct ShiftRotation {
  int shifts = 0;  // 0: the part is empty
  int shifts_per_step = 1;
  int steps = 1;
  int step = 0;
  std::vector<int> covered;  // the shifts of this run's step

  bool complete() const { return steps == 1; }
};
ShiftRotation rotate_shifts(int shifts, int shifts_per_step, std::uint64_t rotation);

// The work of one run.
struct RdmaWork {
  RdmaWorkShape shape;
  // The NIC pairs this run covers: pairs.ordered_pairs(), endpoint indices into the compute
  // NICs with a usable port (rdma_pair_endpoints). Complete: every ordered pair.
  PairRotation pairs;
  ShiftRotation numa;      // the loopbacks into host memory
  ShiftRotation gpus;      // the GPUDirect loopbacks
  int pair_transfers = 0;  // ordered pairs this run covers
  int all_pairs = 0;       // n(n-1)
  double transfer_s = 0;   // seconds of writes per transfer
  WorkPlan plan;

  // What plan_transfers() plans for this run: nullopt for a part covered whole.
  RdmaCoverage coverage() const;
};

// The work for this request over this shape. `endpoints` names the NICs for plan.covered
// ("mlx5_0-mlx5_1", "mlx5_0-gpu1"); where it has fewer names than shape.nics, "nic<i>" stands for
// the i-th compute NIC. The covered mesh cells are named as if NIC i's own NUMA node and GPU
// were the i-th (the check names them by the node's real places when it runs).
RdmaWork plan_rdma(const WorkRequest& request, const RdmaWorkShape& shape,
                   const std::vector<std::string>& endpoints);

// RdmaCheck::plan_work: plan_rdma over rdma_work_shape(request), the NICs named by
// --rdma-devices where it is given.
WorkPlan plan_rdma_work(const WorkRequest& request);

// "8 of 56 NIC pairs (pairs rotate: step 2 of 7)", "56 of 56 NIC pairs", "no NIC pair (1 NIC)".
std::string rdma_pairs_text(const RdmaWork& work);
// The parts that rotate, as the summary says them: "8 of 64 GPUDirect (GPUs rotate: step 2 of
// 8), 8 of 56 NIC pairs (pairs rotate: step 2 of 7)"; "" when the run covers everything.
std::string rdma_rotation_text(const RdmaWork& work);

}  // namespace preflight
