#pragma once
// Turns the per-GPU runs of the gemm check into findings, metrics and a summary: the four
// corruption detectors (NaN/Inf, checksum, repeatability, cross-GPU consensus), speed against
// the SKU's thresholds and against the node's median, and the NVML telemetry that explains a
// slow GPU. Pure: unit-tested with runs made by hand (tests/unit/test_gemm_judge.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checks/common/judgement.hpp"
#include "checks/gemm/gemm_options.hpp"
#include "preflight/engine/gemm_engine.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// --- Consensus ------------------------------------------------------------------------------
// GPUs that computed the same product, each with the digest of its output.
struct ConsensusVote {
  int gpu_index = 0;
  std::uint64_t digest = 0;
};
struct ConsensusOutcome {
  enum class Kind { single, unanimous, majority, tie };
  Kind kind = Kind::single;
  std::uint64_t majority_digest = 0;  // unanimous or majority
  std::vector<int> majority;          // GPU indices agreeing with it (sorted)
  // majority: the GPUs that disagree (sorted); tie: those outside every tied group (2-2-1: the
  // lone GPU), which disagree with all the others.
  std::vector<int> minority;
  // tie: the largest groups, equal in size, each sorted, ordered by their first GPU.
  std::vector<std::vector<int>> tied;
};
// A strict plurality wins: the largest group of equal digests, if no other group is as large.
// With one vote: single. Every other GPU outside the winning group is in the minority.
ConsensusOutcome vote(const std::vector<ConsensusVote>& votes);

// --- Speed ----------------------------------------------------------------------------------
// How many percent `value` lies below `reference` (0 when at or above it, or reference <= 0).
double percent_below(double value, double reference);

enum class StragglerClass { none, warn, fail };
StragglerClass classify_straggler(double percent_slower, double warn_pct, double fail_pct);

// --- Telemetry ------------------------------------------------------------------------------
struct TelemetrySummary {
  std::size_t samples = 0;
  std::optional<double> sm_clock_mhz_median;
  std::optional<int> temperature_c_max;
  std::optional<double> power_w_median;
  // Share of samples (0..1) in which each slowdown reason was active, for the reasons that
  // explain a slow GPU: SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake.
  std::vector<std::pair<std::string, double>> reasons;  // ("SW power cap", 0.85), largest first
};
TelemetrySummary summarize_telemetry(const std::vector<GpuTelemetry>& samples);
// "SM clock 1410 MHz (median), 83 C max, 690 W (median); SW power cap in 85% of samples"; or
// "no NVML telemetry" when there were no samples.
std::string describe_telemetry(const TelemetrySummary& summary);

// --- Judgement ------------------------------------------------------------------------------
// What the check gathered for one GPU and one dtype.
struct GemmGpuOutcome {
  int gpu_index = 0;
  std::string model;  // GPU name from discovery: consensus compares GPUs of one model
  GemmDtype dtype = GemmDtype::bf16;
  std::optional<GemmGpuRun> run;        // nullopt: did not return before the check's deadline
  std::string not_tested;               // non-empty: never started on this GPU, and why
  std::vector<GpuTelemetry> telemetry;  // samples taken while this dtype ran on this GPU
};

// Its summary: one line per dtype, joined by "; ": "bf16 16384^3 on 4 GPUs: 712.3 TFLOP/s
// median (min 650.1 gpu3), 1824 products verified".
using GemmJudgement = CheckJudgement;

// The cross-GPU consensus detector alone (judge_gemm calls it when the detector is enabled):
// outcomes with products are grouped by (model, dtype, m, n, k, sm_count); in each group of two
// or more GPUs, every product (round, repeat) that all members computed is voted on.
// GEMM_CONSENSUS_MINORITY and GEMM_CONSENSUS_TIE findings, each with its GPU and dtype.
struct ConsensusFinding {
  int gpu_index = 0;
  GemmDtype dtype = GemmDtype::bf16;
  Finding finding;
};
using ConsensusFindings = std::vector<ConsensusFinding>;
ConsensusFindings judge_gemm_consensus(const std::vector<GemmGpuOutcome>& outcomes);

// The whole judgement: each GPU's run status, the enabled detectors (settings.detectors) on
// every product it verified (also those before an error or a timeout), speed against the SKU's
// peak and the node's median, per-GPU metrics and the summary. At most one finding per (GPU,
// dtype, code), each message starting with the dtype; findings are ordered by GPU, then dtype.
GemmJudgement judge_gemm(const std::vector<GemmGpuOutcome>& outcomes, const Thresholds& thresholds,
                         const GemmSettings& settings);

}  // namespace preflight
