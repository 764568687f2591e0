#include "checks/nccl/nccl_math.hpp"

#include <algorithm>
#include <cstdio>

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

namespace {

// "gpu3" -> 3; -1 for a name that is not a GPU's (readings written by hand).
int gpu_number(const std::string& name) {
  const bool digits = name.size() > 3 && name.size() < 8 && name.compare(0, 3, "gpu") == 0 &&
                      name.find_first_not_of("0123456789", 3) == std::string::npos;
  return digits ? std::stoi(name.substr(3)) : -1;
}

// The path between two ranks' GPUs, named as pair_entity names it: lower index first.
std::string path_entity(const std::string& a, const std::string& b) {
  const int x = gpu_number(a);
  const int y = gpu_number(b);
  if (x >= 0 && y >= 0) return pair_entity(x, y);
  return a < b ? a + "-" + b : b + "-" + a;
}

std::string elements(std::uint64_t n) {
  return std::to_string(n) + " elements";
}

// NCCL_DATA_MISMATCH on whom the matrix blames; false when there is no matrix of the ranks'
// shape with anything in it to blame from.
bool blame_findings(CollectiveOp op, const std::vector<std::vector<std::uint64_t>>& m,
                    const std::vector<std::string>& gpus, std::vector<Finding>& findings) {
  const std::size_t n = gpus.size();
  std::uint64_t total = 0;
  if (m.size() != n) return false;
  for (const auto& row : m) {
    if (row.size() != n) return false;
    for (std::uint64_t v : row) total += v;
  }
  if (total == 0) return false;
  const auto mismatch = [&](const std::string& entity, const std::string& text, std::uint64_t v) {
    findings.push_back(
        make_finding(nccl_findings(), "NCCL_DATA_MISMATCH", entity, nccl_op_name(op) + ": " + text)
            .measured(static_cast<double>(v), "elements"));
  };
  if (op == CollectiveOp::all_reduce) {
    // A sum cannot say whose contribution was wrong: the receivers with wrong sums are named,
    // or the node when every one had them (the all-gather names the source).
    std::vector<std::size_t> wrong;
    std::uint64_t sums = 0;
    for (std::size_t l = 0; l < n; ++l) {
      if (m[l][l] > 0) wrong.push_back(l);
      sums += m[l][l];
    }
    if (wrong.size() == n && n > 1) {
      mismatch("node",
               elements(sums) +
                   " of the sums were wrong on every GPU (a sum cannot name the source; see the "
                   "all-gather)",
               sums);
      return true;
    }
    for (std::size_t l : wrong) {
      mismatch(gpus[l], elements(m[l][l]) + " of the sums arrived wrong here", m[l][l]);
    }
    return true;
  }
  const CorruptionBlame blame = blame_corruption(m);
  if (blame.everywhere) {
    mismatch("node", "every GPU's data arrived corrupt at every GPU (" + elements(total) + ")",
             total);
    return true;
  }
  for (int s : blame.senders) {
    std::uint64_t column = 0;
    for (const auto& row : m) column += row[static_cast<std::size_t>(s)];
    mismatch(gpus[s],
             "its contribution arrived corrupt at every GPU (" + elements(column) +
                 "): the sender is at fault",
             column);
  }
  for (int l : blame.receivers) {
    std::uint64_t row = 0;
    for (std::uint64_t v : m[static_cast<std::size_t>(l)]) row += v;
    mismatch(gpus[l],
             "the data of every other GPU arrived corrupt here (" + elements(row) +
                 "): the receiver is at fault",
             row);
  }
  for (int l : blame.own) {
    mismatch(gpus[l],
             "its own contribution arrived corrupt in its own receive buffer (" +
                 elements(m[l][l]) + ")",
             m[l][l]);
  }
  for (const auto& [s, l] : blame.links) {
    mismatch(path_entity(gpus[s], gpus[l]),
             "data from " + gpus[s] + " arrived corrupt at " + gpus[l] + " (" + elements(m[l][s]) +
                 "), the other GPUs got it right: the path between them",
             m[l][s]);
  }
  return true;
}

}  // namespace

std::vector<Finding> nccl_observations(const NcclCollectiveReading& c,
                                       const std::vector<std::string>& gpus,
                                       std::optional<double> seconds) {
  std::vector<Finding> findings;
  const std::string what = nccl_op_name(c.op) + " over " + std::to_string(gpus.size()) + " GPUs";
  if (c.timed_out) {
    std::string within = "in the time it was given";
    if (seconds) {
      char text[48];
      std::snprintf(text, sizeof text, "within %.0f s", *seconds);
      within = text;
    }
    findings.push_back(
        make_finding(nccl_findings(), "NCCL_TIMEOUT", "node",
                     what + (c.initialized ? ": the collectives" : ": creating the communicators") +
                         " did not complete " + within + "; the communicators were aborted"));
  } else if (!c.error.empty()) {
    findings.push_back(make_finding(nccl_findings(),
                                    c.initialized ? "NCCL_ERROR" : "NCCL_INIT_FAILED", "node",
                                    what + ": " + c.error));
  }
  if (!blame_findings(c.op, c.corrupt_from, gpus, findings) && c.corrupt_elements.value_or(0) > 0) {
    // Only the total was recorded: the node, as the readings cannot say more.
    const std::uint64_t total = *c.corrupt_elements;
    findings.push_back(make_finding(nccl_findings(), "NCCL_DATA_MISMATCH", "node",
                                    nccl_op_name(c.op) + ": " + elements(total) +
                                        " arrived wrong (the readings do not say where)")
                           .measured(static_cast<double>(total), "elements"));
  }
  return findings;
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
