// GemmSession and the cuBLAS helpers it uses (gemm_session.hpp).
#include "gpu/gemm_session.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "gpu/cuda_check.hpp"
#include "kernels/gemm_kernels.hpp"
#include "kernels/gemm_numerics.hpp"

namespace preflight {
namespace gemm_detail {

CublasHandle::CublasHandle(const CublasApi& api) : api_(api) {
  PREFLIGHT_CUBLAS_CHECK(api_, api_.create(&handle_));
}

CublasHandle::~CublasHandle() {
  if (handle_ == nullptr) return;
  const cublasStatus_t status = api_.destroy(handle_);
  if (status != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "preflight: cublasDestroy failed: %s\n",
                 cublas_status_text(&api_, status).c_str());
  }
}

DtypeCall dtype_call(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::bf16:
      return {GemmElement::bf16, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, false};
    case GemmDtype::fp16:
      return {GemmElement::fp16, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 2, false};
    case GemmDtype::tf32:
      return {GemmElement::fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, false};
    case GemmDtype::fp32:
      return {GemmElement::fp32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 4, false};
    case GemmDtype::fp64:
      return {GemmElement::fp64, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 8, true};
  }
  throw std::invalid_argument("unknown GEMM dtype");
}

DtypeCall prepare_device(const GemmJob& job, GemmGpuRun& info, DeviceScope& device) {
  if (job.m <= 0 || job.n <= 0 || job.k <= 0) {
    throw std::invalid_argument("invalid GEMM size " + std::to_string(job.m) + " x " +
                                std::to_string(job.n) + " x " + std::to_string(job.k));
  }
  device.set(job.cuda_ordinal);
  cudaDeviceProp properties{};
  PREFLIGHT_CUDA_CHECK(cudaGetDeviceProperties(&properties, job.cuda_ordinal));
  info.device_name = properties.name;
  info.sm_count = properties.multiProcessorCount;
  info.compute_capability = properties.major * 10 + properties.minor;

  const DtypeCall call = dtype_call(job.dtype);
  const std::size_t output_bytes = call.wide ? 8 : 4;
  const std::size_t footprint =
      (elements(job.m, job.k) + elements(job.k, job.n)) * call.input_bytes +
      elements(job.m, job.n) * output_bytes + vector_count(job) * sizeof(double) +
      kDepth * sizeof(GemmVerifyResult) + job.workspace_bytes;
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  PREFLIGHT_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (footprint + kMemoryReserve > free_bytes) {
    throw std::runtime_error(cuda_error_text(cudaErrorMemoryAllocation) + " (the job needs " +
                             std::to_string(footprint / kMiB) + " MiB, " +
                             std::to_string(free_bytes / kMiB) + " MiB of " +
                             std::to_string(total_bytes / kMiB) + " MiB are free)");
  }
  info.device_bytes = footprint;
  return call;
}

GemmSession::GemmSession(const CublasApi& api, const GemmJob& job, GemmGpuRun& info)
    : api_(api),
      job_(job),
      call_(prepare_device(job, info, device_)),
      a_(elements(job.m, job.k) * call_.input_bytes),
      b_(elements(job.k, job.n) * call_.input_bytes),
      c_(elements(job.m, job.n) * (call_.wide ? 8 : 4)),
      vectors_(vector_count(job)),
      col_a_(vectors_.get()),
      abs_col_a_(col_a_ + job.k),
      ref_(abs_col_a_ + job.k),
      abs_ref_(ref_ + job.n),
      bad_expected_(abs_ref_ + job.n),
      bad_actual_(bad_expected_ + job.n),
      results_(kDepth),
      pinned_(kDepth) {
  if (job.workspace_bytes > 0) workspace_.emplace(job.workspace_bytes);
  PREFLIGHT_CUBLAS_CHECK(api_, api_.set_stream(handle_.get(), stream_.get()));
  PREFLIGHT_CUBLAS_CHECK(api_,
                         api_.set_workspace(handle_.get(), workspace_ ? workspace_->get() : nullptr,
                                            job.workspace_bytes));
  PREFLIGHT_CUBLAS_CHECK(api_, api_.set_atomics_mode(handle_.get(), CUBLAS_ATOMICS_NOT_ALLOWED));
  PREFLIGHT_CUDA_CHECK(preload_gemm_kernels());
  // Zeroed once: compute-sanitizer's initcheck does not count the stores of cuBLAS's Hopper
  // kernels as writing C (measured on an H200, docs/benchmarks.md), so without this it reports
  // every read of the verify kernel and hides any real one. A product that wrote nothing would
  // read as zeros, which the column checksums catch.
  PREFLIGHT_CUDA_CHECK(cudaMemsetAsync(c_.get(), 0, c_.size_bytes(), stream()));
  verify_args_.c = c_.get();
  verify_args_.wide = call_.wide;
  verify_args_.m = job.m;
  verify_args_.n = job.n;
  verify_args_.ref = ref_;
  verify_args_.abs_ref = abs_ref_;
  verify_args_.output_roundoff = job.output_roundoff;
  verify_args_.accumulation_gamma = job.accumulation_gamma;
  verify_args_.bad_expected = bad_expected_;
  verify_args_.bad_actual = bad_actual_;
}

void GemmSession::generate(int round, bool reference) {
  const std::uint64_t seed = job_.seed + static_cast<std::uint64_t>(round);
  const int range = std::max(0, job_.input_range);
  PREFLIGHT_CUDA_CHECK(launch_gemm_generate(call_.element, a_.get(), elements(job_.m, job_.k), seed,
                                            kGemmMatrixA, range, stream()));
  PREFLIGHT_CUDA_CHECK(launch_gemm_generate(call_.element, b_.get(), elements(job_.k, job_.n), seed,
                                            kGemmMatrixB, range, stream()));
  if (!reference) return;
  PREFLIGHT_CUDA_CHECK(launch_gemm_column_sums(call_.element, a_.get(), job_.m, job_.k, col_a_,
                                               abs_col_a_, stream()));
  PREFLIGHT_CUDA_CHECK(launch_gemm_reference(call_.element, b_.get(), job_.k, job_.n, col_a_,
                                             abs_col_a_, ref_, abs_ref_, stream()));
}

void GemmSession::gemm() {
  const float alpha32 = 1.0f;
  const float beta32 = 0.0f;
  const double alpha64 = 1.0;
  const double beta64 = 0.0;
  const void* alpha = call_.wide ? static_cast<const void*>(&alpha64) : &alpha32;
  const void* beta = call_.wide ? static_cast<const void*>(&beta64) : &beta32;
  PREFLIGHT_CUBLAS_CHECK(
      api_,
      api_.gemm_ex(handle_.get(), CUBLAS_OP_N, CUBLAS_OP_N, job_.m, job_.n, job_.k, alpha, a_.get(),
                   call_.input_type, job_.m, b_.get(), call_.input_type, job_.k, beta, c_.get(),
                   call_.output_type, job_.m, call_.compute, CUBLAS_GEMM_DEFAULT));
}

void GemmSession::zero_result(int index) {
  PREFLIGHT_CUDA_CHECK(
      cudaMemsetAsync(results_.get() + index, 0, sizeof(GemmVerifyResult), stream()));
}

void GemmSession::verify(int index) {
  GemmVerifyArgs args = verify_args_;
  args.result = results_.get() + index;
  PREFLIGHT_CUDA_CHECK(launch_gemm_verify(args, stream()));
}

void GemmSession::copy_result(int index) {
  PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(pinned_.get() + index, results_.get() + index,
                                       sizeof(GemmVerifyResult), cudaMemcpyDeviceToHost, stream()));
}

void GemmSession::inject() {
  const std::uint64_t count = elements(job_.m, job_.n);
  const std::uint64_t index = count / 2 + static_cast<std::uint64_t>(job_.m / 3);
  if (job_.inject_bitflip) {
    PREFLIGHT_CUDA_CHECK(
        launch_gemm_inject(c_.get(), call_.wide, index, job_.bitflip_bit, false, stream()));
  }
  if (job_.inject_nan) {  // the next column when both: each detector sees its own fault
    const std::uint64_t at = job_.inject_bitflip ? (index + job_.m) % count : index;
    PREFLIGHT_CUDA_CHECK(launch_gemm_inject(c_.get(), call_.wide, at, -1, true, stream()));
  }
}

void GemmSession::abandon() noexcept {
  handle_.release();
  if (workspace_) workspace_->release();
  vectors_.release();
  a_.release();
  b_.release();
  c_.release();
  results_.release();
  pinned_.release();
  for (Slot& s : slots_) s.release();
  stream_.release();
}

}  // namespace gemm_detail
}  // namespace preflight
