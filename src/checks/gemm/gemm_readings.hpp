#pragma once
// What the gemm check measured, as it records it in the verdict (CheckResult::readings) and as
// `preflight judge` and the corpus (tests/data/nodes/) hand it back: per GPU and dtype, the shape,
// the products verified, the TFLOP/s spread and the NVML telemetry summary the messages quote.
// The speed judgement (judge_gemm_speed, gemm_judge.hpp) is a pure function of these and the
// thresholds; the corruption detectors are observations made in run() and are not in here.
// docs/checks/gemm.md, "Readings", describes the JSON.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/engine/gemm_engine.hpp"

namespace preflight {

// The NVML samples taken while one dtype ran on one GPU, condensed to what explains a slow GPU.
struct TelemetrySummary {
  std::size_t samples = 0;
  std::optional<double> sm_clock_mhz_median;
  std::optional<int> temperature_c_max;
  std::optional<double> power_w_median;
  // Share of samples (0..1) in which each slowdown reason was active, for the reasons that
  // explain a slow GPU: SW power cap, HW slowdown, SW thermal, HW thermal, HW power brake.
  std::vector<std::pair<std::string, double>> reasons;  // ("SW power cap", 0.85), largest first
};

// How one GPU's job for one dtype ended. Anything but completed is an observation run() has
// already reported (GEMM_GPU_NOT_TESTED, GEMM_TIMEOUT, GEMM_CUDA_ERROR; `preflight judge` makes
// it again where a verdict lacks it: gemm_observations); the products verified before an error
// or a timeout are still judged for speed.
enum class GemmRunStatus { completed, not_tested, timeout, error };
std::string_view to_string(GemmRunStatus status);  // "completed", "not_tested", ...

struct GemmTflops {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
};

struct GemmGpuReading {
  int gpu_index = 0;  // "gpu": "gpu3" in JSON
  std::string model;  // GPU name from discovery: only GPUs of one model are held to each other
  GemmDtype dtype = GemmDtype::bf16;
  GemmRunStatus status = GemmRunStatus::completed;
  int m = 0;  // the product's shape; 0 where no job ran
  int n = 0;
  int k = 0;
  std::size_t products = 0;          // products verified
  std::optional<GemmTflops> tflops;  // over those products; set when products > 0
  TelemetrySummary telemetry;        // samples == 0: none taken
  // Every product was touched by --inject-fault (gemm-slow): its speed findings are the
  // drill's, marked injected.
  bool injected = false;
};

struct GemmReadings {
  std::vector<GemmGpuReading> gpus;  // in the order run() measured them: dtype by dtype
};

// Stable key order; fields not read (no job, no telemetry) are left out.
void to_json(nlohmann::ordered_json& j, const GemmReadings& readings);
// Throws InvalidInput naming the field ("gpus[2].tflops.median: ...") for a field missing, of
// the wrong type or out of range, and for a GPU and dtype given twice.
void from_json(const nlohmann::ordered_json& j, GemmReadings& readings);

}  // namespace preflight
