#pragma once
// DeviceScope: the calling thread's current CUDA device for the length of a scope, in the style
// of nvbench's device_scope. The code selects devices through it rather than raw cudaSetDevice
// pairs, so the device a thread had before is restored on every path out, exceptions included.
//
// A scope restores only a device the thread had already selected through a DeviceScope. A thread
// that never did reports device 0 without having a context there, and switching "back" to it
// would create GPU 0's primary context (memory on GPU 0, and a wait on a GPU that may be the hung
// one) from a thread that never used it. Such a thread keeps the device its first scope selected,
// as it did before scopes existed.
//
// A scope belongs to the thread that made it: construct, set and destroy it on one thread. It
// neither copies nor moves, so objects that must free memory with its device current (a
// session's ranks or lanes) may hold a reference to their owner's scope.
#include <cuda_runtime_api.h>

#include <string>

#include "gpu/cuda_check.hpp"

namespace preflight {
namespace detail {

// Whether this thread has selected a device through a DeviceScope; see the top of this file.
inline thread_local bool thread_selected_device = false;

}  // namespace detail

class DeviceScope {
 public:
  // Records the calling thread's device and switches nothing; set() switches.
  DeviceScope() noexcept {
    int device = -1;
    if (detail::thread_selected_device && cudaGetDevice(&device) == cudaSuccess) {
      previous_ = device;
    }
  }
  // Records the calling thread's device and makes `device` current; throws CudaError as set().
  explicit DeviceScope(int device) : DeviceScope() { set(device); }
  // Restores the recorded device, where this scope switched away from it.
  ~DeviceScope() {
    if (previous_ >= 0 && current_ >= 0 && current_ != previous_) {
      PREFLIGHT_CUDA_CHECK_NOEXCEPT(cudaSetDevice(previous_));
    }
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  DeviceScope(DeviceScope&&) = delete;
  DeviceScope& operator=(DeviceScope&&) = delete;

  // Makes `device` current until the next set() or the end of the scope, which restores the
  // device recorded at its start. Throws CudaError, summary() "cudaSetDevice: <message>".
  void set(int device) {
    PREFLIGHT_CUDA_CHECK(cudaSetDevice(device));
    selected(device);
  }
  // set() without throwing: the runtime's status, cudaSuccess when `device` is current.
  [[nodiscard]] cudaError_t try_set(int device) noexcept {
    const cudaError_t status = cudaSetDevice(device);
    if (status == cudaSuccess) selected(device);
    return status;
  }
  // A failed try_set() in words, as set()'s CudaError::summary() puts it:
  // "cudaSetDevice: invalid device ordinal".
  static std::string failure_text(cudaError_t status) {
    return std::string("cudaSetDevice: ") + cudaGetErrorString(status);
  }

 private:
  void selected(int device) noexcept {
    current_ = device;
    detail::thread_selected_device = true;
  }

  int previous_ = -1;  // -1: nothing to restore
  int current_ = -1;   // -1: this scope has not switched
};

}  // namespace preflight
