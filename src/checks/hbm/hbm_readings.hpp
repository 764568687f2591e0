#pragma once
// What the hbm check measured, apart from what it concluded: per GPU the device-local copy
// bandwidth and the memory pattern test's counts and bad ranges (HbmReadings, in the verdict as
// the check's "readings", docs/checks/hbm.md); the pure judgement of the copy bandwidth
// against the thresholds (judge_hbm); and the pattern test's finding, an observation that no
// threshold judges away (hbm_pattern_observation).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/engine/bandwidth_engine.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// Device-local copies: bytes copied per second, and the memory traffic they make (a copy reads
// and writes every byte: twice the copy rate, what the datasheet's memory bandwidth counts).
struct HbmCopyReading {
  double copy_gbps = 0.0;     // median of the samples
  double traffic_gbps = 0.0;  // JSON: absent means twice copy_gbps
  std::size_t samples = 0;
};

// The memory pattern test: what it covered and the words that read back wrong, merged into
// address ranges (byte offsets in the test buffer, end exclusive).
struct HbmPatternReading {
  std::uint64_t bytes = 0;  // the region tested
  int passes = 0;           // burn-in repeats the patterns while time is left
  std::uint64_t bad_words = 0;
  std::vector<BadRange> bad_ranges;  // at most kMaxBadRanges
  bool ranges_truncated = false;     // more ranges than listed
};

struct HbmGpuReading {
  std::string gpu;                           // "gpu3"
  std::optional<HbmCopyReading> copy;        // nullopt: not measured (the copy failed or hung)
  std::optional<HbmPatternReading> pattern;  // nullopt: not run
};

struct HbmReadings {
  std::vector<HbmGpuReading> gpus;
};

// JSON (nlohmann's to_json/from_json). from_json throws InvalidInput naming the field for
// values it cannot use (a negative GB/s, a GPU not named "gpuN", a range that ends before it
// begins); nlohmann's own errors for a missing field or a wrong type.
void to_json(nlohmann::ordered_json& j, const HbmReadings& r);
void from_json(const nlohmann::ordered_json& j, HbmReadings& r);

// The judgement of the readings: HBM_BANDWIDTH_LOW / _MARGINAL for a GPU whose copy traffic is
// below hbm.fail_fraction / warn_fraction of hbm.peak_gbps (nothing where the SKU gives no peak).
// Pure: the same readings and thresholds give the same findings.
std::vector<Finding> judge_hbm(const HbmReadings& readings, const Thresholds& thresholds);

// HBM_PATTERN_MISMATCH for a GPU whose pattern test found bad words, naming the first ranges;
// nullopt when it found none. An observation: corrupted memory is a fault whatever the
// thresholds say, so `preflight judge` keeps it as recorded.
std::optional<Finding> hbm_pattern_observation(const HbmGpuReading& gpu);

}  // namespace preflight
