#include "net/efa_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include "gpu/loaded_library.hpp"
#include "net/verbs_library.hpp"

namespace preflight {
namespace {

constexpr const char* kDefaultEfaLibrary = "libefa.so.1";

// Both are needed: without efadv_query_device the device's operations are unknown, without
// efadv_create_qp_ex no SRD queue pair can be made.
constexpr const char* kEfaRequired[] = {"efadv_query_device", "efadv_create_qp_ex"};

}  // namespace

bool is_efa_device(const ibv_device& device, const ibv_device_attr& attr) {
  if (attr.vendor_id == kAmazonVendorId) return true;
  return device.node_type == IBV_NODE_UNSPECIFIED &&
         device.transport_type == IBV_TRANSPORT_UNSPECIFIED;
}

std::string EfaLibrary::library_name_from_env() {
  const char* name = std::getenv("PREFLIGHT_EFADV_LIBRARY");
  return name != nullptr && name[0] != '\0' ? name : kDefaultEfaLibrary;
}

EfaLibrary::EfaLibrary(const std::string& library_name) {
  const std::string prefix = library_name + " not loadable: ";
  std::string why;
  void* handle = open_library(library_name, why);
  if (handle == nullptr) {
    error_ = prefix + why;
    return;
  }
  why = first_missing_symbol(handle, kEfaRequired, library_name);
  if (!why.empty()) {
    error_ = prefix + why;
    dlclose(handle);  // nothing from it is in use yet
    return;
  }
  api_.query_device = Symbol{dlsym(handle, "efadv_query_device")};
  api_.create_qp_ex = Symbol{dlsym(handle, "efadv_create_qp_ex")};
  ok_ = true;
}

const EfaLibrary& LazyEfaLibrary::get() const {
  std::call_once(loaded_, [this] {
    library_ = std::make_unique<EfaLibrary>(EfaLibrary::library_name_from_env());
  });
  return *library_;
}

std::string query_efa_caps(const EfaLibrary& library, ibv_context* context,
                           const std::string& device, EfaCaps& caps) {
  // inlen is this header's size: the library fills what it knows and zeroes the rest, so a
  // header older or newer than the library is fine.
  efadv_device_attr attr{};
  const int code = verbs_status(
      library.api().query_device(context, &attr, static_cast<std::uint32_t>(sizeof(attr))));
  if (code != 0) return verbs_failure("efadv_query_device", device, code);
  caps.device_caps = attr.device_caps;
  caps.rdma_read = (attr.device_caps & kEfaCapRdmaRead) != 0;
  caps.rdma_write = (attr.device_caps & kEfaCapRdmaWrite) != 0;
  caps.max_rdma_size = attr.max_rdma_size;
  caps.max_sq_wr = attr.max_sq_wr;
  return "";
}

}  // namespace preflight
