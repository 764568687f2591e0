#include "checks/nccl/nccl_math.hpp"

#include <algorithm>

#include "checks/common/entities.hpp"
#include "checks/common/fault_kinds.hpp"
#include "checks/nccl/nccl_findings.hpp"
#include "model/byte_units.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

std::vector<FaultKindSpec> nccl_fault_kinds() {
  return {
      fault_kind("nccl-corrupt", TargetType::gpu,
                 "one element of the GPU's send buffer is changed after the pattern fill, for "
                 "every size of both collectives: every receiver gets its contribution wrong",
                 {"NCCL_DATA_MISMATCH", "FAULT_TARGET_MISSING"}),
      slow_kind("nccl-slow", TargetType::gpu,
                "the GPU idles after each timed iteration, so the node's communicator delivers "
                "about FACTOR of its bus bandwidth, e.g. 0.5",
                {"NCCL_BUSBW_LOW", "NCCL_BUSBW_MARGINAL", "FAULT_TARGET_MISSING"}),
  };
}

NcclPlan nccl_plan(Profile profile, int nranks, std::uint64_t smallest_memory_bytes) {
  NcclPlan plan;
  switch (profile) {
    case Profile::quick:
      plan.sizes = {1 * kMiB, 256 * kMiB};
      plan.iterations = 10;
      break;
    case Profile::standard:
      plan.sizes = {1 * kMiB, 16 * kMiB, 256 * kMiB, 1024 * kMiB};
      plan.iterations = 20;
      break;
    case Profile::burnin:
      plan.sizes = {1 * kMiB, 16 * kMiB, 256 * kMiB, 1024 * kMiB};
      plan.iterations = 200;
      break;
  }
  if (smallest_memory_bytes == 0) return plan;
  // NCCL's own buffers, the CUDA context and the other half's headroom fit in what is left.
  const std::uint64_t budget = smallest_memory_bytes / 2;
  const auto slots = static_cast<std::uint64_t>(std::max(nranks, 1)) + 1;
  std::vector<std::size_t> kept;
  for (std::size_t bytes : plan.sizes) {
    if (kept.empty() || static_cast<std::uint64_t>(bytes) * slots <= budget) kept.push_back(bytes);
  }
  plan.sizes = std::move(kept);
  return plan;
}

CorruptionBlame blame_corruption(const std::vector<std::vector<std::uint64_t>>& matrix) {
  CorruptionBlame blame;
  const int n = static_cast<int>(matrix.size());
  const auto bad = [&](int r, int s) {
    return s < static_cast<int>(matrix[r].size()) && matrix[r][s] > 0;
  };
  std::vector<bool> sender(n, false);
  std::vector<bool> receiver(n, false);
  for (int s = 0; s < n; ++s) {
    bool at_all_others = true;
    for (int r = 0; r < n; ++r) {
      if (r != s && !bad(r, s)) at_all_others = false;
    }
    sender[s] = at_all_others && (n - 1 >= 2 || bad(s, s));
  }
  if (n >= 2 && std::all_of(sender.begin(), sender.end(), [](bool b) { return b; })) {
    blame.everywhere = true;
    return blame;
  }
  for (int r = 0; r < n && n >= 3; ++r) {
    bool from_all_others = true;
    for (int s = 0; s < n; ++s) {
      if (s != r && !bad(r, s)) from_all_others = false;
    }
    receiver[r] = from_all_others;
  }
  for (int i = 0; i < n; ++i) {
    if (sender[i]) blame.senders.push_back(i);
    if (receiver[i]) blame.receivers.push_back(i);
  }
  for (int r = 0; r < n; ++r) {
    for (int s = 0; s < n; ++s) {
      if (!bad(r, s) || sender[s] || receiver[r]) continue;
      if (r == s) {
        blame.own.push_back(r);
      } else {
        blame.links.emplace_back(s, r);
      }
    }
  }
  return blame;
}

BusbwClass classify_busbw(double busbw_gbps, double expected_gbps, double fail_fraction,
                          double warn_fraction) {
  if (expected_gbps <= 0) return BusbwClass::ok;
  if (fail_fraction > 0 && busbw_gbps < expected_gbps * fail_fraction) return BusbwClass::low;
  if (warn_fraction > 0 && busbw_gbps < expected_gbps * warn_fraction) return BusbwClass::marginal;
  return BusbwClass::ok;
}

std::string nccl_op_name(CollectiveOp op) {
  return op == CollectiveOp::all_gather ? "all-gather" : "all-reduce";
}

std::string format_size(std::size_t bytes) {
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  return std::to_string(bytes) + " bytes";
}

std::vector<Finding> judge_nccl(const NcclReadings& readings, const Thresholds& thresholds) {
  std::vector<Finding> findings;
  const double fail_fraction = thresholds.get("nccl.fail_fraction");
  const double warn_fraction = thresholds.get("nccl.warn_fraction");
  for (const NcclCollectiveReading& c : readings.collectives) {
    // The largest size is the one near the links' peak, as nccl-tests' large sizes are; a
    // collective cut short never reached it.
    if (c.sizes.empty()) continue;
    if (!readings.sizes_planned.empty() && c.sizes.size() != readings.sizes_planned.size()) {
      continue;
    }
    const NcclSizeReading& largest = *std::max_element(
        c.sizes.begin(), c.sizes.end(),
        [](const NcclSizeReading& a, const NcclSizeReading& b) { return a.bytes < b.bytes; });
    const std::string key = nccl_op_key(c.op);
    const double expected = thresholds.get("nccl." + key + "_busbw_gbps");
    const BusbwClass verdict =
        classify_busbw(largest.busbw_gbps, expected, fail_fraction, warn_fraction);
    if (verdict == BusbwClass::ok) continue;
    const bool low = verdict == BusbwClass::low;
    const std::string text = nccl_op_name(c.op) + " over " + std::to_string(readings.gpus.size()) +
                             " GPUs: bus bandwidth " + format_gbps(largest.busbw_gbps) + " at " +
                             format_size(largest.bytes) +
                             (c.op == CollectiveOp::all_gather ? " per GPU" : "") +
                             ", the SKU's figure is " + format_gbps(expected);
    findings.push_back(
        make_finding(nccl_findings(), low ? "NCCL_BUSBW_LOW" : "NCCL_BUSBW_MARGINAL", "node", text)
            .measured(largest.busbw_gbps, "GB/s",
                      expected * (low ? fail_fraction : warn_fraction)));
  }
  return findings;
}

}  // namespace preflight
