// The gemm check's products on one GPU: cuBLAS GEMMs of counter-generated small-integer inputs,
// each verified on the GPU by one fused pass over its output (src/kernels/gemm_kernels.cu).
//
// Reproducibility is the check's design: the repeatability and cross-GPU consensus detectors
// compare output digests bit for bit, which cuBLAS guarantees only for the same call on the
// same architecture and SM count with a fixed configuration. So every job uses one cuBLAS
// handle bound to one stream (cublasSetStream), a fixed workspace of job.workspace_bytes set
// after binding the stream (cublasSetStream resets it to the default pool), atomics disallowed
// (CUBLAS_ATOMICS_NOT_ALLOWED: split-K reductions with atomics sum in any order), and the very
// same cublasGemmEx call, algorithm CUBLAS_GEMM_DEFAULT, for every product.
//
// The host never synchronizes: up to kDepth products are queued, each bracketed by events, and
// the oldest is polled against job.deadline. A GPU that does not finish in time is abandoned
// with its memory (freeing it would wait for the hung work).
#include "gpu/cublas_gemm_engine.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpu/cuda_check.hpp"
#include "gpu/gemm_session.hpp"
#include "gpu/stream_drain.hpp"
#include "kernels/gemm_kernels.hpp"

namespace preflight {
namespace {

using namespace gemm_detail;

using Clock = std::chrono::steady_clock;
// Products are queued to cover at least this much GPU time, so that the GPU never waits for
// the host; long products queue fewer, which shortens the drain after a cancel.
constexpr double kQueuedMs = 40.0;
constexpr int kWarmups = 2;  // untimed: cuBLAS picks its kernel, clocks ramp up
constexpr auto kProductPollInterval = std::chrono::microseconds(150);
constexpr std::size_t kSlowWindow = 32;  // gemm-slow idles for the median of this many products

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// Thrown when the deadline passes with work still queued.
struct ProductsTimedOut {};

bool cancelled(const GemmJob& job) {
  return job.cancel && job.cancel->load();
}

// An event to poll and the stage blamed when polling it reports an error.
struct Milestone {
  cudaEvent_t event;
  const char* stage;
};

// Polls milestones[reached, count) in order; true once all completed. Asynchronous errors
// surface here and are blamed on the first milestone not yet seen complete (best effort: once
// a context is broken every query fails): `stage` is set and CudaError thrown.
bool poll(const Milestone* milestones, std::size_t count, std::size_t& reached,
          std::string& stage) {
  for (; reached < count; ++reached) {
    const cudaError_t status = cudaEventQuery(milestones[reached].event);
    if (status == cudaErrorNotReady) return false;
    if (status != cudaSuccess) {
      stage = milestones[reached].stage;
      throw CudaError(__FILE__, __LINE__, "cudaEventQuery", status);
    }
  }
  return true;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// After a failure: frees the session once its stream is idle; leaks it when the stream is
// still busy at the deadline, or the context is broken (every call would fail anyway).
void dispose_after_error(std::optional<GemmSession>& session, Clock::time_point deadline) {
  if (!session) {
    cudaGetLastError();  // a non-sticky error must not be reported again by the next call
    return;
  }
  drain_or_abandon(session->stream(), deadline, [&] { session->abandon(); });
  session.reset();
}

// One job. With `verify`, the check's products: rounds of new inputs, each product verified,
// the injected faults applied. Without, the benchmark's plain loop: the same setup, warm-up and
// cuBLAS call on round 0's inputs, each product between two events and nothing else.
GemmGpuRun execute(const CublasLibrary& cublas, const GemmJob& job, bool verify) {
  GemmGpuRun out;
  out.gpu_index = job.gpu_index;
  out.dtype = job.dtype;
  out.m = job.m;
  out.n = job.n;
  out.k = job.k;
  std::string stage = "setup";
  std::optional<GemmSession> session;
  const int repeats = std::max(1, job.repeats_per_round);
  // Product i is repeat i % repeats of round i / repeats (the plain loop stays in round 0).
  const auto round_of = [&](int i) { return verify ? i / repeats : 0; };
  const auto repeat_of = [&](int i) { return verify ? i % repeats : i; };
  // (round 0, repeat 1): repeat 0 stays clean, so the repeatability detector sees a difference.
  const bool inject = verify && (job.inject_bitflip || job.inject_nan);
  const int injected = inject ? std::min(1, repeats - 1) : -1;
  const bool slow = verify && job.slow_factor > 0.0 && job.slow_factor < 1.0;
  std::vector<double> gemm_ms;  // recent product times without the gemm-slow idling

  const auto record = [&](const TimingEvent& event) {
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(event.get(), session->stream()));
  };
  const auto issue = [&](int i) {
    const int slot = i % kDepth;
    const Slot& s = session->slot(slot);
    if (verify && i > 0 && repeat_of(i) == 0) {
      stage = "generate";
      session->generate(round_of(i), true);
    }
    stage = "product";
    if (verify) session->zero_result(slot);
    record(s.start);
    session->gemm();
    if (slow) {
      // The GPU is held idle so that the product takes 1/slow_factor of its time.
      record(s.gemm_done);
      const double idle_ms = median(gemm_ms) * (1.0 / job.slow_factor - 1.0);
      PREFLIGHT_CUDA_CHECK(
          launch_gemm_spin(static_cast<std::uint64_t>(idle_ms * 1e6), session->stream()));
    }
    record(s.product_done);
    if (!verify) return;
    stage = "verify";  // the injection stays outside the product's time
    if (i == injected) session->inject();
    session->verify(slot);
    record(s.verify_done);
    stage = "readback";
    session->copy_result(slot);
    record(s.copied);
  };
  const auto retire = [&](int i) {
    const Slot& s = session->slot(i % kDepth);
    stage = "readback";
    GemmProductRecord r;
    r.round = round_of(i);
    r.repeat = repeat_of(i);
    r.injected = i == injected || slow;  // gemm-slow touches every product
    r.product_ms = elapsed_ms(s.start.get(), s.product_done.get());
    if (slow) {
      if (gemm_ms.size() >= kSlowWindow) gemm_ms.erase(gemm_ms.begin());
      gemm_ms.push_back(elapsed_ms(s.start.get(), s.gemm_done.get()));
    }
    if (verify) {
      r.verify_ms = elapsed_ms(s.product_done.get(), s.verify_done.get());
      const GemmVerifyResult& v = session->pinned_result(i % kDepth);
      r.digest = v.digest;
      r.nonfinite = v.nonfinite;
      r.bad_columns = v.bad_columns;
      r.first_bad_column = gemm_first_bad_column(v);
      if (r.first_bad_column >= 0) {
        r.first_bad_expected = v.first_bad_expected;
        r.first_bad_actual = v.first_bad_actual;
      }
    }
    out.products.push_back(r);
  };

  try {
    if (!cublas.ok()) throw std::runtime_error(cublas.problem());
    session.emplace(cublas.api(), job, out);
    stage = "generate";
    session->generate(0, verify);

    // Warm-up: untimed products on round 0's inputs, the last one timed (the first gemm-slow
    // estimate) and verified (which loads that path too). Waited for, so that the timed
    // products start on an idle GPU and the wall time leaves setup out.
    const Slot& w = session->slot(0);
    record(w.verify_done);  // the inputs are ready
    stage = "product";
    for (int i = 1; i < kWarmups; ++i) session->gemm();
    record(w.start);
    session->gemm();
    record(w.product_done);
    if (verify) {
      session->zero_result(0);
      session->verify(0);
    }
    record(w.copied);
    const Milestone warm[] = {{w.verify_done.get(), "generate"},
                              {w.copied.get(), verify ? "verify" : "product"}};
    for (std::size_t reached = 0; !poll(warm, 2, reached, stage);) {
      if (Clock::now() >= job.deadline) throw ProductsTimedOut();
      std::this_thread::sleep_for(kProductPollInterval);
    }
    gemm_ms.push_back(elapsed_ms(w.start.get(), w.product_done.get()));
    const double product_ms = gemm_ms.front() / (slow ? job.slow_factor : 1.0);
    const std::size_t depth = static_cast<std::size_t>(std::clamp(
        static_cast<int>(std::ceil(kQueuedMs / std::max(product_ms, 0.01))) + 1, 2, kDepth));

    // Up to `depth` products in flight; the oldest is polled. No new product after cancel, the
    // deadline, or product_seconds (but not before one full round); the queue then drains.
    std::deque<std::pair<int, std::size_t>> queue;  // product, milestones seen complete
    int issued = 0;
    const Clock::time_point first_issue = Clock::now();
    Clock::time_point last_done = first_issue;
    bool stopped = false;
    for (;;) {
      while (!stopped && queue.size() < depth) {
        const auto now = Clock::now();
        stopped = cancelled(job) || now >= job.deadline ||
                  (issued >= repeats && seconds_between(first_issue, now) >= job.product_seconds);
        if (stopped) break;
        issue(issued);
        queue.emplace_back(issued++, 0);
      }
      if (queue.empty()) break;
      auto& [i, reached] = queue.front();
      const Slot& s = session->slot(i % kDepth);
      const Milestone milestones[] = {
          {s.start.get(), verify && i > 0 && repeat_of(i) == 0 ? "generate" : "product"},
          {s.product_done.get(), "product"},
          {s.verify_done.get(), "verify"},
          {s.copied.get(), "readback"}};
      if (!poll(milestones, verify ? 4 : 2, reached, stage)) {
        if (Clock::now() >= job.deadline) throw ProductsTimedOut();
        std::this_thread::sleep_for(kProductPollInterval);
        continue;
      }
      last_done = Clock::now();
      retire(i);
      queue.pop_front();
    }
    out.wall_s = issued > 0 ? seconds_between(first_issue, last_done) : 0.0;
  } catch (const ProductsTimedOut&) {
    out.timed_out = true;
    if (session) session->abandon();  // the GPU may never finish: leak, never free
  } catch (const CudaError& e) {
    out.error = cuda_error_text(e.code());
  } catch (const CublasError& e) {
    out.error = e.status_text();
  } catch (const std::exception& e) {
    out.error = e.what();
  } catch (...) {
    out.error = "unknown error";
  }
  if (!out.error.empty()) {
    out.error_stage = stage;
    dispose_after_error(session, job.deadline);
  }
  return out;
}

}  // namespace

const CublasLibrary& CudaGemmEngine::cublas() {
  std::call_once(once_, [this] {
    cublas_ = std::make_unique<CublasLibrary>(
        load_runtime_library(cublas_library_spec(), runtime_library_folders(CUBLAS_VER_MAJOR)));
  });
  return *cublas_;
}

std::string CudaGemmEngine::library_problem() {
  return cublas().problem();
}

GemmGpuRun CudaGemmEngine::run(const GemmJob& job) {
  return execute(cublas(), job, true);
}

GemmEngine::PlainLoop CudaGemmEngine::run_plain_loop(const GemmJob& job) {
  const GemmGpuRun run = execute(cublas(), job, false);
  PlainLoop out;
  for (const GemmProductRecord& p : run.products) out.product_ms.push_back(p.product_ms);
  out.wall_s = run.wall_s;
  if (!run.error.empty()) {
    out.error = run.error_stage + ": " + run.error;
  } else if (run.timed_out) {
    out.error = "timed out: queued products did not complete before the deadline";
  }
  return out;
}

}  // namespace preflight
