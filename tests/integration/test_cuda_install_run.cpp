// The binary on a node where its own installation is the problem, not the node: a driver older
// than the build's CUDA (a fake libcuda says which version it supports) and the CUDA libraries it
// loads at run time hidden. Either way it starts, writes a verdict that says what is missing and
// exits 3 where it could not test (docs/install.md).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

// One CUDA major below the build's: the newest driver this build refuses.
constexpr int kOlderDriver = (PREFLIGHT_CUDA_MAJOR - 1) * 1000 + 40;

RunOptions old_driver_options(const TempDir& dir) {
  const std::string nvml = dir.file("fake-nvml.conf");
  write_file(nvml, "gpus=2\ndriver=550.90.07\n");
  RunOptions options;
  options.env = {{"PREFLIGHT_NVML_LIBRARY", FAKE_NVML_PATH},
                 {"FAKE_NVML_CONFIG", nvml},
                 {"PREFLIGHT_CUDA_DRIVER_LIBRARY", FAKE_CUDA_PATH},
                 {"FAKE_CUDA_DRIVER_VERSION", std::to_string(kOlderDriver)},
                 {"NVIDIA_VISIBLE_DEVICES", "none"}};
  return options;
}

}  // namespace

TEST_CASE("cuda install: a driver older than the build is named with both versions, exit 3",
          "[cuda-install]") {
  TempDir dir;
  const std::string path = dir.file("verdict.json");
  const RunResult r = run_preflight({"run", "--json", path}, old_driver_options(dir));
  INFO(describe(r));
  REQUIRE(r.exited());
  CHECK(r.exit_code == 3);
  const json v = parse_json(read_file(path), path);
  INFO(v.dump(2));
  CHECK(verdict_shape_problems(v).empty());
  const std::string have = std::to_string(PREFLIGHT_CUDA_MAJOR - 1) + ".4";
  const std::string need = std::to_string(PREFLIGHT_CUDA_MAJOR) + ".0";
  const std::string reason = v["reason"];
  CHECK_THAT(reason, Catch::Contains("CUDA_DRIVER_TOO_OLD"));
  CHECK_THAT(reason, Catch::Contains("driver 550.90.07 supports CUDA " + have));
  CHECK_THAT(reason, Catch::Contains("this build needs CUDA " + need));
  if (PREFLIGHT_CUDA_MAJOR == 13) {
    CHECK_THAT(reason, Catch::Contains("install preflight-cuda12 or NVIDIA cuda-compat-13-0"));
  } else {
    CHECK_THAT(reason, Catch::Contains("update the driver"));
  }
  const json* inventory = find_check(v, "inventory");
  REQUIRE(inventory != nullptr);
  CHECK((*inventory)["status"] == "error");
  CHECK(find_finding((*inventory)["findings"], "CUDA_UNAVAILABLE") == nullptr);
  CHECK(v["system"]["cuda_driver"] == have);
}

TEST_CASE("cuda install: with cuBLAS and NCCL hidden the binary starts and names them",
          "[cuda-install]") {
  RunOptions options;
  options.env = {{"PREFLIGHT_CUBLAS_LIBRARY", "/nonexistent/libcublas.so"},
                 {"PREFLIGHT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"},
                 {"CUDA_VISIBLE_DEVICES", ""},
                 {"NVIDIA_VISIBLE_DEVICES", "none"}};
  const std::string cublas = "libcublas.so." + std::to_string(PREFLIGHT_CUDA_MAJOR);

  const RunResult version = run_preflight({"--version"}, options);
  INFO(describe(version));
  REQUIRE(version.exit_code == 0);
  CHECK_THAT(version.out,
             Catch::Contains("built with CUDA " + std::to_string(PREFLIGHT_CUDA_MAJOR) + "."));
  CHECK_THAT(version.out, Catch::Contains("cuBLAS: not found (" + cublas + ")"));
  CHECK_THAT(version.out, Catch::Contains("NCCL: not found (libnccl.so.2)"));

  const RunResult run = run_preflight({"run", "--expect-gpus", "0", "--json", "-"}, options);
  INFO(describe(run));
  REQUIRE(run.exit_code == 0);  // no GPU here: nothing needed them
  const json v = parse_json(run.out, "verdict");
  const json& libraries = v["system"]["libraries"];
  REQUIRE(libraries.size() == 2);
  CHECK(libraries[0]["name"] == "cuBLAS");
  CHECK(libraries[0]["soname"] == cublas);
  CHECK(libraries[0]["path"] == "");
  CHECK_THAT(libraries[0]["problem"].get<std::string>(),
             Catch::Contains("/nonexistent/libcublas.so: no such file"));
  CHECK(libraries[1]["name"] == "NCCL");
  CHECK(libraries[1]["path"] == "");
  CHECK_THAT(libraries[1]["problem"].get<std::string>(), Catch::Contains("libnccl.so.2"));
}

}  // namespace preflight::test
