#pragma once
// libefa (rdma-core's AWS EFA provider and its efadv_* "direct verbs") loaded at run time, like
// libibverbs (verbs_library.hpp): the binary must start where rdma-core is missing or older, and
// only a node whose inventory has an EFA device needs the library at all, so it is loaded at the
// first EFA device. efadv.h supplies types only.
//
// EFA offers no reliable-connected queue pairs. Its RDMA reads and writes go over SRD (Scalable
// Reliable Datagram) queue pairs, which only efadv_create_qp_ex creates, and whether the device
// does RDMA read, write, both or neither only efadv_query_device says.
#include <infiniband/efadv.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace preflight {

// The PCI vendor ID of Amazon (Annapurna Labs), which every EFA device reports.
inline constexpr std::uint32_t kAmazonVendorId = 0x1d0f;
// efadv_device_attr.device_caps bits (rdma-core's providers/efa/efadv.h). RDMA write,
// EFADV_DEVICE_ATTR_CAPS_RDMA_WRITE, came with rdma-core 46: Debian 12's rdma-core 44 header
// lacks it, so both bits are spelled out here rather than taken from the header.
inline constexpr std::uint32_t kEfaCapRdmaRead = 1u << 0;
inline constexpr std::uint32_t kEfaCapRdmaWrite = 1u << 3;

// Whether an opened device is an EFA device: Amazon's vendor ID, or the node and transport type
// EFA's kernel driver reports (unspecified: neither an InfiniBand CA nor an iWARP RNIC), which
// no InfiniBand or RoCE device has.
bool is_efa_device(const ibv_device& device, const ibv_device_attr& attr);

class EfaLibrary {
 public:
  struct Api {
    decltype(&::efadv_query_device) query_device = nullptr;
    decltype(&::efadv_create_qp_ex) create_qp_ex = nullptr;
  };

  // PREFLIGHT_EFADV_LIBRARY when set and non-empty, else "libefa.so.1".
  static std::string library_name_from_env();

  // Loads `library_name` and resolves the functions; never throws. Never unloaded, for the same
  // reason as libibverbs (verbs_library.hpp).
  explicit EfaLibrary(const std::string& library_name);
  EfaLibrary(const EfaLibrary&) = delete;
  EfaLibrary& operator=(const EfaLibrary&) = delete;

  bool ok() const { return ok_; }
  // "libefa.so.1 not loadable: libefa.so.1: cannot open shared object file: ...": what a
  // transfer on an EFA device reports when the library is missing.
  const std::string& error() const { return error_; }
  const Api& api() const { return api_; }

 private:
  Api api_;
  bool ok_ = false;
  std::string error_;
};

// The library, loaded at the first call of get() (by the inventory or a transfer that meets an
// EFA device) and shared by every later one; get() is safe from several threads.
class LazyEfaLibrary {
 public:
  const EfaLibrary& get() const;

 private:
  mutable std::once_flag loaded_;
  mutable std::unique_ptr<EfaLibrary> library_;
};

// What efadv_query_device says of one device.
struct EfaCaps {
  bool rdma_read = false;
  bool rdma_write = false;
  std::uint32_t max_rdma_size = 0;  // the largest RDMA read or write; 0 when not reported
  std::uint32_t max_sq_wr = 0;      // send queue depth of an SRD queue pair
  std::uint32_t device_caps = 0;    // the raw bits, for messages
};

// efadv_query_device on an open EFA device. "" on success, else
// "efadv_query_device(<device>): <strerror>".
std::string query_efa_caps(const EfaLibrary& library, ibv_context* context,
                           const std::string& device, EfaCaps& caps);

}  // namespace preflight
