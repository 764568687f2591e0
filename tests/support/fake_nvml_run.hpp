#pragma once
// Running the real binary on the GPUs the fake NVML (tests/fake_nvml) describes: the options
// that load it, shared by the integration tests that need fake GPUs. FAKE_NVML_PATH is defined
// for the integration tests of a CUDA build (tests/CMakeLists.txt).
#include <string>

#include "support/subprocess.hpp"

namespace preflight::test {

// Options for a run on the fake GPUs that `config` (FAKE_NVML_CONFIG lines) describes. The CUDA
// runtime is shown no device, so a real GPU never joins the fake ones.
inline RunOptions fake_nvml_options(const TempDir& dir, const std::string& config) {
  const std::string path = dir.file("fake-nvml.conf");
  write_file(path, config);
  RunOptions options;
  options.env = {{"PREFLIGHT_NVML_LIBRARY", FAKE_NVML_PATH},
                 {"FAKE_NVML_CONFIG", path},
                 {"CUDA_VISIBLE_DEVICES", ""},
                 // The PCI bus of the machine running the test does not hold the fake GPUs:
                 // no comparison with it (preflight compares only when this is unset or "all").
                 {"NVIDIA_VISIBLE_DEVICES", "none"}};
  return options;
}

}  // namespace preflight::test
