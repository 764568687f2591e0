// The rdma check's time model (rdma_plan.hpp).
#include "checks/rdma/rdma_plan.hpp"
#include "model/text_format.hpp"

#include <algorithm>
#include <cmath>

#include "checks/common/counters.hpp"  // kCounterReadSeconds
#include "checks/rdma/rdma_check.hpp"  // rdma_device_list
#include "checks/rdma/rdma_math.hpp"   // rdma_pair_entity
#include "preflight/check.hpp"         // Profile

namespace preflight {

namespace {

using namespace rdma_model;

double whole_transfer_s(Profile profile) {
  switch (profile) {
    case Profile::quick:
      return kQuickTransfer_s;
    case Profile::standard:
      return kStandardTransfer_s;
    case Profile::burnin:
      return kBurninTransfer_s;
  }
  return kQuickTransfer_s;
}

double modelled_s(int transfers, double transfer_s) {
  return kListing_s + transfers * (kTransferSetup_s + transfer_s);
}

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

// The three parts that grow with the node, as shifts of `per_shift` transfers (a transfer per
// NIC in each shift; rdma_plan.hpp).
struct Parts {
  int fixed = 0;  // every run, whatever the steps
  int per_shift = 0;
  int numa = 0;  // shifts of each part
  int gpus = 0;
  int pairs = 0;

  int most_steps() const { return std::max({numa, gpus, pairs, 1}); }
  // Shifts a step of a part of `shifts` takes when the whole rotation has `steps` steps: a part
  // is spread evenly over them, so every part covers itself in at most `steps` runs.
  static int per_step(int shifts, int steps) { return shifts > 0 ? ceil_div(shifts, steps) : 0; }
  int transfers(int steps) const {
    return fixed +
           per_shift * (per_step(numa, steps) + per_step(gpus, steps) + per_step(pairs, steps));
  }
  // The fewest steps in [least, most_steps()] whose transfers take at most `seconds` at
  // `transfer_s`; most_steps() (a shift of each part per run) when none does.
  int steps_within(double seconds, int least, double transfer_s) const {
    for (int steps = least; steps < most_steps(); ++steps) {
      if (modelled_s(transfers(steps), transfer_s) <= seconds) return steps;
    }
    return most_steps();
  }
};

// Seconds per transfer for `transfers` to take at most `seconds`, in whole hundredths (so that
// the coverage line shows what runs), within [kMinTransfer_s, most].
double transfer_s_within(double seconds, int transfers, double most) {
  if (transfers <= 0) return most;
  const double exact = (seconds - kListing_s) / transfers - kTransferSetup_s;
  // The 1e-9 keeps a figure that is exactly a hundredth (0.1 computed as 0.0999...) whole.
  const double hundredths = std::floor(exact * 100.0 + 1e-9) / 100.0;
  return std::clamp(hundredths, kMinTransfer_s, most);
}

std::string endpoint_name(const std::vector<std::string>& endpoints, int i) {
  const auto at = static_cast<std::size_t>(i);
  return at < endpoints.size() ? endpoints[at] : "nic" + std::to_string(i);
}

// "8 of 64 GPUDirect (GPUs rotate: step 2 of 8)", or "64 GPUDirect" for a part covered whole.
std::string part_text(const ShiftRotation& r, int nics, int extra, const char* one,
                      const char* many, const char* what) {
  const int all = r.shifts * nics + extra;
  const int now = static_cast<int>(r.covered.size()) * nics + extra;
  if (r.complete()) return count_of(static_cast<std::size_t>(all), one, many);
  return std::to_string(now) + " of " + count_of(static_cast<std::size_t>(all), one, many) + " (" +
         what + " rotate: step " + std::to_string(r.step + 1) + " of " + std::to_string(r.steps) +
         ")";
}

std::string loopbacks_text(const RdmaWork& w) {
  return part_text(w.numa, w.shape.nics, w.shape.extra_loopbacks, "loopback", "loopbacks",
                   "NUMA nodes");
}

std::string gpudirect_text(const RdmaWork& w) {
  return part_text(w.gpus, w.shape.nics, 0, "GPUDirect", "GPUDirect", "GPUs");
}

}  // namespace

ShiftRotation rotate_shifts(int shifts, int shifts_per_step, std::uint64_t rotation) {
  ShiftRotation r;
  r.shifts = std::max(shifts, 0);
  if (r.shifts == 0) return r;
  r.shifts_per_step = std::clamp(shifts_per_step, 1, r.shifts);
  r.steps = ceil_div(r.shifts, r.shifts_per_step);
  r.step = static_cast<int>(rotation % static_cast<std::uint64_t>(r.steps));
  // In order: shift 0 (each NIC's own socket, its nearest GPU) comes first, then the farther.
  for (int k = r.step * r.shifts_per_step; k < r.shifts && k < (r.step + 1) * r.shifts_per_step;
       ++k) {
    r.covered.push_back(k);
  }
  return r;
}

RdmaCoverage RdmaWork::coverage() const {
  RdmaCoverage c;
  if (!pairs.complete()) c.pairs = pairs.ordered_pairs();
  if (!numa.complete()) c.numa_shifts = numa.covered;
  if (!gpus.complete()) c.gpu_shifts = gpus.covered;
  return c;
}

RdmaWorkShape rdma_work_shape(const WorkRequest& request) {
  RdmaWorkShape shape;
  std::size_t listed = 0;
  if (request.options != nullptr) listed = rdma_device_list(*request.options).size();
  int nics = request.shape.nics;
  if (nics == NodeShape::kNicsFromOptions) {
    // Not counted (the fleet plans from its command line, the same on every rank): the ports
    // --expect-rnics asks for, else one NIC per GPU, as on a DGX.
    const std::optional<int> expected =
        request.options != nullptr ? expected_rnics(*request.options) : std::nullopt;
    nics = expected.value_or(request.shape.gpus);
  }
  shape.nics = listed > 0 ? static_cast<int>(listed) : std::max(nics, 0);
  shape.numa_cells = kModelNumaNodes;
  shape.gpu_cells = std::max(request.shape.gpus, 0);
  return shape;
}

RdmaWork plan_rdma(const WorkRequest& request, const RdmaWorkShape& shape,
                   const std::vector<std::string>& endpoints) {
  RdmaWork work;
  work.shape = shape;
  const int n = std::max(shape.nics, 0);
  Parts parts;
  parts.fixed = std::max(shape.extra_loopbacks, 0);
  parts.per_shift = n;
  parts.numa = n > 0 ? std::max(shape.numa_cells, 1) : 0;
  parts.gpus = n > 0 ? std::max(shape.gpu_cells, 0) : 0;
  parts.pairs = std::max(n - 1, 0);
  const double whole_t = whole_transfer_s(request.profile);
  // Standard and burnin cover everything every run; quick as few steps as fit its target.
  const int whole_steps =
      request.profile == Profile::quick ? parts.steps_within(kQuickTarget_s, 1, whole_t) : 1;
  const double whole_s = modelled_s(parts.transfers(whole_steps), whole_t);
  // A shift of each part is the least that still tests every NIC into host memory, into a GPU
  // and through the fabric.
  const double floor_s = modelled_s(parts.transfers(parts.most_steps()), kMinTransfer_s);

  // The ports' error counters, read before and after the transfers (counters.hpp): time the
  // transfers do not get.
  const double counter_s = n > 0 || parts.fixed > 0 ? kCounterReadSeconds : 0.0;
  int steps = whole_steps;
  double transfer_s = whole_t;
  if (request.seconds && *request.seconds < whole_s + counter_s) {
    const double seconds = std::max(*request.seconds - counter_s, floor_s);
    // Cells and pairs before seconds per transfer: as few steps as fit at quick's transfer (or
    // the profile's, if shorter), then the transfers lengthened into the time left, or
    // shortened toward kMinTransfer_s when even a shift of each part does not fit.
    const double reference_t = std::min(whole_t, kQuickTransfer_s);
    steps = parts.steps_within(seconds, whole_steps, reference_t);
    transfer_s = transfer_s_within(seconds, parts.transfers(steps), whole_t);
  }

  const std::uint64_t r = request.rotation;
  work.pairs = rotate_pairs(n, std::max(Parts::per_step(parts.pairs, steps), 1), r);
  work.numa = rotate_shifts(parts.numa, Parts::per_step(parts.numa, steps), r);
  work.gpus = rotate_shifts(parts.gpus, Parts::per_step(parts.gpus, steps), r);
  work.pair_transfers = static_cast<int>(work.pairs.ordered_pairs().size());
  work.all_pairs = n * parts.pairs;
  work.transfer_s = transfer_s;
  const int mesh_transfers =
      n * static_cast<int>(work.numa.covered.size() + work.gpus.covered.size());

  WorkPlan& plan = work.plan;
  plan.expected_s =
      modelled_s(parts.fixed + mesh_transfers + work.pair_transfers, transfer_s) + counter_s;
  plan.floor_s = std::min(floor_s + counter_s, plan.expected_s);
  plan.reduced = steps > whole_steps || transfer_s < whole_t;
  // Each part covers itself in its own steps, all of them within the longest: that many
  // consecutive runs cover every cell and pair.
  plan.rotation_steps = std::max({work.pairs.steps, work.numa.steps, work.gpus.steps});
  plan.rotation_step = static_cast<int>(r % static_cast<std::uint64_t>(plan.rotation_steps));
  // The covered cells and pairs of the parts that rotate, named as RdmaCheck::run names them
  // (rdma_math.hpp), with NIC i's own socket and GPU taken as the i-th.
  for (int i = 0; i < n; ++i) {
    const std::string nic = endpoint_name(endpoints, i);
    for (int k : work.numa.complete() ? std::vector<int>{} : work.numa.covered) {
      plan.covered.push_back(rdma_numa_entity(nic, (i + k) % parts.numa));
    }
  }
  if (!work.pairs.complete()) {
    for (const auto& [a, b] : work.pairs.ordered_pairs()) {
      plan.covered.push_back(
          rdma_pair_entity(endpoint_name(endpoints, a), endpoint_name(endpoints, b)));
    }
  }
  for (int i = 0; i < n; ++i) {
    const std::string nic = endpoint_name(endpoints, i);
    for (int k : work.gpus.complete() ? std::vector<int>{} : work.gpus.covered) {
      plan.covered.push_back(rdma_gpu_entity(nic, (i + k) % parts.gpus));
    }
  }
  if (n == 0 && parts.fixed == 0) {
    plan.coverage = "device listing only: no compute NIC";
  } else {
    plan.coverage = loopbacks_text(work) + ", " + gpudirect_text(work) + ", " +
                    rdma_pairs_text(work) + "; " + formatted("%g s", transfer_s) +
                    " of writes per transfer";
  }
  return work;
}

WorkPlan plan_rdma_work(const WorkRequest& request) {
  std::vector<std::string> listed;
  if (request.options != nullptr) listed = rdma_device_list(*request.options);
  return plan_rdma(request, rdma_work_shape(request), listed).plan;
}

std::string rdma_pairs_text(const RdmaWork& work) {
  if (work.all_pairs == 0) {
    return "no NIC pair (" + count_of(static_cast<std::size_t>(work.shape.nics), "NIC", "NICs") +
           ")";
  }
  std::string text =
      std::to_string(work.pair_transfers) + " of " + std::to_string(work.all_pairs) + " NIC pairs";
  if (!work.pairs.complete()) {
    text += " (pairs rotate: step " + std::to_string(work.pairs.step + 1) + " of " +
            std::to_string(work.pairs.steps) + ")";
  }
  return text;
}

std::string rdma_rotation_text(const RdmaWork& work) {
  std::vector<std::string> parts;
  if (!work.numa.complete()) parts.push_back(loopbacks_text(work));
  if (!work.gpus.complete()) parts.push_back(gpudirect_text(work));
  if (!work.pairs.complete()) parts.push_back(rdma_pairs_text(work));
  std::string text;
  for (const std::string& p : parts) text += (text.empty() ? "" : ", ") + p;
  return text;
}

}  // namespace preflight
