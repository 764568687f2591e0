// Host-side arithmetic of the bandwidth checks (bandwidth_math.hpp). Everything here is pure so
// that the checks' judgements can be tested with made-up measurements, without a GPU.
#include "checks/common/bandwidth_math.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <utility>

namespace preflight {
namespace {}  // namespace

double gbps(std::uint64_t bytes, double ms) {
  // !(ms > 0) also turns a NaN time into 0 rather than a NaN rate.
  if (!(ms > 0.0)) return 0.0;
  return static_cast<double>(bytes) / (ms * 1e-3) / 1e9;
}

BandwidthStats bandwidth_stats(std::vector<double> samples) {
  return summarize(std::move(samples));
}

PcieExpectation pcie_expectation(int sku_generation, int sku_width, int max_generation,
                                 int max_width, int current_generation, int current_width,
                                 double fail_fraction, double warn_fraction) {
  PcieExpectation e;
  // The SKU says what the board should train to; a device's own maximum is the fallback for an
  // unknown model (it still catches a Gen5 card at Gen3, or an x16 card at x8).
  e.expected_generation = sku_generation > 0 ? sku_generation : std::max(max_generation, 0);
  e.expected_width = sku_width > 0 ? sku_width : std::max(max_width, 0);
  e.current_generation = std::max(current_generation, 0);
  e.current_width = std::max(current_width, 0);
  e.expected_link_gbps = pcie_link_gbps(e.expected_generation, e.expected_width);
  e.fail_below_gbps = e.expected_link_gbps * fail_fraction;
  e.warn_below_gbps = e.expected_link_gbps * warn_fraction;

  // An unread value (0) is not evidence of a slow link, so only known values are compared.
  const bool slow_generation = e.current_generation > 0 && e.expected_generation > 0 &&
                               e.current_generation < e.expected_generation;
  const bool narrow =
      e.current_width > 0 && e.expected_width > 0 && e.current_width < e.expected_width;
  if (slow_generation || narrow) {
    e.degraded = pcie_link_name(e.expected_generation, e.expected_width) + " running " +
                 pcie_link_name(e.current_generation, e.current_width);
  }
  return e;
}

PcieExpectation pcie_expectation_on_path(int sku_generation, int sku_width, int max_generation,
                                         int max_width, int current_generation, int current_width,
                                         int path_generation, int path_width, double fail_fraction,
                                         double warn_fraction) {
  const PcieExpectation e =
      pcie_expectation(sku_generation, sku_width, max_generation, max_width, current_generation,
                       current_width, fail_fraction, warn_fraction);
  const bool slower = path_generation > 0 && e.expected_generation > path_generation;
  const bool narrower = path_width > 0 && e.expected_width > path_width;
  if (!slower && !narrower) return e;
  PcieExpectation capped = pcie_expectation(
      slower ? path_generation : e.expected_generation, narrower ? path_width : e.expected_width, 0,
      0, current_generation, current_width, fail_fraction, warn_fraction);
  capped.path_limited = true;
  return capped;
}

double pcie_fair_share(double own_link_gbps, double uplink_gbps, int gpus_sharing) {
  const double split = uplink_gbps > 0.0 && gpus_sharing > 0 ? uplink_gbps / gpus_sharing : 0.0;
  if (own_link_gbps <= 0.0) return split;
  if (split <= 0.0) return own_link_gbps;
  return std::min(own_link_gbps, split);
}

double pcie_uplink_capacity(double uplink_gbps, const std::vector<double>& own_links_gbps) {
  if (uplink_gbps <= 0.0) return 0.0;
  double sum = 0.0;
  for (double own : own_links_gbps) {
    // One GPU without a known link: the uplink alone bounds what they move.
    if (own <= 0.0) return uplink_gbps;
    sum += own;
  }
  return own_links_gbps.empty() ? uplink_gbps : std::min(uplink_gbps, sum);
}

std::vector<PairJudgement> classify_matrix(const BandwidthMatrix& matrix,
                                           const std::vector<std::vector<bool>>& peer_access,
                                           double fail_below, double warn_below) {
  const std::size_t n = matrix.size();
  const BandwidthMatrix fail(n, std::vector<std::optional<double>>(n, fail_below));
  const BandwidthMatrix warn(n, std::vector<std::optional<double>>(n, warn_below));
  return classify_matrix(matrix, peer_access, fail, warn);
}

std::vector<PairJudgement> classify_matrix(const BandwidthMatrix& matrix,
                                           const std::vector<std::vector<bool>>& peer_access,
                                           const BandwidthMatrix& fail_limits,
                                           const BandwidthMatrix& warn_limits) {
  const auto limit = [](const BandwidthMatrix& limits, std::size_t i, std::size_t j) {
    return i < limits.size() && j < limits[i].size() ? limits[i][j].value_or(0.0) : 0.0;
  };
  std::vector<PairJudgement> out;
  const std::size_t n = matrix.size();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) continue;
      const double fail_below = limit(fail_limits, i, j);
      const double warn_below = limit(warn_limits, i, j);
      PairJudgement judgement;
      judgement.from = static_cast<int>(i);
      judgement.to = static_cast<int>(j);
      // A pair the caller did not describe has no known access: reported rather than assumed.
      const bool access = i < peer_access.size() && j < peer_access[i].size() && peer_access[i][j];
      const std::optional<double> cell = j < matrix[i].size() ? matrix[i][j] : std::nullopt;
      if (!access) {
        judgement.kind = PairClass::no_peer_access;
        if (cell) judgement.value = *cell;
      } else if (!cell) {
        judgement.kind = PairClass::not_measured;
      } else {
        judgement.value = *cell;
        if (fail_below > 0.0 && *cell < fail_below) {
          judgement.kind = PairClass::fail;
          judgement.limit = fail_below;
        } else if (warn_below > 0.0 && *cell < warn_below) {
          judgement.kind = PairClass::warn;
          judgement.limit = warn_below;
        } else {
          continue;  // ok
        }
      }
      out.push_back(judgement);
    }
  }
  return out;
}

NvlinkPairExpectation nvlink_pair_expectation(double full_gbps, int links_per_gpu,
                                              const GpuReading& a, const GpuReading& b) {
  NvlinkPairExpectation e;
  const bool topology_read = a.nvlink_switch_links.has_value() && b.nvlink_switch_links.has_value();
  if (full_gbps <= 0.0) {
    e.basis = "no NVLink expected for this SKU";
    return e;
  }
  if (!topology_read) {
    e.gbps = full_gbps;
    e.basis = "the SKU's full NVLink set (topology not read)";
    return e;
  }
  if (*a.nvlink_switch_links > 0 && *b.nvlink_switch_links > 0) {
    e.gbps = full_gbps;
    e.basis = "NVSwitch";
    return e;
  }
  const auto direct = [](const GpuReading& from, const GpuReading& to) {
    return static_cast<int>(std::count(from.nvlink_peer_bus_ids.begin(),
                                       from.nvlink_peer_bus_ids.end(), to.pci_bus_id));
  };
  // Both ends report the links between them; the smaller count is what carries data.
  const int links = std::min(direct(a, b), direct(b, a));
  e.direct_links = links;
  if (links == 0 || links_per_gpu <= 0) {
    e.basis = "no NVLink between them";
    return e;
  }
  e.gbps = full_gbps * std::min(1.0, static_cast<double>(links) / links_per_gpu);
  e.basis = std::to_string(links) + " direct link" + (links == 1 ? "" : "s");
  return e;
}

std::string describe_range(const BadRange& range) {
  // An empty range (end <= begin) names its start word alone instead of wrapping below zero.
  const std::uint64_t last = range.end > range.begin ? range.end - 1 : range.begin;
  char text[64];
  std::snprintf(text, sizeof text, "0x%" PRIx64 "-0x%" PRIx64, range.begin, last);
  return text;
}

std::uint64_t pattern_test_bytes(std::uint64_t free_bytes, double fraction, std::uint64_t cap,
                                 std::uint64_t align) {
  // !(fraction > 0) also catches NaN; more than all free memory cannot be allocated anyway.
  if (!(fraction > 0.0)) return 0;
  fraction = std::min(fraction, 1.0);
  const double share = std::floor(static_cast<double>(free_bytes) * fraction);
  // The double of a value near 2^64 can round above free_bytes; never ask for more than free.
  std::uint64_t bytes =
      share >= static_cast<double>(free_bytes) ? free_bytes : static_cast<std::uint64_t>(share);
  if (align > 0) bytes -= bytes % align;
  if (cap > 0) bytes = std::min(bytes, cap);
  return bytes;
}

std::string to_string(MemoryPattern pattern) {
  switch (pattern) {
    case MemoryPattern::zeros:
      return "zeros";
    case MemoryPattern::ones:
      return "ones";
    case MemoryPattern::checkerboard:
      return "checkerboard";
    case MemoryPattern::address:
      return "address";
    case MemoryPattern::inverse_address:
      return "inverse-address";
    case MemoryPattern::random:
      return "random";
  }
  return "unknown";
}

}  // namespace preflight
