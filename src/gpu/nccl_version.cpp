#include "gpu/nccl_version.hpp"

#include <dlfcn.h>

#ifdef PREFLIGHT_HAVE_NCCL_HEADER
#include <nccl.h>
#endif

namespace preflight {
namespace {

#ifdef PREFLIGHT_HAVE_NCCL_HEADER
using GetVersionFn = ncclResult_t (*)(int*);
#else
using GetVersionFn = int (*)(int*);  // ncclResult_t is a C enum; ncclSuccess is 0.
#endif

}  // namespace

std::string format_nccl_version(int code) {
  if (code <= 0) return {};
  int major = 0;
  int minor = 0;
  if (code >= 20900) {
    major = code / 10000;
    minor = code % 10000 / 100;
  } else {
    major = code / 1000;
    minor = code % 1000 / 100;
  }
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string nccl_runtime_version() {
  // RTLD_LOCAL keeps NCCL's symbols (and the CUDA runtime it carries) out of the global
  // namespace, where they could clash with this binary's static cudart.
  void* library = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return {};
  std::string version;
  if (void* symbol = dlsym(library, "ncclGetVersion")) {
    const auto get_version = reinterpret_cast<GetVersionFn>(symbol);
    int code = 0;
    if (static_cast<int>(get_version(&code)) == 0) version = format_nccl_version(code);
  }
  dlclose(library);
  return version;
}

}  // namespace preflight
