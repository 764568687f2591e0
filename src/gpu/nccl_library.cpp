#include "gpu/nccl_library.hpp"

#include <dlfcn.h>

#include <string>
#include <utility>

#include "gpu/loaded_library.hpp"
#include "gpu/runtime_libraries.hpp"

namespace preflight {

NcclLibrary::NcclLibrary()
    : NcclLibrary(load_runtime_library(nccl_library_spec(),
                                       runtime_library_folders(CUDART_VERSION / 1000))) {}

NcclLibrary::NcclLibrary(RuntimeLibrary library) : library_(std::move(library)) {
  if (!library_.found()) {
    error_ = library_.problem();
    return;
  }
  void* handle = library_.handle;
  const std::string& path = library_.path;
  const auto get = [handle](const char* name) { return Symbol{dlsym(handle, name)}; };
  // Non-blocking communicators (ncclConfig_t, ncclCommFinalize) came with NCCL 2.14.
  const char* missing = nullptr;  // the first required function that is absent
  const auto need = [&get, &missing](const char* name) {
    const Symbol symbol = get(name);
    if (symbol.address == nullptr && missing == nullptr) missing = name;
    return symbol;
  };
  api_.get_version = get("ncclGetVersion");
  api_.get_unique_id = need("ncclGetUniqueId");
  api_.comm_init_rank_config = need("ncclCommInitRankConfig");
  api_.group_start = need("ncclGroupStart");
  api_.group_end = need("ncclGroupEnd");
  api_.all_gather = need("ncclAllGather");
  api_.all_reduce = need("ncclAllReduce");
  api_.comm_get_async_error = need("ncclCommGetAsyncError");
  api_.comm_abort = need("ncclCommAbort");
  api_.comm_finalize = need("ncclCommFinalize");
  api_.comm_destroy = need("ncclCommDestroy");
  api_.get_error_string = need("ncclGetErrorString");
  api_.get_last_error = get("ncclGetLastError");
  if (missing != nullptr) {
    error_ = path + ": no symbol " + missing + " (NCCL 2.14 or newer needed)";
    api_ = NcclApi{};
    return;
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
