#pragma once
// A GemmEngine that makes up product records instead of running cuBLAS: healthy GPUs agree bit
// for bit, injected faults (GemmJob hooks) corrupt product (round 0, repeat 1) the way the real
// engine's kernels do, and a GPU can be made slow, failing or hung, so the gemm check's
// orchestration and judgement run end to end without a GPU.
#include <algorithm>
#include <condition_variable>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "checks/gemm/gemm_math.hpp"
#include "kernels/gemm_numerics.hpp"
#include "preflight/engine/gemm_engine.hpp"
#include "support/gate.hpp"

namespace preflight::test {

struct FakeGemmBehaviour {
  double tflops = 800.0;  // speed of a healthy product (an H100 SXM passes its SKU floor)
  bool hang = false;      // run() blocks until the gate opens, like a driver that never returns
  std::string error;      // run() reports this CUDA error after two products
  std::string error_stage = "product";
  bool timed_out = false;              // run() reports its queued work did not complete
  bool persistent_corruption = false;  // every product's digest differs (bad input memory)
  int sm_count = 132;
};

// Where hung runs wait; shared with them so it outlives the engine.
using HangGate = Gate;

class FakeGemmEngine final : public GemmEngine {
 public:
  std::map<int, FakeGemmBehaviour> behaviour;  // by GPU index; absent: healthy
  std::shared_ptr<HangGate> gate = std::make_shared<HangGate>();
  std::string missing_library;  // library_problem(): cuBLAS not found, and why
  // Takes the job's product seconds (or until cancelled), as the real engine does: for runs that
  // test the time a plan gives (tests/unit/test_run_plan.cpp).
  bool takes_its_time = false;

  ~FakeGemmEngine() override { gate->release(); }

  std::string library_problem() override { return missing_library; }

  std::vector<GemmJob> jobs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return jobs_;
  }

  GemmGpuRun run(const GemmJob& job) override {
    FakeGemmBehaviour b;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(job);
      const auto it = behaviour.find(job.gpu_index);
      if (it != behaviour.end()) b = it->second;
    }
    if (b.hang) {
      auto g = gate;
      std::unique_lock<std::mutex> lock(g->mutex);
      g->cv.wait(lock, [&] { return g->open; });
    }
    if (takes_its_time) take_time(job.product_seconds, job.cancel);
    GemmGpuRun run;
    run.gpu_index = job.gpu_index;
    run.dtype = job.dtype;
    run.m = job.m;
    run.n = job.n;
    run.k = job.k;
    run.device_name = "fake";
    run.sm_count = b.sm_count;
    run.compute_capability = 90;
    const double ms = gemm_flops(job.m, job.n, job.k) / (b.tflops * job.slow_factor * 1e12) * 1e3;
    int products =
        std::clamp(static_cast<int>(job.product_seconds * 20), job.repeats_per_round, 200);
    if (!b.error.empty() || b.timed_out) products = 2;
    if (job.cancel && job.cancel->load()) products = std::min(products, job.repeats_per_round);
    for (int p = 0; p < products; ++p) {
      GemmProductRecord r;
      r.round = p / job.repeats_per_round;
      r.repeat = p % job.repeats_per_round;
      r.product_ms = ms;
      r.verify_ms = ms * 0.02;
      r.injected = job.slow_factor < 1.0;  // like the real engine: gemm-slow touches every one
      r.digest = gemm_mix64(job.seed + static_cast<std::uint64_t>(r.round) * 7919 +
                            static_cast<std::uint64_t>(job.m));
      if (b.persistent_corruption) r.digest ^= 0x5A5A;
      if (r.round == 0 && r.repeat == 1 && (job.inject_bitflip || job.inject_nan)) {
        r.injected = true;
        r.digest ^= 0x1234;
        r.bad_columns = 1;
        r.first_bad_column = 7;
        r.first_bad_expected = 1024;
        r.first_bad_actual = job.inject_nan ? std::numeric_limits<double>::quiet_NaN() : 1536;
        r.nonfinite = job.inject_nan ? 1 : 0;
      }
      run.products.push_back(r);
    }
    run.wall_s = products * ms * 1.02 / 1e3;
    run.device_bytes = gemm_footprint_bytes(job.dtype, job.m, job.n, job.k, job.workspace_bytes);
    if (!b.error.empty()) {
      run.error = b.error;
      run.error_stage = b.error_stage;
    }
    run.timed_out = b.timed_out;
    return run;
  }

  PlainLoop run_plain_loop(const GemmJob&) override { return {}; }

 private:
  mutable std::mutex mutex_;
  std::vector<GemmJob> jobs_;
};

}  // namespace preflight::test
