#pragma once
// What the installed NVIDIA driver supports, read before the CUDA runtime is touched: the
// driver's libcuda.so.1 is opened with dlopen and asked cuDriverGetVersion, which needs no
// cuInit and creates no context. A driver older than this build's CUDA major then gets a finding
// that names both versions and the remedy (CUDA_DRIVER_TOO_OLD), not the runtime's "driver
// version is insufficient". Host code only.
#include <string>

namespace preflight {

struct CudaDriverProbe {
  std::string path;   // the libcuda loaded; empty when none could be
  int version = 0;    // 12040 for CUDA 12.4; 0 when unknown
  std::string error;  // why the version is unknown
};

// libcuda.so.1 from the loader path, or the file named by $PREFLIGHT_CUDA_DRIVER_LIBRARY (the
// tests' fake driver). Never throws.
CudaDriverProbe probe_cuda_driver();

// What this build needs, from the toolkit it was compiled with: a driver of CUDA <major>.0 or
// newer (CUDA's minor-version compatibility: a build with 12.x runs on any 12.y driver), which
// NVIDIA ships from driver branch R525 for CUDA 12 and R580 for CUDA 13 (docs/install.md).
struct CudaBuildRequirement {
  int toolkit_version = 0;      // 13000 for 13.0 (CUDART_VERSION)
  int driver_cuda_version = 0;  // 13000
  std::string driver_branch;    // "R580"
};
CudaBuildRequirement cuda_build_requirement();

// "13.0" for 13000.
std::string format_cuda_version(int version);

}  // namespace preflight
