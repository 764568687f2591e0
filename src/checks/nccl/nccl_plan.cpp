// The nccl check's time model: NCCL loaded once, then per collective a communicator over every
// GPU (its init dominates on one node), and per size the pattern fill, warm-ups, the timed
// iterations at the SKU's bus bandwidth and the verification of every received element.
#include "checks/nccl/nccl_plan.hpp"

#include <algorithm>
#include <string>

#include "preflight/thresholds.hpp"

namespace preflight {
namespace {

// --- The model's constants. Where no published figure exists they are assumed, to be measured
// by the acceptance kit (docs/plan.md).
// dlopen of libnccl.so.2 and the CUDA runtime's device list (unavailable_reason). Assumed.
constexpr double kNcclLoad_s = 0.1;
// ncclGetUniqueId: NCCL picks its bootstrap interface and opens a socket. Assumed.
constexpr double kUniqueId_s = 0.05;
// ncclCommInitRank of every rank in one group: bootstrap, topology detection, the channels'
// buffers and connections; it grows with the ranks. NCCL's own "Init timings" of an 8-GPU node
// (NVIDIA/nccl#1646, DGX B200, the kernels' load aside): alloc 0.4 s, bootstrap up to 0.8 s,
// topo 1.1 s, connections 0.4 s; a maintainer calls 5-6 s per init "a lot more than it should"
// (NVIDIA/nccl#534). Taken lower for H100 nodes, where topology detection is simpler: 1.5 s at
// 8 GPUs. To be measured by the acceptance kit.
constexpr double kCommInit_s = 0.5;
constexpr double kCommInitPerGpu_s = 0.125;
// The communicators finalized and destroyed, the buffers freed. Assumed.
constexpr double kCommTeardown_s = 0.1;
// Per size: the pattern fill, the receive buffer's memset, the verification's launch and the
// counters' copy back, each waited for by polling. Assumed.
constexpr double kSizeSetup_s = 0.01;
// A collective's fixed cost per iteration at small sizes: NCCL's latency within a node is some
// 10-30 us (nccl-tests' small sizes on NVLink); more for PCIe.
constexpr double kIterationLatency_s = 50e-6;
// Untimed iterations before the timed ones (CollectiveJob::warmups, the check keeps the default).
constexpr int kWarmups = 2;
// The verification reads every received element once on its GPU: HBM speed, taken low.
constexpr double kVerifyGBps = 1000.0;
// A node whose SKU gives no bus-bandwidth figure (0: unknown, or a PCIe node): about what
// all-gather reaches over PCIe Gen4 x16 (some 20 GB/s of busbw).
constexpr double kFallbackBusbwGBps = 20.0;
// The fewest timed iterations that still give a bandwidth: one slow iteration does not decide.
constexpr int kMinIterations = 3;

double busbw_gbps(CollectiveOp op, const Thresholds* thresholds) {
  double gbps = 0.0;
  if (thresholds != nullptr) gbps = thresholds->get("nccl." + nccl_op_key(op) + "_busbw_gbps");
  return gbps > 0.0 ? gbps : kFallbackBusbwGBps;
}

// One iteration of `op` on `bytes` over n ranks at the modelled bus bandwidth, inverting
// nccl-tests' busbw (collective_busbw_gbps).
double iteration_s(CollectiveOp op, std::size_t bytes, int n, double gbps) {
  const double factor = op == CollectiveOp::all_gather ? (n - 1.0) : 2.0 * (n - 1.0) / n;
  return kIterationLatency_s + static_cast<double>(bytes) * factor / (gbps * 1e9);
}

// Modelled seconds of one collective over n ranks.
double collective_s(CollectiveOp op, const NcclPlan& sizes, int n, const Thresholds* thresholds) {
  const double gbps = busbw_gbps(op, thresholds);
  double total = kUniqueId_s + kCommInit_s + kCommInitPerGpu_s * n + kCommTeardown_s;
  for (std::size_t bytes : sizes.sizes) {
    const double received = static_cast<double>(bytes) * (op == CollectiveOp::all_gather ? n : 1);
    total += kSizeSetup_s + (kWarmups + sizes.iterations) * iteration_s(op, bytes, n, gbps) +
             received / (kVerifyGBps * 1e9);
  }
  return total;
}

double total_s(const NcclPlan& sizes, int n, const Thresholds* thresholds,
               std::vector<double>* per_op = nullptr) {
  double total = kNcclLoad_s;
  for (CollectiveOp op : nccl_ops()) {
    const double s = collective_s(op, sizes, n, thresholds);
    if (per_op != nullptr) per_op->push_back(s);
    total += s;
  }
  return total;
}

std::string sizes_text(const NcclPlan& p) {
  std::string text;
  for (std::size_t bytes : p.sizes) text += (text.empty() ? "" : ", ") + format_size(bytes);
  return text + " x " + std::to_string(p.iterations) + " iterations";
}

}  // namespace

NcclWork plan_nccl_work(const WorkRequest& request, std::uint64_t smallest_memory_bytes) {
  NcclWork work;
  const int n = request.shape.gpus;
  work.whole = nccl_plan(request.profile, n, smallest_memory_bytes);
  work.sizes = work.whole;
  if (n < 2) {
    // The check skips: one GPU has nothing to all-gather between.
    work.collective_s.assign(nccl_ops().size(), 0.0);
    work.plan.coverage = "fewer than two GPUs: no collective";
    return work;
  }
  const Thresholds* t = request.thresholds;
  NcclPlan least;
  least.sizes = {work.whole.sizes.back()};
  least.iterations = std::min(kMinIterations, work.whole.iterations);
  work.plan.floor_s = total_s(least, n, t);

  const double whole = total_s(work.whole, n, t);
  if (request.seconds && *request.seconds < whole) {
    // Iterations first (the model is linear in them), then the smaller sizes, smallest first.
    NcclPlan& p = work.sizes;
    const double at_zero = [&] {
      NcclPlan none = p;
      none.iterations = 0;
      return total_s(none, n, t);
    }();
    const double per_iteration = [&] {
      NcclPlan one = p;
      one.iterations = 1;
      return total_s(one, n, t) - at_zero;
    }();
    const int fit = per_iteration > 0
                        ? static_cast<int>((*request.seconds - at_zero) / per_iteration)
                        : p.iterations;
    p.iterations = std::clamp(fit, least.iterations, work.whole.iterations);
    while (p.sizes.size() > 1 && total_s(p, n, t) > *request.seconds) {
      p.sizes.erase(p.sizes.begin());
    }
    work.plan.reduced =
        p.iterations < work.whole.iterations || p.sizes.size() < work.whole.sizes.size();
  }
  work.plan.expected_s = total_s(work.sizes, n, t, &work.collective_s);
  work.plan.coverage =
      "all-gather and all-reduce over " + std::to_string(n) + " GPUs: " + sizes_text(work.sizes);
  if (work.plan.reduced) work.plan.coverage += " (of " + sizes_text(work.whole) + ")";
  return work;
}

}  // namespace preflight
