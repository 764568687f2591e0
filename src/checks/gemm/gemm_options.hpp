#pragma once
// The gemm check's options (--gemm-dtypes, --gemm-seconds, --gemm-size, --gemm-memory-mib,
// --gemm-detectors), their defaults per profile, the time budget that follows, and the matrix
// size chosen for a GPU. Unit-tested (tests/checks/gemm/test_gemm_options.cpp).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "preflight/check.hpp"
#include "preflight/engine/gemm_engine.hpp"

namespace preflight {

enum class GemmDetector { nan_inf, checksum, repeatability, consensus };
inline constexpr GemmDetector kAllGemmDetectors[] = {GemmDetector::nan_inf, GemmDetector::checksum,
                                                     GemmDetector::repeatability,
                                                     GemmDetector::consensus};
std::string_view to_string(GemmDetector detector);  // "nan", "checksum", "repeat", "consensus"

struct GemmSettings {
  std::vector<GemmDtype> dtypes = {GemmDtype::bf16};  // in the order given, no duplicates
  double product_seconds = 3.0;                       // of products per GPU and dtype
  bool product_seconds_given = false;  // --gemm-seconds: the time model keeps it as given
  std::optional<int> size;             // --gemm-size: m = n = k; nullopt: chosen per GPU
  std::size_t memory_limit_bytes = std::size_t{6144} << 20;  // per GPU
  std::vector<GemmDetector> detectors = {std::begin(kAllGemmDetectors),
                                         std::end(kAllGemmDetectors)};
  int repeats_per_round = 8;
  std::uint64_t seed = 0x5EEDF00D;

  bool enabled(GemmDetector d) const;
};

// Seconds of products per GPU and dtype by profile: quick 3, standard 60, burnin 600. The time
// model (gemm_plan.hpp) may give a run less, when the run's time does not allow them.
double default_product_seconds(Profile profile);

std::vector<CheckOptionSpec> gemm_option_specs();

// The settings for this profile and these options. Throws InvalidInput with one line naming
// the flag for a bad value: unknown or repeated dtype or detector, an empty list, seconds
// outside [1, 604800], a size not a multiple of 256 or outside [1024, 65536], a memory limit
// outside [256, 1048576] MiB, or a --gemm-size whose footprint for some dtype exceeds the
// memory limit.
GemmSettings parse_gemm_settings(Profile profile, const CheckOptions& options);

// The check's budget (CheckInfo::budget, Check::budget): which profiles the check belongs to.
// Not its deadline: the planner divides a run's time by the time model (gemm_plan.hpp). The
// products (seconds times dtypes) plus 20 s plus 5 s per dtype, rounded up to whole seconds.
std::chrono::seconds gemm_budget(const GemmSettings& settings);

// m = n = k for a GPU: the forced size, else the largest of 16384, 12288, 8192, 6144, 4096
// whose footprint fits both the memory limit and half the GPU's memory (memory_total_bytes;
// 0 = unknown: the limit alone). nullopt when not even 4096 fits.
std::optional<int> choose_gemm_size(GemmDtype dtype, const GemmSettings& settings,
                                    std::uint64_t memory_total_bytes);

}  // namespace preflight
