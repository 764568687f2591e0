#pragma once
// What the libraries loaded at run time share (NVML and NCCL here, libibverbs in net/): each is
// opened with dlopen, never linked, so the binary starts on a node without it, and its
// functions are resolved with dlsym. Host code only: no CUDA header.
#include <dlfcn.h>

#include <string>

namespace preflight {

// A dlsym() result that converts to whichever function pointer type it is assigned to.
struct Symbol {
  void* address;
  template <class Fn>
  operator Fn() const {  // NOLINT(google-explicit-constructor): that conversion is the point
    return reinterpret_cast<Fn>(address);
  }
};

// dlopen with RTLD_NOW | RTLD_LOCAL: the library's symbols (and a CUDA runtime it may carry)
// stay out of the global namespace. Null when it cannot be loaded, with `error` set to
// dlerror()'s message, or "<path>: cannot be loaded" where there is none.
inline void* open_library(const std::string& path, std::string& error) {
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* message = dlerror();
    error = message != nullptr ? message : path + ": cannot be loaded";
  }
  return handle;
}

// Why the first of `names` that `handle` lacks is missing: dlerror()'s message, or
// "<path>: no symbol <name>" where there is none. Empty when every one is there.
template <class Names>
std::string first_missing_symbol(void* handle, const Names& names, const std::string& path) {
  for (const char* name : names) {
    dlerror();
    if (dlsym(handle, name) == nullptr) {
      const char* message = dlerror();
      return message != nullptr ? message : path + ": no symbol " + name;
    }
  }
  return {};
}

}  // namespace preflight
