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

// The most shifts in [least, most] whose transfers take at most `seconds` at `transfer_s`;
// `least` when none does.
int shifts_within(double seconds, int fixed, int per_shift, int least, int most,
                  double transfer_s) {
  for (int shifts = most; shifts > least; --shifts) {
    if (modelled_s(fixed + shifts * per_shift, transfer_s) <= seconds) return shifts;
  }
  return least;
}

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

}  // namespace

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
  shape.loopbacks = shape.nics;
  shape.gpudirect = request.shape.gpus > 0 ? shape.nics : 0;
  return shape;
}

RdmaWork plan_rdma(const WorkRequest& request, const RdmaWorkShape& shape,
                   const std::vector<std::string>& endpoints) {
  RdmaWork work;
  work.shape = shape;
  const int n = std::max(shape.nics, 0);
  const int fixed = std::max(shape.loopbacks, 0) + std::max(shape.gpudirect, 0);
  const int per_shift = ordered_pairs_in_shift(n);
  const int most_shifts = std::max(n - 1, 0);
  // One shift of pairs is the least that still tests the fabric between NICs.
  const int least_shifts = n >= 2 ? 1 : 0;
  const double whole_t = whole_transfer_s(request.profile);
  const int whole_shifts =
      request.profile == Profile::quick
          ? shifts_within(kQuickTarget_s, fixed, per_shift, least_shifts, most_shifts, whole_t)
          : most_shifts;
  const double whole_s = modelled_s(fixed + whole_shifts * per_shift, whole_t);
  const double floor_s = modelled_s(fixed + least_shifts * per_shift, kMinTransfer_s);

  // The ports' error counters, read before and after the transfers (counters.hpp): time the
  // transfers do not get.
  const double counter_s = n > 0 || fixed > 0 ? kCounterReadSeconds : 0.0;
  int shifts = whole_shifts;
  double transfer_s = whole_t;
  if (request.seconds && *request.seconds < whole_s + counter_s) {
    const double seconds = std::max(*request.seconds - counter_s, floor_s);
    // Pairs before seconds per transfer: as many shifts as fit at quick's transfer (or the
    // profile's, if shorter), then the transfers lengthened into the time left, or shortened
    // toward kMinTransfer_s when even one shift does not fit.
    const double reference_t = std::min(whole_t, kQuickTransfer_s);
    shifts = shifts_within(seconds, fixed, per_shift, least_shifts, whole_shifts, reference_t);
    transfer_s = transfer_s_within(seconds, fixed + shifts * per_shift, whole_t);
  }

  work.rotation = rotate_pairs(n, std::max(shifts, 1), request.rotation);
  work.pair_transfers = static_cast<int>(work.rotation.ordered_pairs().size());
  work.all_pairs = n * most_shifts;
  work.transfer_s = transfer_s;

  WorkPlan& plan = work.plan;
  plan.expected_s = modelled_s(fixed + work.pair_transfers, transfer_s) + counter_s;
  plan.floor_s = std::min(floor_s + counter_s, plan.expected_s);
  plan.reduced = shifts < whole_shifts || transfer_s < whole_t;
  plan.rotation_step = work.rotation.step;
  plan.rotation_steps = work.rotation.steps;
  if (!work.rotation.complete()) {
    for (const auto& [a, b] : work.rotation.ordered_pairs()) {
      plan.covered.push_back(
          rdma_pair_entity(endpoint_name(endpoints, a), endpoint_name(endpoints, b)));
    }
  }
  if (n == 0 && fixed == 0) {
    plan.coverage = "device listing only: no compute NIC";
  } else {
    plan.coverage = count_of(static_cast<std::size_t>(shape.loopbacks), "loopback", "loopbacks") +
                    ", " + std::to_string(shape.gpudirect) + " GPUDirect, " +
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
  if (!work.rotation.complete()) {
    text += " (pairs rotate: step " + std::to_string(work.rotation.step + 1) + " of " +
            std::to_string(work.rotation.steps) + ")";
  }
  return text;
}

}  // namespace preflight
