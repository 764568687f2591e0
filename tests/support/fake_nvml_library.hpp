#pragma once
// The real NVML code path against the fake NVML of tests/fake_nvml, in a unit test's own process:
// for one test, the system GPU backend loads the fake configured with the given lines.
#include <stdlib.h>  // mkstemp
#include <unistd.h>  // write, close

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "preflight/engine/node_backend.hpp"
#include "support/scoped_env.hpp"

namespace preflight::test {

inline std::string write_temp_file(const std::string& contents) {
  const char* dir = std::getenv("TMPDIR");
  std::string path =
      std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/preflight-fake-nvml-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) throw std::runtime_error("mkstemp " + path + " failed");
  const bool written =
      write(fd, contents.data(), contents.size()) == static_cast<ssize_t>(contents.size());
  close(fd);
  if (!written) throw std::runtime_error("cannot write " + path);
  return path;
}

// For one test: the system GPU backend loads the fake NVML, configured with `config` (lines of
// the FAKE_NVML_CONFIG file); the environment is restored and the file removed afterwards.
class FakeNvml {
 public:
  explicit FakeNvml(const std::string& config)
      : config_path_(write_temp_file(config)),
        library_("PREFLIGHT_NVML_LIBRARY", FAKE_NVML_PATH),
        config_("FAKE_NVML_CONFIG", config_path_.c_str()),
        // A real GPU would be listed too (as CUDA-only); each test case runs in a process of
        // its own under ctest, so this comes before CUDA initializes.
        cuda_("CUDA_VISIBLE_DEVICES", "") {}
  ~FakeNvml() { std::remove(config_path_.c_str()); }
  FakeNvml(const FakeNvml&) = delete;
  FakeNvml& operator=(const FakeNvml&) = delete;

  // discover(), then read_health() unless told otherwise, with a fresh backend.
  NodeReading read(bool health = true) const {
    const auto backend = make_system_node_backend();
    NodeReading node = backend->discover();
    if (health) backend->read_health(node);
    return node;
  }

 private:
  std::string config_path_;
  ScopedEnv library_;
  ScopedEnv config_;
  ScopedEnv cuda_;
};

}  // namespace preflight::test
