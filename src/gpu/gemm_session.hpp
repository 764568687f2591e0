#pragma once
// The per-job GPU state of the gemm check (gemm_engine.cpp): cuBLAS error handling, the timing
// events of a product slot, the cuBLAS call for each dtype, and GemmSession, which owns
// everything one job allocates on its GPU and queues its calls.
#include <cublas_v2.h>

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "gpu/cublas_library.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/device_scope.hpp"
#include "kernels/gemm_kernels.hpp"
#include "model/byte_units.hpp"
#include "preflight/engine/gemm_engine.hpp"

namespace preflight {
namespace gemm_detail {

class CublasError : public std::runtime_error {
 public:
  CublasError(const char* file, int line, const char* expression, cublasStatus_t status,
              const CublasApi& api)
      : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expression +
                           " failed: " + cublas_status_text(&api, status)),
        status_text_(cublas_status_text(&api, status)) {}
  // "CUBLAS_STATUS_EXECUTION_FAILED: the GPU program failed to execute".
  const std::string& status_text() const noexcept { return status_text_; }

 private:
  std::string status_text_;
};

}  // namespace gemm_detail
}  // namespace preflight

// `api` is the CublasApi the call went through (its status functions name the error).
#define PREFLIGHT_CUBLAS_CHECK(api, expr)                                           \
  do {                                                                              \
    const cublasStatus_t preflight_cublas_status_ = (expr);                         \
    if (preflight_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                        \
      throw ::preflight::gemm_detail::CublasError(__FILE__, __LINE__, #expr,        \
                                                  preflight_cublas_status_, (api)); \
    }                                                                               \
  } while (false)

namespace preflight {
namespace gemm_detail {

inline constexpr int kDepth = 4;  // products in flight at most (event and result slots)
// Left free beside the job's buffers for the allocations cuBLAS makes on its own.
inline constexpr std::size_t kMemoryReserve = std::size_t{64} << 20;

// A cuBLAS handle, owned. cublasDestroy synchronizes the device: the session destroys it only
// once the queued work is done, and leaks it (release) when the GPU may never finish.
class CublasHandle {
 public:
  explicit CublasHandle(const CublasApi& api);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const noexcept { return handle_; }
  void release() noexcept { handle_ = nullptr; }

 private:
  const CublasApi& api_;
  cublasHandle_t handle_ = nullptr;
};

// The events of one product slot. A product is: zero the result, start, gemm, [gemm_done, spin
// (gemm-slow)], product_done, [injection], verification, verify_done, copy-back, copied.
struct Slot {
  TimingEvent start = timing_event();
  TimingEvent gemm_done = timing_event();
  TimingEvent product_done = timing_event();
  TimingEvent verify_done = timing_event();
  TimingEvent copied = timing_event();

  void release() noexcept {
    for (TimingEvent* e : {&start, &gemm_done, &product_done, &verify_done, &copied}) e->release();
  }
};

struct DtypeCall {
  GemmElement element;
  cudaDataType_t input_type;
  cudaDataType_t output_type;
  cublasComputeType_t compute;
  std::size_t input_bytes;
  bool wide;  // fp64 output and scalars
};

DtypeCall dtype_call(GemmDtype dtype);

inline std::size_t elements(int rows, int cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

// The fp64 vectors: col_a, abs_col_a (k each), ref, abs_ref, bad_expected, bad_actual (n each).
inline std::size_t vector_count(const GemmJob& job) {
  return 2 * static_cast<std::size_t>(job.k) + 4 * static_cast<std::size_t>(job.n);
}

// Makes the job's GPU current on this thread (through `device`, the session's scope) and checks
// that the job fits in its free memory. Records the device and the footprint in `info`. A member
// initializer of GemmSession, so it runs before any allocation.
DtypeCall prepare_device(const GemmJob& job, GemmGpuRun& info, DeviceScope& device);

// Everything one job allocates on its GPU, and the calls it queues. Members are destroyed in
// reverse order: the cuBLAS handle (which synchronizes) first, the stream last.
class GemmSession {
 public:
  GemmSession(const CublasApi& api, const GemmJob& job, GemmGpuRun& info);

  cudaStream_t stream() const { return stream_.get(); }
  Slot& slot(int index) { return slots_[static_cast<std::size_t>(index)]; }
  const GemmVerifyResult& pinned_result(int index) const { return pinned_[index]; }

  // The inputs of `round`, and with `reference` the fp64 column sums they must produce.
  void generate(int round, bool reference);

  // The one cuBLAS call of the job: C = A * B, column-major, lda = m, ldb = k, ldc = m.
  void gemm();

  void zero_result(int index);
  void verify(int index);
  void copy_result(int index);

  // The injected faults, inside the output (test hooks; GemmJob).
  void inject();

  // Leaks every resource: the GPU may still be working on them.
  void abandon() noexcept;

 private:
  // First member: the job's device stays current while every resource below is made and freed.
  DeviceScope device_;
  const CublasApi& api_;
  const GemmJob& job_;
  DtypeCall call_;
  CudaStream stream_;
  std::array<Slot, kDepth> slots_;
  DeviceBuffer<unsigned char> a_;
  DeviceBuffer<unsigned char> b_;
  DeviceBuffer<unsigned char> c_;
  DeviceBuffer<double> vectors_;  // vector_count(); the pointers below point into it
  double* col_a_;
  double* abs_col_a_;
  double* ref_;
  double* abs_ref_;
  double* bad_expected_;
  double* bad_actual_;
  DeviceBuffer<GemmVerifyResult> results_;
  PinnedHostBuffer<GemmVerifyResult> pinned_;
  std::optional<DeviceBuffer<unsigned char>> workspace_;
  CublasHandle handle_{api_};
  GemmVerifyArgs verify_args_;  // all but the result slot
};

}  // namespace gemm_detail
}  // namespace preflight
