#include "gpu/nccl_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <utility>

namespace preflight {
namespace {

constexpr const char* kDefaultLibrary = "libnccl.so.2";

// A dlsym() result that converts to whichever function pointer type it is assigned to.
struct Symbol {
  void* address;
  template <class Fn>
  operator Fn*() const {  // NOLINT(google-explicit-constructor): the point of this helper
    return reinterpret_cast<Fn*>(address);
  }
};

}  // namespace

std::string NcclLibrary::path_from_env() {
  const char* path = std::getenv("PREFLIGHT_NCCL_LIBRARY");
  return path != nullptr && *path != '\0' ? path : kDefaultLibrary;
}

NcclLibrary::NcclLibrary(const std::string& path) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* message = dlerror();
    error_ = message != nullptr ? message : path + ": cannot be loaded";
    return;
  }
  const auto get = [handle](const char* name) { return Symbol{dlsym(handle, name)}; };
  api_.get_version = get("ncclGetVersion");
  api_.get_unique_id = get("ncclGetUniqueId");
  api_.comm_init_rank_config = get("ncclCommInitRankConfig");
  api_.group_start = get("ncclGroupStart");
  api_.group_end = get("ncclGroupEnd");
  api_.all_gather = get("ncclAllGather");
  api_.all_reduce = get("ncclAllReduce");
  api_.comm_get_async_error = get("ncclCommGetAsyncError");
  api_.comm_abort = get("ncclCommAbort");
  api_.comm_finalize = get("ncclCommFinalize");
  api_.comm_destroy = get("ncclCommDestroy");
  api_.get_error_string = get("ncclGetErrorString");
  api_.get_last_error = get("ncclGetLastError");
  // Non-blocking communicators (ncclConfig_t, ncclCommFinalize) came with NCCL 2.14.
  const std::pair<const char*, const void*> required[] = {
      {"ncclGetUniqueId", reinterpret_cast<const void*>(api_.get_unique_id)},
      {"ncclCommInitRankConfig", reinterpret_cast<const void*>(api_.comm_init_rank_config)},
      {"ncclGroupStart", reinterpret_cast<const void*>(api_.group_start)},
      {"ncclGroupEnd", reinterpret_cast<const void*>(api_.group_end)},
      {"ncclAllGather", reinterpret_cast<const void*>(api_.all_gather)},
      {"ncclAllReduce", reinterpret_cast<const void*>(api_.all_reduce)},
      {"ncclCommGetAsyncError", reinterpret_cast<const void*>(api_.comm_get_async_error)},
      {"ncclCommAbort", reinterpret_cast<const void*>(api_.comm_abort)},
      {"ncclCommFinalize", reinterpret_cast<const void*>(api_.comm_finalize)},
      {"ncclCommDestroy", reinterpret_cast<const void*>(api_.comm_destroy)},
      {"ncclGetErrorString", reinterpret_cast<const void*>(api_.get_error_string)},
  };
  for (const auto& [name, address] : required) {
    if (address == nullptr) {
      error_ = path + ": no symbol " + name + " (NCCL 2.14 or newer needed)";
      api_ = NcclApi{};
      return;
    }
  }
  if (api_.get_version != nullptr && api_.get_version(&version_code_) != ncclSuccess) {
    version_code_ = 0;
  }
}

std::string NcclLibrary::describe(const char* call, ncclResult_t result, ncclComm_t comm) const {
  std::string text = std::string(call) + ": ";
  text += api_.get_error_string != nullptr ? api_.get_error_string(result)
                                           : "NCCL error " + std::to_string(result);
  if (api_.get_last_error != nullptr) {
    const char* last = api_.get_last_error(comm);
    if (last != nullptr && *last != '\0') text += std::string("/") + last;
  }
  return text;
}

}  // namespace preflight
