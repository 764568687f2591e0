#include "gpu/runtime_libraries.hpp"

#include <dlfcn.h>

#include <string>
#include <utility>

#include "gpu/cublas_library.hpp"
#include "gpu/cuda_driver.hpp"
#include "gpu/loaded_library.hpp"
#include "gpu/nccl_version.hpp"
#include "preflight/engine/engines.hpp"

namespace preflight {
namespace {

RuntimeLibraryReading reading_of(const RuntimeLibrary& lib, std::string version) {
  RuntimeLibraryReading r;
  r.name = lib.spec.name;
  r.soname = lib.spec.soname;
  r.path = lib.path;
  r.version = std::move(version);
  r.problem = lib.problem();
  return r;
}

std::string nccl_version_of(const RuntimeLibrary& lib) {
  if (!lib.found()) return {};
  using GetVersion = int (*)(int*);  // ncclResult_t ncclGetVersion(int*); ncclSuccess is 0
  const GetVersion get_version = Symbol{dlsym(lib.handle, "ncclGetVersion")};
  int code = 0;
  if (get_version == nullptr || get_version(&code) != 0) return {};
  return format_nccl_version(code);
}

}  // namespace

RuntimeLibrarySpec nccl_library_spec() {
  return {"NCCL", "libnccl.so.2", "PREFLIGHT_NCCL_LIBRARY", "ncclGetUniqueId"};
}

std::vector<RuntimeLibraryReading> runtime_library_readings() {
  const int major = cuda_build_requirement().toolkit_version / 1000;
  const std::vector<std::string> folders = runtime_library_folders(major);
  std::vector<RuntimeLibraryReading> out;
  const CublasLibrary cublas(load_runtime_library(cublas_library_spec(), folders));
  RuntimeLibraryReading c;
  c.name = "cuBLAS";
  c.soname = cublas_library_spec().soname;
  c.path = cublas.ok() ? cublas.path() : std::string();
  c.version = cublas.version();
  c.problem = cublas.problem();
  out.push_back(std::move(c));
  const RuntimeLibrary nccl = load_runtime_library(nccl_library_spec(), folders);
  out.push_back(reading_of(nccl, nccl_version_of(nccl)));
  return out;
}

std::string describe_gpu_runtime() {
  const CudaBuildRequirement needs = cuda_build_requirement();
  std::string text = "built with CUDA " + format_cuda_version(needs.toolkit_version) +
                     " (runtime linked statically); needs an NVIDIA driver of CUDA " +
                     format_cuda_version(needs.driver_cuda_version) + " or newer (branch " +
                     needs.driver_branch + " or newer)\n";
  const CudaDriverProbe driver = probe_cuda_driver();
  text +=
      "driver: " +
      (driver.version > 0 ? "CUDA " + format_cuda_version(driver.version) + " (" + driver.path + ")"
                          : "not found (libcuda.so.1)") +
      "\n";
  for (const RuntimeLibraryReading& lib : runtime_library_readings()) {
    text +=
        lib.name + ": " +
        (lib.path.empty() ? "not found (" + lib.soname + ")"
                          : (lib.version.empty() ? "" : lib.version + " ") + "(" + lib.path + ")") +
        "\n";
  }
  return text;
}

}  // namespace preflight
