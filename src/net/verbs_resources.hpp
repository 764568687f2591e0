#pragma once
// Move-only owners of verbs objects and of the host memory a transfer registers. Every owner has
// release(): destroying a queue pair, deregistering memory or closing a device are commands to
// the device's firmware, which wait forever on a hung device. A transfer that ran out of time
// therefore abandons (leaks) everything instead of hanging the tool; the process ends soon after.
// Leaked host memory stays allocated as well, since a device that did not answer may still write
// into it.
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "model/abandoned.hpp"
#include "net/verbs_library.hpp"

namespace preflight {

// Owns one verbs object; `destroy` (resolved from libibverbs) frees it.
template <class T>
class VerbsHandle {
 public:
  using Destroy = int (*)(T*);

  VerbsHandle() = default;
  // `what` names the destroy function in the message printed when it fails.
  VerbsHandle(T* handle, Destroy destroy, const char* what) noexcept
      : handle_(handle), destroy_(destroy), what_(what) {}
  ~VerbsHandle() { reset(); }
  VerbsHandle(const VerbsHandle&) = delete;
  VerbsHandle& operator=(const VerbsHandle&) = delete;
  VerbsHandle(VerbsHandle&& other) noexcept
      : handle_(other.release()), destroy_(other.destroy_), what_(other.what_) {}
  VerbsHandle& operator=(VerbsHandle&& other) noexcept {
    if (this != &other) {
      reset();
      destroy_ = other.destroy_;
      what_ = other.what_;
      handle_ = other.release();
    }
    return *this;
  }

  T* get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  T* release() noexcept { return std::exchange(handle_, nullptr); }
  // Gives the object up without destroying it (see above), marked as a deliberate leak.
  void abandon() noexcept { mark_abandoned(release()); }
  void reset() noexcept {
    if (handle_ == nullptr || destroy_ == nullptr) return;
    const int code = verbs_status(destroy_(release()));
    // Destructors must not throw, and stderr is the only channel they have.
    if (code != 0) std::fprintf(stderr, "preflight: %s: %s\n", what_, std::strerror(code));
  }

 private:
  T* handle_ = nullptr;
  Destroy destroy_ = nullptr;
  const char* what_ = "";
};

using VerbsContext = VerbsHandle<ibv_context>;
using VerbsPd = VerbsHandle<ibv_pd>;
using VerbsCq = VerbsHandle<ibv_cq>;
using VerbsQp = VerbsHandle<ibv_qp>;
using VerbsMr = VerbsHandle<ibv_mr>;
using VerbsAh = VerbsHandle<ibv_ah>;  // an SRD queue pair's address of its peer (EFA)

// The device list of ibv_get_device_list. Devices opened from it stay valid after it is freed.
class VerbsDeviceList {
 public:
  explicit VerbsDeviceList(const VerbsLibrary& library) : library_(library) {
    errno = 0;
    list_ = library_.api().get_device_list(&count_);
    error_ = list_ == nullptr ? (errno != 0 ? errno : EIO) : 0;
    if (list_ == nullptr) count_ = 0;
  }
  ~VerbsDeviceList() {
    if (list_ != nullptr) library_.api().free_device_list(list_);
  }
  VerbsDeviceList(const VerbsDeviceList&) = delete;
  VerbsDeviceList& operator=(const VerbsDeviceList&) = delete;

  // 0, or the errno value of a failed ibv_get_device_list. ENOSYS means the kernel has no
  // RDMA support (no /sys/class/infiniband_verbs): no devices, not an error.
  int error() const { return error_; }
  int size() const { return count_; }
  ibv_device* operator[](int index) const { return list_[index]; }
  std::string name(int index) const {
    const char* text = library_.api().get_device_name(list_[index]);
    return text != nullptr ? text : "";
  }
  // Null when no device has that name.
  ibv_device* find(const std::string& device_name) const {
    for (int i = 0; i < count_; ++i) {
      if (name(i) == device_name) return list_[i];
    }
    return nullptr;
  }

 private:
  const VerbsLibrary& library_;
  ibv_device** list_ = nullptr;
  int count_ = 0;
  int error_ = 0;
};

// Page-aligned host memory (aligned_alloc), so registration pins whole pages of ours only.
class HostBuffer {
 public:
  HostBuffer() = default;
  // Rounds `bytes` up to whole pages; get() is null when the allocation failed.
  explicit HostBuffer(std::size_t bytes) {
    const long page = sysconf(_SC_PAGESIZE);
    const std::size_t alignment = page > 0 ? static_cast<std::size_t>(page) : 4096;
    size_ = (bytes + alignment - 1) / alignment * alignment;
    memory_ = std::aligned_alloc(alignment, size_);
    if (memory_ == nullptr) size_ = 0;
  }
  ~HostBuffer() { std::free(memory_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  HostBuffer(HostBuffer&& other) noexcept
      : memory_(std::exchange(other.memory_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  HostBuffer& operator=(HostBuffer&& other) noexcept {
    if (this != &other) {
      std::free(memory_);
      memory_ = std::exchange(other.memory_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  unsigned char* get() const noexcept { return static_cast<unsigned char*>(memory_); }
  std::size_t size() const noexcept { return size_; }
  void* release() noexcept {
    size_ = 0;
    return std::exchange(memory_, nullptr);
  }
  // Gives the memory up without freeing it (a device may still write into it), marked as a
  // deliberate leak.
  void abandon() noexcept { mark_abandoned(release()); }

 private:
  void* memory_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace preflight
