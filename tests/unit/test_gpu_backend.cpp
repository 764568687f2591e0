// Host-side parts of the GPU backend, and the backend's behaviour where NVML cannot be loaded.
// Must pass on build machines without a GPU and on GPU nodes alike.
#include <catch2/catch.hpp>

#include <stdlib.h>  // setenv, unsetenv

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include "gpu/nccl_version.hpp"
#include "gpu/pci_address.hpp"
#include "kernels/probe_kernel.hpp"
#include "preflight/engine/node_backend.hpp"
#include "support/scoped_env.hpp"

using preflight::test::ScopedEnv;

TEST_CASE("gpu backend: NVML and CUDA spellings of a PCI bus id normalize to one form") {
  using preflight::normalize_pci_bus_id;
  CHECK(normalize_pci_bus_id("00000000:1B:00.0") == "0000:1b:00.0");  // NVML
  CHECK(normalize_pci_bus_id("0000:1b:00.0") == "0000:1b:00.0");      // CUDA
  CHECK(normalize_pci_bus_id("0000:1B:00.0") == "0000:1b:00.0");
  CHECK(normalize_pci_bus_id("1b:00.0") == "0000:1b:00.0");  // lspci, no domain
  CHECK(normalize_pci_bus_id("00000009:01:00.0") == "0009:01:00.0");
  CHECK(normalize_pci_bus_id("0001:AB:1f.7") == "0001:ab:1f.7");
  CHECK(normalize_pci_bus_id("10000:00:00.0") == "10000:00:00.0");  // VMD domains are wider
  CHECK(normalize_pci_bus_id("00000000:1B:00.0") == normalize_pci_bus_id("0000:1b:00.0"));
  CHECK(normalize_pci_bus_id("0000:1b:00.0") != normalize_pci_bus_id("0000:1c:00.0"));

  const auto address = preflight::parse_pci_address("0000:C1:1f.3");
  REQUIRE(address);
  CHECK(address->domain == 0);
  CHECK(address->bus == 0xc1);
  CHECK(address->device == 0x1f);
  CHECK(address->function == 3);
}

TEST_CASE("gpu backend: malformed PCI bus ids are rejected") {
  using preflight::normalize_pci_bus_id;
  for (const char* garbage :
       {"", "garbage", "0000:1b:00", "0000:1b:00.", "0000:1b.0", ":1b:00.0", "0000::00.0",
        "0000:1g:00.0", "0000:1b:20.0", "0000:1b:00.8", "0000:100:00.0", "123456789:00:00.0",
        " 0000:1b:00.0", "0000:1b:00.0 ", "0000:1b:00.0.0", "0:0:0:00.0", "0000:1b:-1.0"}) {
    INFO("input: '" << garbage << "'");
    CHECK_FALSE(normalize_pci_bus_id(garbage));
  }
}

TEST_CASE("gpu backend: the probe pattern is deterministic and varies with seed and index") {
  using preflight::probe_pattern_word;
  CHECK(probe_pattern_word(0, 1) == probe_pattern_word(0, 1));
  CHECK(probe_pattern_word(12345, 0xdeadbeef) == probe_pattern_word(12345, 0xdeadbeef));

  for (std::uint32_t seed : {0u, 1u, 0x9e3779b9u, 0xffffffffu}) {
    std::set<std::uint32_t> words;
    int same_as_next_index = 0;
    int same_as_next_seed = 0;
    for (std::size_t i = 0; i < 4096; ++i) {
      words.insert(probe_pattern_word(i, seed));
      if (probe_pattern_word(i, seed) == probe_pattern_word(i + 1, seed)) ++same_as_next_index;
      if (probe_pattern_word(i, seed) == probe_pattern_word(i, seed + 1)) ++same_as_next_seed;
    }
    CHECK(same_as_next_index == 0);
    CHECK(same_as_next_seed == 0);
    CHECK(words.size() == 4096);  // no repeats at all within a stretch of the buffer
  }
  // Indices beyond 32 bits still matter.
  CHECK(probe_pattern_word(std::size_t{1} << 32, 7) != probe_pattern_word(0, 7));
  // Not trivially the index or the seed.
  CHECK(probe_pattern_word(0, 0) != 0);
}

TEST_CASE("gpu backend: NCCL version codes format as major.minor.patch") {
  CHECK(preflight::format_nccl_version(22809) == "2.28.9");
  CHECK(preflight::format_nccl_version(21903) == "2.19.3");
  CHECK(preflight::format_nccl_version(20900) == "2.9.0");
  CHECK(preflight::format_nccl_version(2708) == "2.7.8");  // before 2.9: major*1000
  CHECK(preflight::format_nccl_version(0).empty());
  CHECK(preflight::format_nccl_version(-1).empty());
}

TEST_CASE("gpu backend: discover reports an NVML library that cannot be loaded") {
  const char* const missing = "/nonexistent/preflight-test/libnvidia-ml.so.1";
  const ScopedEnv env("PREFLIGHT_NVML_LIBRARY", missing);
  const auto backend = preflight::make_system_node_backend();
  REQUIRE(backend);

  preflight::NodeReading node;
  REQUIRE_NOTHROW(node = backend->discover());
  CHECK_FALSE(node.nvml_loaded);
  CHECK(node.driver_version.empty());
  if (node.nvml_error == "built without CUDA support") {
    CHECK(node.gpus.empty());  // the null backend of a -DPREFLIGHT_WITH_CUDA=OFF build
  } else {
    CHECK(node.nvml_error.find(missing) != std::string::npos);
    CHECK(node.cuda_runtime_version > 0);
  }

  if (node.cuda_device_count == 0) {
    CHECK(node.gpus.empty());
  } else {
    // A GPU node: without NVML the GPUs come from CUDA alone, numbered by ordinal.
    CHECK(node.cuda_error.empty());
    REQUIRE(node.gpus.size() == static_cast<std::size_t>(node.cuda_device_count));
    for (std::size_t i = 0; i < node.gpus.size(); ++i) {
      CHECK(node.gpus[i].cuda_ordinal == static_cast<int>(i));
      CHECK(node.gpus[i].index == static_cast<int>(i));
      CHECK_FALSE(node.gpus[i].name.empty());
    }
  }

  REQUIRE_NOTHROW(backend->read_health(node));
  CHECK_FALSE(node.nvml_loaded);
  for (const preflight::GpuReading& gpu : node.gpus) {
    CHECK_FALSE(gpu.ecc_enabled);  // nothing to read without NVML
    CHECK_FALSE(gpu.temperature_c);
    CHECK_FALSE(gpu.foreign_processes);
  }
}

TEST_CASE("gpu backend: probing a GPU that CUDA does not see fails without touching CUDA") {
  const auto backend = preflight::make_system_node_backend();
  preflight::GpuReading gpu;
  gpu.cuda_ordinal = -1;
  REQUIRE_NOTHROW(backend->probe(gpu, preflight::SteadyClock::now() + std::chrono::seconds(5)));
  REQUIRE(gpu.responsive);
  CHECK_FALSE(*gpu.responsive);
  CHECK_FALSE(gpu.probe_error.empty());
}

TEST_CASE("gpu backend: probing without a usable CUDA device reports the error") {
  const ScopedEnv env("PREFLIGHT_NVML_LIBRARY", "/nonexistent/preflight-test/libnvidia-ml.so.1");
  const auto backend = preflight::make_system_node_backend();
  const preflight::NodeReading node = backend->discover();
  if (node.cuda_device_count != 0) return;  // a GPU node: the gpu tests probe for real

  preflight::GpuReading gpu;
  gpu.cuda_ordinal = 0;
  REQUIRE_NOTHROW(backend->probe(gpu, preflight::SteadyClock::now() + std::chrono::seconds(5)));
  REQUIRE(gpu.responsive);
  CHECK_FALSE(*gpu.responsive);
  CHECK_FALSE(gpu.probe_error.empty());
  CHECK(gpu.probe_ms == 0.0);
}
