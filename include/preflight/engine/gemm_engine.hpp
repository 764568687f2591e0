#pragma once
// The boundary between the gemm check (host-only: planning, judging) and the code that runs
// cuBLAS products on a GPU (src/gpu/cublas_gemm_engine.cpp). Plain structs only, so the check and
// its tests build without the toolkit and tests can hand the check runs of their own.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

// Input types of the product. All accumulate in fp32 (fp64 for fp64) and write an fp32 (fp64)
// output, so that products of the small-integer inputs are exact (docs/checks/gemm.md).
enum class GemmDtype { bf16, fp16, tf32, fp32, fp64 };

inline constexpr GemmDtype kAllGemmDtypes[] = {GemmDtype::bf16, GemmDtype::fp16, GemmDtype::tf32,
                                               GemmDtype::fp32, GemmDtype::fp64};

inline std::string_view to_string(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16:
      return "bf16";
    case GemmDtype::fp16:
      return "fp16";
    case GemmDtype::tf32:
      return "tf32";
    case GemmDtype::fp32:
      return "fp32";
    case GemmDtype::fp64:
      return "fp64";
  }
  return "bf16";
}

inline std::optional<GemmDtype> parse_gemm_dtype(std::string_view text) {
  for (GemmDtype d : kAllGemmDtypes) {
    if (to_string(d) == text) return d;
  }
  return std::nullopt;
}

// One GPU's share of the check: products of one dtype for a stretch of time.
struct GemmJob {
  int gpu_index = 0;     // NVML index: the entity is "gpu<index>"
  int cuda_ordinal = 0;  // device to run on
  GemmDtype dtype = GemmDtype::bf16;
  // Column-major C (m x n) = A (m x k) * B (k x n).
  int m = 16384;
  int n = 16384;
  int k = 16384;
  int input_range = 1;  // inputs are integers in [-input_range, input_range]
  // Checksum tolerance factors (gemm_numerics.hpp, gemm_checksum_tolerance): both 0 when the
  // product is exact, as the check's defaults make it.
  double output_roundoff = 0.0;
  double accumulation_gamma = 0.0;
  std::uint64_t seed = 1;
  int repeats_per_round = 8;                       // products per input set; round r uses seed + r
  double product_seconds = 5.0;                    // no new product is started after this much time
  std::chrono::steady_clock::time_point deadline;  // hard limit: give up, report timed_out
  std::size_t workspace_bytes = std::size_t{32} << 20;  // cuBLAS workspace
  // Set by the check when it must stop early (its deadline passed, or a signal).
  std::shared_ptr<const std::atomic<bool>> cancel;

  // Injected faults (--inject-fault), applied to product (round 0, repeat 1) only, between the
  // product and its verification, so that one transient corruption is visible to every
  // detector.
  bool inject_bitflip = false;
  int bitflip_bit = -1;  // -1: the default bit for the dtype (gemm_numerics.hpp)
  bool inject_nan = false;
  double slow_factor = 1.0;  // < 1: the GPU is held idle so it delivers this share of its speed
};

// What verification found in one product (round, repeat).
struct GemmProductRecord {
  int round = 0;
  int repeat = 0;
  double product_ms = 0.0;        // the cuBLAS call, timed with events on the GPU
  double verify_ms = 0.0;         // the verification kernel, timed likewise
  std::uint64_t digest = 0;       // order-independent hash of every output element's bits
  std::uint64_t nonfinite = 0;    // NaN or Inf outputs
  std::uint64_t bad_columns = 0;  // columns whose sum disagrees with the reference
  std::int64_t first_bad_column = -1;
  double first_bad_expected = 0.0;  // reference column sum of first_bad_column
  double first_bad_actual = 0.0;    // column sum of the output there
  bool injected = false;            // an injected fault touched this product
};

// One GPU's run of one job.
struct GemmGpuRun {
  int gpu_index = 0;
  GemmDtype dtype = GemmDtype::bf16;
  int m = 0;
  int n = 0;
  int k = 0;
  std::string device_name;
  int sm_count = 0;  // part of the consensus key: cuBLAS results are reproducible per SM count
  int compute_capability = 0;               // 90 for 9.0
  std::vector<GemmProductRecord> products;  // in issue order, warm-up excluded
  double wall_s = 0.0;                      // first timed product issued -> last product verified
  std::size_t device_bytes = 0;             // device memory the job allocated
  // A CUDA or cuBLAS error ended the job: "cudaErrorIllegalAddress: an illegal memory access
  // was encountered". Products verified before it are kept.
  std::string error;
  std::string error_stage;  // "setup", "generate", "product", "verify", "readback"
  bool timed_out = false;   // queued work did not complete before the deadline
};

// NVML readings taken while the products run.
struct GpuTelemetry {
  double t_s = 0.0;  // since the check started
  std::optional<int> sm_clock_mhz;
  std::optional<int> temperature_c;
  std::optional<double> power_w;
  std::optional<std::uint64_t> clock_event_reasons;  // clock_event bits (node_backend.hpp)
};

class GemmEngine {
 public:
  virtual ~GemmEngine() = default;
  // Empty when the library the engine needs (cuBLAS) was found; otherwise which library, which
  // soname and where it was looked for: an installation problem of the tool, not of the node
  // (TOOL_LIBRARY_MISSING). Loads the library on first call.
  virtual std::string library_problem() { return {}; }
  // Runs the job on one GPU and returns what it measured and verified. CUDA and cuBLAS errors
  // are reported in the result, never thrown. Completion is polled against job.deadline, so
  // a hung GPU returns timed_out (its memory is then leaked, not freed: freeing would wait for
  // the hung work). May still block inside the driver (context creation); the caller runs it
  // on a thread it can abandon.
  virtual GemmGpuRun run(const GemmJob& job) = 0;
  // The same cuBLAS call in a plain loop, no verification (the benchmark's reference):
  // product-only time per product in milliseconds, or an error text.
  struct PlainLoop {
    std::vector<double> product_ms;
    double wall_s = 0.0;
    std::string error;
  };
  virtual PlainLoop run_plain_loop(const GemmJob& job) = 0;
};

}  // namespace preflight
