#include "gpu/cuda_driver.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "gpu/loaded_library.hpp"
#include "gpu/runtime_library.hpp"

namespace preflight {

CudaDriverProbe probe_cuda_driver() {
  CudaDriverProbe out;
  // The loader path only: the driver's libcuda is never in a toolkit folder (those hold stubs).
  const RuntimeLibrary lib = load_runtime_library(
      {"CUDA driver", "libcuda.so.1", "PREFLIGHT_CUDA_DRIVER_LIBRARY", "cuDriverGetVersion"}, {""});
  if (!lib.found()) {
    out.error = lib.problem();
    return out;
  }
  out.path = lib.path;
  using GetVersion = int (*)(int*);  // CUresult cuDriverGetVersion(int*); CUDA_SUCCESS is 0
  const GetVersion get_version = Symbol{dlsym(lib.handle, "cuDriverGetVersion")};
  int version = 0;
  const int status = get_version(&version);
  if (status != 0) {
    out.error = "cuDriverGetVersion failed with CUresult " + std::to_string(status);
  } else {
    out.version = version;
  }
  return out;
}

CudaBuildRequirement cuda_build_requirement() {
  CudaBuildRequirement r;
  r.toolkit_version = CUDART_VERSION;
  const int major = CUDART_VERSION / 1000;
  r.driver_cuda_version = major * 1000;
  // NVIDIA's CUDA release notes, table "CUDA Toolkit and Minimum Required Driver Version for
  // CUDA Minor Version Compatibility": >= 525.60.13 for 12.x, >= 580 for 13.x.
  r.driver_branch = major >= 13 ? "R580" : major == 12 ? "R525" : "R450";
  return r;
}

std::string format_cuda_version(int version) {
  if (version <= 0) return {};
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace preflight
