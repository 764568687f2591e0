// preflight-bench-gemm: what the gemm check's verification costs. On one GPU it runs the plain
// cuBLAS loop (GemmEngine::run_plain_loop) and the check's verified products (GemmEngine::run)
// alternately, plain, checked, plain, checked, so that clock drift over the runs cancels out,
// and compares their throughput. The target: verified throughput, counting the verification,
// at least 95% of the plain loop's, by GPU time and by wall time. Exit codes: 0 target met and
// every product verified clean, 1 otherwise (or the GPU failed), 2 bad usage.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "checks/gemm/gemm_math.hpp"
#include "preflight/engine/engines.hpp"
#include "preflight/engine/gemm_engine.hpp"

namespace {

using namespace preflight;

constexpr double kTargetRatio = 0.95;
// Beyond the products: context creation, allocation, input generation, warm-up, drain.
constexpr auto kSetupAllowance = std::chrono::seconds(120);
constexpr int kPasses = 2;  // (plain, checked) pairs

struct Options {
  int gpu = 0;
  std::string dtype = "bf16";
  int size = 16384;
  double seconds = 20.0;
};

double sum(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0);
}

// Aggregate TFLOP/s of `count` products that took `ms` in all.
double rate(const GemmJob& job, std::size_t count, double ms) {
  return ms > 0 ? gemm_flops(job.m, job.n, job.k) * static_cast<double>(count) / (ms * 1e-3) / 1e12
                : 0.0;
}

void print_products(const char* label, int pass, const GemmJob& job,
                    const std::vector<double>& product_ms, double wall_s) {
  std::vector<double> tflops;
  for (double ms : product_ms) tflops.push_back(gemm_tflops(job.m, job.n, job.k, ms));
  const SampleStats stats = summarize(tflops);
  std::printf("%-7s #%d: %zu products in %.2f s; product TFLOP/s median %.1f, min %.1f, max %.1f\n",
              label, pass + 1, product_ms.size(), wall_s, stats.median, stats.min, stats.max);
}

// Clean: no NaN/Inf, no bad column, and the same digest for every product of a round.
bool verified_clean(const GemmGpuRun& run, std::string& why) {
  std::map<int, std::uint64_t> digests;
  for (const GemmProductRecord& p : run.products) {
    const std::string at =
        "round " + std::to_string(p.round) + " repeat " + std::to_string(p.repeat);
    if (p.nonfinite != 0) why = at + ": " + std::to_string(p.nonfinite) + " NaN/Inf outputs";
    if (p.bad_columns != 0) {
      why = at + ": " + std::to_string(p.bad_columns) + " columns fail the checksum (first " +
            std::to_string(p.first_bad_column) + ")";
    }
    const auto [it, first] = digests.emplace(p.round, p.digest);
    if (!first && it->second != p.digest) why = at + ": digest differs within the round";
    if (!why.empty()) return false;
  }
  return true;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "preflight-bench-gemm: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "preflight-bench-gemm: the gemm check's verification overhead on one GPU. Runs the plain "
      "cuBLAS loop and the verified products alternately (plain, checked, plain, checked).\n"
      "Exit codes: 0 verified throughput >= 95% of plain (GPU and wall time) and every product "
      "clean, 1 otherwise, "
      "2 bad usage.",
      "preflight-bench-gemm"};
  app.add_option("--gpu", options.gpu, "CUDA device ordinal (default 0)")
      ->check(CLI::Range(0, 1023));
  app.add_option("--dtype", options.dtype, "bf16 (default), fp16, tf32, fp32 or fp64")
      ->check(CLI::IsMember({"bf16", "fp16", "tf32", "fp32", "fp64"}));
  app.add_option("--size", options.size, "m = n = k (default 16384)")
      ->check(CLI::Range(256, 65536));
  app.add_option("--seconds", options.seconds,
                 "seconds of products in each of the 4 runs (default 20)")
      ->check(CLI::Range(0.5, 3600.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "preflight-bench-gemm: %s\n", e.what());
    return 2;
  }

  const auto owned = make_system_gemm_engine();
  GemmEngine* engine = owned.get();
  if (engine == nullptr) return fail("this binary has no GEMM engine (built without CUDA)");

  GemmJob job;
  job.gpu_index = options.gpu;
  job.cuda_ordinal = options.gpu;
  job.dtype = *parse_gemm_dtype(options.dtype);
  job.m = job.n = job.k = options.size;
  job.input_range = gemm_input_range(job.dtype, job.m, job.k);
  const GemmTolerance tolerance = gemm_tolerance(job.dtype, job.m, job.k, job.input_range);
  job.output_roundoff = tolerance.output_roundoff;
  job.accumulation_gamma = tolerance.accumulation_gamma;
  job.product_seconds = options.seconds;
  const auto run_time = std::chrono::duration_cast<SteadyClock::duration>(
                            std::chrono::duration<double>(options.seconds)) +
                        kSetupAllowance;
  const std::string gpu = "gpu " + std::to_string(options.gpu) + ": ";
  std::vector<double> plain_ms;
  double plain_wall_s = 0.0;
  std::vector<double> checked_ms;
  std::vector<double> verify_ms;
  double checked_wall_s = 0.0;
  bool clean = true;
  std::string device;
  int sm_count = 0;
  for (int pass = 0; pass < kPasses; ++pass) {
    job.deadline = SteadyClock::now() + run_time;
    const GemmEngine::PlainLoop plain = engine->run_plain_loop(job);
    if (!plain.error.empty()) return fail(gpu + "plain loop: " + plain.error);
    if (pass == 0) {
      std::printf(
          "preflight-bench-gemm: %s %d x %d x %d on CUDA device %d, inputs in [-%d, %d], %s\n",
          options.dtype.c_str(), job.m, job.n, job.k, options.gpu, job.input_range, job.input_range,
          tolerance.output_roundoff == 0 && tolerance.accumulation_gamma == 0
              ? "exact (checksums compared bit for bit)"
              : "not exact (checksums compared within a tolerance)");
    }
    print_products("plain", pass, job, plain.product_ms, plain.wall_s);
    plain_ms.insert(plain_ms.end(), plain.product_ms.begin(), plain.product_ms.end());
    plain_wall_s += plain.wall_s;

    job.deadline = SteadyClock::now() + run_time;
    const GemmGpuRun checked = engine->run(job);
    if (!checked.error.empty()) {
      return fail(gpu + "checked run: " + checked.error_stage + ": " + checked.error);
    }
    if (checked.timed_out) return fail(gpu + "checked run: timed out");
    device = checked.device_name;
    sm_count = checked.sm_count;
    std::vector<double> run_product_ms;
    std::vector<double> run_verify_ms;
    for (const GemmProductRecord& p : checked.products) {
      run_product_ms.push_back(p.product_ms);
      run_verify_ms.push_back(p.verify_ms);
    }
    print_products("checked", pass, job, run_product_ms, checked.wall_s);
    std::string why;
    const bool run_clean = verified_clean(checked, why);
    clean = clean && run_clean;
    std::printf("           verification %.2f%% of product time; effective %.1f TFLOP/s; %s\n",
                100.0 * sum(run_verify_ms) / std::max(sum(run_product_ms), 1e-9),
                rate(job, run_product_ms.size(), sum(run_product_ms) + sum(run_verify_ms)),
                run_clean ? "verified clean" : ("NOT CLEAN: " + why).c_str());
    checked_ms.insert(checked_ms.end(), run_product_ms.begin(), run_product_ms.end());
    verify_ms.insert(verify_ms.end(), run_verify_ms.begin(), run_verify_ms.end());
    checked_wall_s += checked.wall_s;
  }

  // Two ratios, both held to the target. GPU time: product plus verification against the
  // plain products (what verification costs). Wall time: the checked run from its first
  // product to its last against the plain loop's, which also counts input regeneration, the
  // references and any gap the host leaves (what the check's loop costs as a whole).
  const double plain_tflops = rate(job, plain_ms.size(), sum(plain_ms));
  const double checked_tflops = rate(job, checked_ms.size(), sum(checked_ms));
  const double effective_tflops = rate(job, checked_ms.size(), sum(checked_ms) + sum(verify_ms));
  const double overhead = sum(verify_ms) / std::max(sum(checked_ms), 1e-9);
  const double ratio = plain_tflops > 0 ? effective_tflops / plain_tflops : 0.0;
  const double plain_wall_tflops = rate(job, plain_ms.size(), plain_wall_s * 1e3);
  const double checked_wall_tflops = rate(job, checked_ms.size(), checked_wall_s * 1e3);
  const double wall_ratio = plain_wall_tflops > 0 ? checked_wall_tflops / plain_wall_tflops : 0.0;
  const bool pass = ratio >= kTargetRatio && wall_ratio >= kTargetRatio && clean;
  std::printf(
      "%s (%d SMs): plain %.1f TFLOP/s, checked %.1f TFLOP/s (products only), %.1f TFLOP/s "
      "effective; verification %.2f%%; ratio %.3f, by wall time %.3f (target >= %.2f "
      "each); %s\n",
      device.c_str(), sm_count, plain_tflops, checked_tflops, effective_tflops, 100.0 * overhead,
      ratio, wall_ratio, kTargetRatio, clean ? "all products verified clean" : "NOT CLEAN");

  const nlohmann::json line = {
      {"bench", "gemm"},
      {"device", device},
      {"sm_count", sm_count},
      {"dtype", options.dtype},
      {"size", options.size},
      {"seconds_per_run", options.seconds},
      {"plain_products", plain_ms.size()},
      {"checked_products", checked_ms.size()},
      {"plain_tflops", plain_tflops},
      {"checked_product_tflops", checked_tflops},
      {"checked_effective_tflops", effective_tflops},
      {"verify_overhead", overhead},
      {"ratio", ratio},
      {"wall_ratio", wall_ratio},
      {"clean", clean},
      {"pass", pass},
  };
  std::printf("%s\n", line.dump().c_str());
  return pass ? 0 : 1;
}
