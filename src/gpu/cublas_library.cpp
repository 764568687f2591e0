#include "gpu/cublas_library.hpp"

#include <dlfcn.h>

#include <utility>

#include "gpu/loaded_library.hpp"

namespace preflight {

RuntimeLibrarySpec cublas_library_spec() {
  return {"cuBLAS", "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR), "PREFLIGHT_CUBLAS_LIBRARY",
          "cublasGemmEx"};
}

CublasLibrary::CublasLibrary(RuntimeLibrary library) : library_(std::move(library)) {
  if (!library_.found()) {
    problem_ = library_.problem();
    return;
  }
  void* handle = library_.handle;
  const char* const names[] = {
      "cublasCreate_v2",       "cublasDestroy_v2",      "cublasSetStream_v2",
      "cublasSetWorkspace_v2", "cublasSetAtomicsMode",  "cublasGemmEx",
      "cublasGetStatusName",   "cublasGetStatusString", "cublasGetProperty"};
  problem_ = first_missing_symbol(handle, names, library_.path);
  if (!problem_.empty()) return;
  const auto get = [handle](const char* name) { return Symbol{dlsym(handle, name)}; };
  api_.create = get("cublasCreate_v2");
  api_.destroy = get("cublasDestroy_v2");
  api_.set_stream = get("cublasSetStream_v2");
  api_.set_workspace = get("cublasSetWorkspace_v2");
  api_.set_atomics_mode = get("cublasSetAtomicsMode");
  api_.gemm_ex = get("cublasGemmEx");
  api_.status_name = get("cublasGetStatusName");
  api_.status_string = get("cublasGetStatusString");
  api_.get_property = get("cublasGetProperty");
}

std::string CublasLibrary::version() const {
  if (!ok()) return {};
  int part[3] = {0, 0, 0};
  const libraryPropertyType types[3] = {MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL};
  for (int i = 0; i < 3; ++i) {
    if (api_.get_property(types[i], &part[i]) != CUBLAS_STATUS_SUCCESS) return {};
  }
  return std::to_string(part[0]) + "." + std::to_string(part[1]) + "." + std::to_string(part[2]);
}

std::string cublas_status_text(const CublasApi* api, cublasStatus_t status) {
  const char* name =
      api != nullptr && api->status_name != nullptr ? api->status_name(status) : nullptr;
  const char* text =
      api != nullptr && api->status_string != nullptr ? api->status_string(status) : nullptr;
  if (name == nullptr) return "CUBLAS_STATUS " + std::to_string(static_cast<int>(status));
  return std::string(name) + ": " + (text != nullptr ? text : "unknown status");
}

}  // namespace preflight
