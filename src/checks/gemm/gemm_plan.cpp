// The gemm check's time model: cuBLAS loaded once, every GPU set up at once, then per dtype the
// inputs, two warm-up products, the product seconds and the drain of the products in flight.
// Verification (checksum kernel after each product) runs between the products, inside the product
// seconds; repeatability and consensus compare digests on the host, microseconds.
#include "checks/gemm/gemm_plan.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/text_format.hpp"
#include "preflight/thresholds.hpp"

namespace preflight {
namespace {

// --- The model's constants. Where no published figure exists they are assumed, to be measured
// by the acceptance kit (docs/plan.md).
// dlopen of libcublas and libcublasLt: about 0.1 s from a local disk (gemm_check.cpp's own
// estimate), doubled for a cold page cache.
constexpr double kCublasLoad_s = 0.2;
// A GPU's first job: the CUDA primary context (made already when inventory's probe ran) and the
// cuBLAS handle, which loads cuBLASLt's kernels. Assumed.
constexpr double kGpuSetup_s = 1.0;
// The GPUs are set up at once, each on a thread; the driver serializes part of it. Assumed.
constexpr double kGpuSetupPerExtraGpu_s = 0.1;
// Per dtype: allocation (up to --gemm-memory-mib), input generation on the device and the
// round's checksum reference. Assumed.
constexpr double kDtypeSetup_s = 1.0;
// Per dtype after the product seconds: the telemetry thread stopping (it wakes at once), the
// workers joined, the judgement. Assumed.
constexpr double kDrain_s = 0.5;
// The engine's queue holds about this much work in flight (cublas_gemm_engine.cpp, kQueuedMs),
// at least two products: it drains after the product seconds.
constexpr double kQueued_s = 0.040;
constexpr int kQueuedProducts = 2;
constexpr int kWarmupProducts = 2;  // cublas_gemm_engine.cpp, kWarmups
// The verification kernel reads C once after each product: about 3% of a product's time at
// k = 16384 on an H100 (docs/checks/gemm.md, "Why 16384"), rounded up.
constexpr double kVerifyShare = 0.05;
// cuBLAS reaches about this share of the datasheet peak on large square products (H100 SXM bf16:
// about 600-700 of 989 TFLOP/s); the lower end, so that the model does not promise a round
// sooner than a GPU delivers it.
constexpr double kPeakEfficiency = 0.6;
// The least product seconds that still give a verdict: several rounds of 8 products at the
// default sizes on any supported GPU, enough for the speed's median.
constexpr double kMinProductSeconds = 1.0;
// Reduced product seconds are cut to this step, so the coverage line reads plainly.
constexpr double kProductStep_s = 0.1;

// A GPU of unknown SKU: the A100's datasheet figures (dense), the slowest GPU of the SKU table,
// so the model's rounds are long rather than short.
double fallback_peak_tflops(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16:
    case GemmDtype::fp16:
      return 312.0;
    case GemmDtype::tf32:
      return 156.0;
    case GemmDtype::fp32:
    case GemmDtype::fp64:
      return 19.5;
  }
  return 19.5;
}

double peak_tflops(GemmDtype dtype, const Thresholds* thresholds) {
  double peak = 0.0;
  if (thresholds != nullptr) {
    peak = thresholds->get("gemm." + std::string(to_string(dtype)) + "_peak_tflops");
  }
  return peak > 0.0 ? peak : fallback_peak_tflops(dtype);
}

// Seconds of the whole work with `product_seconds` per dtype.
double total_s(const GemmWork& work, double product_seconds) {
  double total = work.library_s;
  for (const GemmDtypeWork& d : work.dtypes) {
    total += d.overhead_s + std::max(product_seconds, d.round_s);
  }
  return total;
}

std::string coverage_of(const GemmWork& work, double full_product_seconds, int gpus) {
  std::string dtypes;
  for (GemmDtype d : work.settings.dtypes) {
    dtypes += (dtypes.empty() ? "" : ", ") + std::string(to_string(d));
  }
  std::string text = dtypes + ": " + formatted("%.1f s", work.product_seconds) +
                     " of products per GPU" + (work.dtypes.size() > 1 ? " and dtype" : "");
  if (work.plan.reduced) text += " (of " + formatted("%.1f s", full_product_seconds) + ")";
  text += gpus == 1 ? ", 1 GPU" : ", " + std::to_string(gpus) + " GPUs at once";
  return text;
}

}  // namespace

GemmWork plan_gemm_work(const WorkRequest& request) {
  GemmWork work;
  work.settings = parse_gemm_settings(request.profile, *request.options);
  work.fixed = work.settings.product_seconds_given;
  const double full = work.settings.product_seconds;
  work.product_seconds = full;
  const int gpus = request.shape.gpus;
  work.library_s = kCublasLoad_s;
  for (GemmDtype dtype : work.settings.dtypes) {
    GemmDtypeWork d;
    d.dtype = dtype;
    // The memory of the node's GPUs is not known before discovery: the limit alone decides
    // (every supported GPU has at least twice the default limit).
    d.size = choose_gemm_size(dtype, work.settings, 0).value_or(4096);
    const double flops = 2.0 * std::pow(static_cast<double>(d.size), 3);
    d.product_s = flops / (peak_tflops(dtype, request.thresholds) * 1e12 * kPeakEfficiency) *
                  (1.0 + kVerifyShare);
    d.round_s = std::max(1, work.settings.repeats_per_round) * d.product_s;
    d.overhead_s = kDtypeSetup_s + kWarmupProducts * d.product_s +
                   std::max(kQueued_s, kQueuedProducts * d.product_s) + kDrain_s;
    if (work.dtypes.empty()) {
      d.overhead_s += kGpuSetup_s + kGpuSetupPerExtraGpu_s * std::max(gpus - 1, 0);
    }
    d.seconds = d.overhead_s + std::max(full, d.round_s);
    work.dtypes.push_back(d);
  }

  if (gpus <= 0) {
    // No GPU to test: run() only says so (the dtypes stay for its bookkeeping).
    work.plan.coverage = "no GPU CUDA can use";
    return work;
  }

  const double least = work.fixed ? full : std::min(kMinProductSeconds, full);
  work.plan.floor_s = total_s(work, least);
  const double whole = total_s(work, full);
  if (request.seconds && *request.seconds < whole && !work.fixed) {
    // The largest product seconds, on the step, whose total fits; the total grows with them.
    double lo = least;
    double hi = full;
    for (int i = 0; i < 60; ++i) {
      const double mid = 0.5 * (lo + hi);
      (total_s(work, mid) <= *request.seconds ? lo : hi) = mid;
    }
    work.product_seconds = std::max(least, std::floor(lo / kProductStep_s) * kProductStep_s);
    work.plan.reduced = work.product_seconds < full;
  }
  for (GemmDtypeWork& d : work.dtypes) {
    d.seconds = d.overhead_s + std::max(work.product_seconds, d.round_s);
  }
  work.plan.expected_s = total_s(work, work.product_seconds);
  work.plan.coverage = coverage_of(work, full, gpus);
  return work;
}

}  // namespace preflight
