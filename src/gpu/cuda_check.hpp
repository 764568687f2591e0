#pragma once
// CUDA runtime error handling in the nvbench style, and move-only owners of the few CUDA
// resources the backend uses. Every owner has release(): when a GPU is hung, freeing memory or
// destroying a stream waits for work that never finishes, so the probe abandons (leaks) its
// resources instead of hanging the tool.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace preflight {

class CudaError : public std::runtime_error {
 public:
  CudaError(const char* file, int line, const char* expression, cudaError_t code)
      : std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + expression +
                           " failed: " + cudaGetErrorString(code) + " (" + cudaGetErrorName(code) +
                           ")"),
        code_(code),
        summary_(function_name(expression) + ": " + cudaGetErrorString(code)) {}

  cudaError_t code() const noexcept { return code_; }
  // "cudaMalloc: out of memory": the failing call and the runtime's message, without source
  // locations, for text shown to operators.
  const std::string& summary() const noexcept { return summary_; }

 private:
  static std::string function_name(const char* expression) {
    std::string name(expression);
    name = name.substr(0, name.find('('));
    while (!name.empty() && name.back() == ' ') name.pop_back();
    return name;
  }

  cudaError_t code_;
  std::string summary_;
};

namespace detail {

// Destructors must not throw, and stderr is the only channel they have.
inline void report_cuda_error_noexcept(const char* file, int line, const char* expression,
                                       cudaError_t code) noexcept {
  std::fprintf(stderr, "preflight: %s:%d: %s failed: %s\n", file, line, expression,
               cudaGetErrorString(code));
}

}  // namespace detail
}  // namespace preflight

#define PREFLIGHT_CUDA_CHECK(expr)                                                     \
  do {                                                                                 \
    const cudaError_t preflight_cuda_status_ = (expr);                                 \
    if (preflight_cuda_status_ != cudaSuccess) {                                       \
      throw ::preflight::CudaError(__FILE__, __LINE__, #expr, preflight_cuda_status_); \
    }                                                                                  \
  } while (false)

#define PREFLIGHT_CUDA_CHECK_NOEXCEPT(expr)                                      \
  do {                                                                           \
    const cudaError_t preflight_cuda_status_ = (expr);                           \
    if (preflight_cuda_status_ != cudaSuccess) {                                 \
      ::preflight::detail::report_cuda_error_noexcept(__FILE__, __LINE__, #expr, \
                                                      preflight_cuda_status_);   \
    }                                                                            \
  } while (false)

namespace preflight {
namespace detail {

// Owns one handle; Traits::destroy frees it. Move-only.
template <class Traits>
class UniqueCudaResource {
 public:
  using Handle = typename Traits::Handle;

  UniqueCudaResource() = default;
  explicit UniqueCudaResource(Handle handle) noexcept : handle_(handle) {}
  ~UniqueCudaResource() { reset(); }
  UniqueCudaResource(const UniqueCudaResource&) = delete;
  UniqueCudaResource& operator=(const UniqueCudaResource&) = delete;
  UniqueCudaResource(UniqueCudaResource&& other) noexcept : handle_(other.release()) {}
  UniqueCudaResource& operator=(UniqueCudaResource&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = other.release();
    }
    return *this;
  }

  Handle get() const noexcept { return handle_; }
  Handle release() noexcept { return std::exchange(handle_, Handle{}); }
  void reset() noexcept {
    if (handle_ != Handle{}) Traits::destroy(release());
  }

 private:
  Handle handle_{};
};

struct StreamTraits {
  using Handle = cudaStream_t;
  static void destroy(Handle stream) noexcept {
    PREFLIGHT_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(stream));
  }
};

struct EventTraits {
  using Handle = cudaEvent_t;
  static void destroy(Handle event) noexcept {
    PREFLIGHT_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(event));
  }
};

struct DeviceMemoryTraits {
  using Handle = void*;
  static constexpr bool kHostAccessible = false;
  static cudaError_t allocate(void** memory, std::size_t bytes) {
    return cudaMalloc(memory, bytes);
  }
  static void destroy(Handle memory) noexcept { PREFLIGHT_CUDA_CHECK_NOEXCEPT(cudaFree(memory)); }
};

struct PinnedMemoryTraits {
  using Handle = void*;
  static constexpr bool kHostAccessible = true;
  static cudaError_t allocate(void** memory, std::size_t bytes) {
    return cudaMallocHost(memory, bytes);
  }
  static void destroy(Handle memory) noexcept {
    PREFLIGHT_CUDA_CHECK_NOEXCEPT(cudaFreeHost(memory));
  }
};

}  // namespace detail

// A stream that does not synchronize with the legacy default stream, so the probe never waits
// behind work other code queued there. A moved-from stream holds no handle: get() would then
// name the default stream, so do not use one.
class CudaStream {
 public:
  CudaStream() {
    cudaStream_t stream = nullptr;
    PREFLIGHT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_ = detail::UniqueCudaResource<detail::StreamTraits>(stream);
  }
  cudaStream_t get() const noexcept { return stream_.get(); }
  cudaStream_t release() noexcept { return stream_.release(); }

 private:
  detail::UniqueCudaResource<detail::StreamTraits> stream_;
};

// Timing is disabled: the event only marks completion, and timing events cost more to record.
class CudaEvent {
 public:
  CudaEvent() {
    cudaEvent_t event = nullptr;
    PREFLIGHT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    event_ = detail::UniqueCudaResource<detail::EventTraits>(event);
  }
  cudaEvent_t get() const noexcept { return event_.get(); }
  cudaEvent_t release() noexcept { return event_.release(); }

 private:
  detail::UniqueCudaResource<detail::EventTraits> event_;
};

// Timing is enabled (unlike CudaEvent): measured times (copies, products, collectives) come from
// these. timing_event() makes one on the current device.
using TimingEvent = detail::UniqueCudaResource<detail::EventTraits>;
inline TimingEvent timing_event() {
  cudaEvent_t event = nullptr;
  PREFLIGHT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDefault));
  return TimingEvent(event);
}

// Milliseconds from `from` to `to`, two completed timing events.
inline double elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0.0f;
  PREFLIGHT_CUDA_CHECK(cudaEventElapsedTime(&ms, from, to));
  return ms;
}

// "cudaErrorIllegalAddress: an illegal memory access was encountered".
inline std::string cuda_error_text(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

// `count` elements of T, uninitialized, in memory that Traits allocates and frees.
template <class T, class Traits>
class CudaBuffer {
 public:
  explicit CudaBuffer(std::size_t count) : count_(count) {
    void* memory = nullptr;
    PREFLIGHT_CUDA_CHECK(Traits::allocate(&memory, count * sizeof(T)));
    memory_ = detail::UniqueCudaResource<Traits>(memory);
  }
  CudaBuffer(CudaBuffer&& other) noexcept
      : memory_(std::move(other.memory_)), count_(std::exchange(other.count_, 0)) {}
  CudaBuffer& operator=(CudaBuffer&& other) noexcept {
    if (this != &other) {
      memory_ = std::move(other.memory_);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  T* get() const noexcept { return static_cast<T*>(memory_.get()); }
  // Only host memory can be indexed from the host.
  template <class U = T, class = std::enable_if_t<Traits::kHostAccessible, U>>
  U& operator[](std::size_t i) const noexcept {
    return get()[i];
  }
  std::size_t size() const noexcept { return count_; }
  std::size_t size_bytes() const noexcept { return count_ * sizeof(T); }
  T* release() noexcept {
    count_ = 0;
    return static_cast<T*>(memory_.release());
  }

 private:
  detail::UniqueCudaResource<Traits> memory_;
  std::size_t count_ = 0;
};

// Device memory (cudaMalloc).
template <class T>
using DeviceBuffer = CudaBuffer<T, detail::DeviceMemoryTraits>;

// Page-locked host memory (cudaMallocHost), so that cudaMemcpyAsync into it is truly
// asynchronous.
template <class T>
using PinnedHostBuffer = CudaBuffer<T, detail::PinnedMemoryTraits>;

}  // namespace preflight
