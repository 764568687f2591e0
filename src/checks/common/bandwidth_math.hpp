#pragma once
// Host-side arithmetic of the bandwidth checks (pcie, nvlink, hbm): GB/s from bytes and time,
// sample statistics, the bandwidth a PCIe link can carry from its generation and width, the
// classification of the NVLink matrix, and the merging of the pattern test's bad words into
// address ranges. Pure functions, unit-tested (tests/checks/common/test_bandwidth_math.cpp).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "checks/common/pci_link.hpp"
#include "model/memory_ranges.hpp"
#include "model/stats.hpp"
#include "preflight/engine/bandwidth_engine.hpp"
#include "preflight/engine/node_backend.hpp"

namespace preflight {

// Decimal GB/s (1e9 bytes/s) of `bytes` moved in `ms` milliseconds; 0 when ms <= 0.
double gbps(std::uint64_t bytes, double ms);

using BandwidthStats = SampleStats;
BandwidthStats bandwidth_stats(std::vector<double> samples);

// --- PCIe -----------------------------------------------------------------------------------
// The link rates and names: checks/common/pci_link.hpp.

// What a GPU's PCIe bandwidth is held to. The link the GPU should have comes from the SKU table
// (inventory.expected_pcie_gen / _width; 0: unknown), else from what the device reports as its
// maximum (max_generation / max_width; 0: not read); the link it has is the current one read
// at load.
struct PcieExpectation {
  int expected_generation = 0;
  int expected_width = 0;
  int current_generation = 0;  // 0: not read
  int current_width = 0;
  double expected_link_gbps = 0.0;  // one direction, of the expected link
  double fail_below_gbps = 0.0;     // expected_link_gbps * fail fraction
  double warn_below_gbps = 0.0;     // expected_link_gbps * warn fraction
  // "Gen5 x16 running Gen4 x16" when the current generation or width is known (> 0) and below
  // the expected one, else "". An unread current value is never called degraded.
  std::string degraded;
  // The expectation was lowered to what the PCIe path above the GPU can carry (below).
  bool path_limited = false;
};
PcieExpectation pcie_expectation(int sku_generation, int sku_width, int max_generation,
                                 int max_width, int current_generation, int current_width,
                                 double fail_fraction, double warn_fraction);
// The same, at most what the path from the GPU up to its root port can carry by design: the
// lowest link capability (LnkCap: sysfs max_link_speed / max_link_width) of the GPU, its
// bridges and its root port (0: not read). An H100 behind a Gen4 switch is held to Gen4, and
// its Gen4 link is then not called degraded; a GPU that trained below what its slot can do
// still is.
PcieExpectation pcie_expectation_on_path(int sku_generation, int sku_width, int max_generation,
                                         int max_width, int current_generation, int current_width,
                                         int path_generation, int path_width, double fail_fraction,
                                         double warn_fraction);

// With every GPU copying at once, what one GPU should get through the uplink it shares with
// `gpus_sharing` GPUs (itself included): the uplink's one-direction rate split evenly, but never
// more than its own link. An unknown figure (<= 0) leaves the other: 0 when both are unknown.
double pcie_fair_share(double own_link_gbps, double uplink_gbps, int gpus_sharing);
// What an uplink's GPUs can move together: its rate, at most the sum of their own links (which
// count only when every one is known, > 0). 0 when the uplink's rate is unknown.
double pcie_uplink_capacity(double uplink_gbps, const std::vector<double>& own_links_gbps);

// --- NVLink matrix --------------------------------------------------------------------------
// The N x N matrix of a peer measurement: cell [i][j] is the GPU-i -> GPU-j figure in GB/s;
// nullopt on the diagonal and where not measured.
using BandwidthMatrix = std::vector<std::vector<std::optional<double>>>;

enum class PairClass { ok, warn, fail, no_peer_access, not_measured };
struct PairJudgement {
  int from = 0;  // matrix row (GPU position, not NVML index)
  int to = 0;
  PairClass kind = PairClass::ok;
  double value = 0.0;  // GB/s, when measured
  double limit = 0.0;  // the threshold it crossed (fail or warn)
};
// Classifies every ordered pair i != j. `peer_access[i][j]`: whether GPU i can access GPU j.
// A pair without peer access is no_peer_access (a fault only where the SKU has NVLink: the
// caller decides; `value` is kept if the pair was measured anyway); a measured pair below
// fail_below is fail, below warn_below warn; an unmeasured pair with access is not_measured.
// N is matrix.size(); a cell missing from a short row is not measured, and a pair missing from
// `peer_access` counts as no access. Only pairs that are not ok are returned, in row-major
// order. fail_below or warn_below of 0 (or less) disables that level.
std::vector<PairJudgement> classify_matrix(const BandwidthMatrix& matrix,
                                           const std::vector<std::vector<bool>>& peer_access,
                                           double fail_below, double warn_below);

// The same with a limit per ordered pair (nullopt or <= 0: that level is off for the pair).
std::vector<PairJudgement> classify_matrix(const BandwidthMatrix& matrix,
                                           const std::vector<std::vector<bool>>& peer_access,
                                           const BandwidthMatrix& fail_limits,
                                           const BandwidthMatrix& warn_limits);

// One direction of the NVLink bandwidth two GPUs should have. `full_gbps` is the SKU's
// nvlink.expected_gbps (all of a GPU's links), `links_per_gpu` its
// inventory.expected_nvlink_links.
// - No expectation for the SKU (full_gbps <= 0): 0.
// - Topology not read (no NVML): full_gbps.
// - Both GPUs reach NVSwitches: full_gbps (every pair gets all links through the switches).
// - Otherwise the links joining them directly (the lower of the two ends' counts):
//   full_gbps x links / links_per_gpu, e.g. 150 GB/s for the 6 links a 4-GPU HGX H100 board
//   gives each pair; 0 when none ("no NVLink between them": peer copies then go over PCIe and
//   are not judged).
struct NvlinkPairExpectation {
  double gbps = 0.0;
  int direct_links = 0;
  std::string basis;  // for messages: "NVSwitch", "6 direct links", ...
};
NvlinkPairExpectation nvlink_pair_expectation(double full_gbps, int links_per_gpu,
                                              const GpuReading& a, const GpuReading& b);

// --- HBM pattern test ----------------------------------------------------------------------
// ChunkMismatch and merge_bad_chunks: src/model/memory_ranges.hpp (the engine merges
// with them too).

// "0x1f4000000-0x1f4000fff" style text of a range, byte offsets in hex, end inclusive (end - 1);
// an empty range (end <= begin) prints its begin twice.
std::string describe_range(const BadRange& range);

// Bytes for the pattern test: floor(free_bytes * fraction) (fraction clamped to 0..1, NaN: 0),
// rounded down to `align` (0: not rounded), then at most `cap` (0: no cap; taken as given, so
// pass an aligned cap).
std::uint64_t pattern_test_bytes(std::uint64_t free_bytes, double fraction, std::uint64_t cap,
                                 std::uint64_t align = std::uint64_t{2} << 20);

// The names in docs and findings: "zeros", "ones", "checkerboard", "address",
// "inverse-address", "random".
std::string to_string(MemoryPattern pattern);

}  // namespace preflight
