#pragma once
// Turns the per-GPU runs of the gemm check into findings, metrics and a summary: the four
// corruption detectors (NaN/Inf, checksum, repeatability, cross-GPU consensus), speed against
// the SKU's thresholds and against the node's median, and the NVML telemetry that explains a
// slow GPU. Pure: unit-tested with runs made by hand (tests/checks/gemm/test_gemm_judge.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checks/common/judgement.hpp"
#include "checks/gemm/gemm_options.hpp"
#include "checks/gemm/gemm_readings.hpp"
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

// What run() records: the findings (observations first, then the judged speed findings, marked
// judged), the per-GPU metrics, the summary (one line per dtype, joined by "; ": "bf16 16384^3
// on 4 GPUs: 712.3 TFLOP/s median (min 650.1 gpu3), 1824 products verified"), and the readings
// the speed findings were judged from.
struct GemmJudgement : CheckJudgement {
  GemmReadings readings;
};

// The readings of these outcomes: one entry per outcome, in their order; TFLOP/s over the
// products each GPU verified, its telemetry summarized.
GemmReadings gemm_readings_of(const std::vector<GemmGpuOutcome>& outcomes);

// The judged part: speed, from readings alone (Check::judge calls it on recorded readings).
// - Against the SKU: where the thresholds give the dtype a sustained figure
//   (gemm.<dtype>_sustained_tflops > 0: a power- or clock-limited SKU), the median against
//   gemm.fail/warn_fraction_of_sustained of it; otherwise against gemm.fail/warn_fraction_of_peak
//   of the datasheet peak (none for an unknown SKU). GEMM_TFLOPS_LOW / GEMM_TFLOPS_MARGINAL.
// - Against the node: each GPU against the median of the GPUs of its model, dtype and shape
//   (two or more), by gemm.straggler_warn_pct / straggler_fail_pct; the message says how many
//   GPUs that median rests on. GEMM_STRAGGLER / GEMM_STRAGGLER_SEVERE.
// Only readings with products count. Ordered by GPU, then dtype; a reading marked injected gives
// findings marked injected.
std::vector<Finding> judge_gemm_speed(const GemmReadings& readings, const Thresholds& thresholds);

// What the readings prove whatever the thresholds (Check::observe): each GPU and dtype that did
// not complete, as judge_gemm reports it: GEMM_GPU_NOT_TESTED, GEMM_TIMEOUT, GEMM_CUDA_ERROR
// (the readings keep the status and the products verified, not the error's text or why a GPU
// was not tested). The corruption detectors' findings are not here: the readings do not record
// the products they worked on.
std::vector<Finding> gemm_observations(const GemmReadings& readings);

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

// The whole judgement of a run: each GPU's run status and the enabled detectors
// (settings.detectors) on every product it verified (also those before an error or a timeout),
// ordered by GPU, then dtype; then judge_gemm_speed on gemm_readings_of(outcomes), marked
// judged; per-GPU metrics and the summary. At most one finding per (GPU, dtype, code), each
// message starting with the dtype.
GemmJudgement judge_gemm(const std::vector<GemmGpuOutcome>& outcomes, const Thresholds& thresholds,
                         const GemmSettings& settings);

}  // namespace preflight
