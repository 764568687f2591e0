// `preflight run` end to end on GPUs that the fake NVML of tests/fake_nvml describes: the real
// binary loads it through PREFLIGHT_NVML_LIBRARY, reads every GPU through the real NVML code and
// judges the readings. Runs alike on any machine: the CUDA runtime is shown no device
// (CUDA_VISIBLE_DEVICES=), so a real GPU never joins the fake ones, and the inventory always
// reports CUDA_UNAVAILABLE, as it does for a driver that NVML sees but CUDA cannot use.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fake_nvml_run.hpp"
#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

const char* const kEightGpus = R"(
gpus=8
driver=570.124.06
gpu0.name=NVIDIA H100 80GB HBM3
gpu1.name=NVIDIA H100 80GB HBM3
gpu2.name=NVIDIA H100 80GB HBM3
gpu3.name=NVIDIA H100 80GB HBM3
gpu4.name=NVIDIA H100 80GB HBM3
gpu5.name=NVIDIA H100 80GB HBM3
gpu6.name=NVIDIA H100 80GB HBM3
gpu7.name=NVIDIA H100 80GB HBM3
)";

// Runs `preflight run ... --json FILE` on the fake GPUs; requires exit 1 (CUDA_UNAVAILABLE is a
// failure) and returns the verdict.
json run_on_fake(const TempDir& dir, const std::string& config, std::vector<std::string> args) {
  const std::string verdict_path = dir.file("verdict.json");
  args.insert(args.begin(), "run");
  args.insert(args.end(), {"--json", verdict_path});
  const RunResult r = run_preflight(args, fake_nvml_options(dir, config));
  INFO(describe(r));
  REQUIRE(r.exited());
  REQUIRE(r.exit_code == 1);
  const json v = parse_json(read_file(verdict_path), verdict_path);
  INFO(v.dump(2));
  REQUIRE(verdict_shape_problems(v).empty());
  return v;
}

const json& inventory_findings(const json& verdict) {
  const json* inventory = find_check(verdict, "inventory");
  REQUIRE(inventory != nullptr);
  return (*inventory)["findings"];
}

// "CODE@entity" of every finding about a GPU.
std::vector<std::string> gpu_findings(const json& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) {
    const std::string entity = f.value("entity", "");
    if (entity.rfind("gpu", 0) == 0) out.push_back(f.value("code", "") + "@" + entity);
  }
  return out;
}

// The node-level findings of the inventory on the fake GPUs: NVML loaded, the SKU known, and
// only the CUDA runtime missing. CUDA_UNAVAILABLE holds on a GPU node too (system.cuda_driver
// is then set), because CUDA_VISIBLE_DEVICES= hides its devices from the runtime.
void check_node_findings(const json& verdict) {
  const json& findings = inventory_findings(verdict);
  const json* cuda = find_finding(findings, "CUDA_UNAVAILABLE", "node");
  REQUIRE(cuda != nullptr);
  CHECK((*cuda)["injected"] == false);
  for (const char* code : {"NVML_UNAVAILABLE", "NO_GPU_VISIBLE", "SKU_UNKNOWN", "MIXED_GPU_MODELS",
                           "GPU_COUNT_MISMATCH", "GPU_MISSING_FROM_DRIVER"}) {
    INFO(code);
    CHECK(find_finding(findings, code) == nullptr);
  }
}

}  // namespace

TEST_CASE("fake nvml run: an 8-GPU node is listed with its names and driver version",
          "[fake-nvml]") {
  TempDir dir;
  const json v = run_on_fake(dir, kEightGpus, {});
  INFO(v.dump(2));
  CHECK(v["verdict"] == "fail");
  CHECK(v["system"]["driver_version"] == "570.124.06");
  const json& gpus = v["system"]["gpus"];
  REQUIRE(gpus.size() == 8);
  const char* const bus_ids[] = {"18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"};
  for (int i = 0; i < 8; ++i) {
    INFO("gpu" << i);
    const json& g = gpus[static_cast<std::size_t>(i)];
    CHECK(g["index"] == i);
    CHECK(g["name"] == "NVIDIA H100 80GB HBM3");
    CHECK(g["uuid"] == "GPU-fa4e0000-0000-4000-8000-00000000000" + std::to_string(i));
    CHECK(g["pci_bus_id"] == std::string("00000000:") + bus_ids[i] + ":00.0");
    CHECK(g["serial"] == "165000000000" + std::to_string(i));
  }

  check_node_findings(v);
  // A healthy node: nothing to say about any GPU.
  const json& findings = inventory_findings(v);
  CHECK(gpu_findings(findings).empty());
  const json& metrics = (*find_check(v, "inventory"))["metrics"];
  CHECK(metrics["gpu_count"] == 8.0);
  CHECK(metrics["gpu0.temperature_c"] == 35.0);
  CHECK(metrics["gpu7.nvlink_active"] == 18.0);
  CHECK(metrics["gpu3.pcie_gen_max_link"] == 5.0);
  CHECK(v["reason"].get<std::string>().find("CUDA_UNAVAILABLE") != std::string::npos);
}

TEST_CASE("fake nvml run: MIG on gpu3 is reported as MIG_ENABLED on gpu3", "[fake-nvml]") {
  TempDir dir;
  const json v = run_on_fake(dir, std::string(kEightGpus) + "gpu3.mig=1\n", {});
  INFO(v.dump(2));
  check_node_findings(v);
  const json& findings = inventory_findings(v);
  CHECK(gpu_findings(findings) == std::vector<std::string>{"MIG_ENABLED@gpu3"});
  const json* mig = find_finding(findings, "MIG_ENABLED", "gpu3");
  REQUIRE(mig != nullptr);
  CHECK((*mig)["severity"] == "fail");
  CHECK((*mig)["injected"] == false);
  CHECK(v["injected_faults"].empty());
}

TEST_CASE("fake nvml run: a failing NVML query is reported as NVML_READ_ERROR on its GPU",
          "[fake-nvml]") {
  TempDir dir;
  const json v = run_on_fake(dir, std::string(kEightGpus) + "gpu2.error.temperature=unknown\n", {});
  INFO(v.dump(2));
  check_node_findings(v);
  const json& findings = inventory_findings(v);
  CHECK(gpu_findings(findings) == std::vector<std::string>{"NVML_READ_ERROR@gpu2"});
  const json* error = find_finding(findings, "NVML_READ_ERROR", "gpu2");
  REQUIRE(error != nullptr);
  CHECK((*error)["message"] == "nvmlDeviceGetTemperature: Unknown Error");
  const json& metrics = (*find_check(v, "inventory"))["metrics"];
  CHECK_FALSE(metrics.contains("gpu2.temperature_c"));
  CHECK(metrics["gpu1.temperature_c"] == 35.0);
}

TEST_CASE("fake nvml run: NVML's GPU recovery action is the driver's verdict on its GPU",
          "[fake-nvml]") {
  TempDir dir;
  SECTION("none (0, the default) says nothing and is recorded") {
    const json v = run_on_fake(dir, kEightGpus, {});
    check_node_findings(v);
    CHECK(gpu_findings(inventory_findings(v)).empty());
    const json& gpus = (*find_check(v, "inventory"))["readings"]["gpus"];
    REQUIRE(gpus.size() == 8);
    CHECK(gpus[2]["recovery_action"] == 0);
  }
  SECTION("node reboot (2) on gpu2") {
    const json v = run_on_fake(dir, std::string(kEightGpus) + "gpu2.recovery_action=2\n", {});
    check_node_findings(v);
    const json& findings = inventory_findings(v);
    CHECK(gpu_findings(findings) == std::vector<std::string>{"GPU_RECOVERY_REBOOT@gpu2"});
    const json* f = find_finding(findings, "GPU_RECOVERY_REBOOT", "gpu2");
    REQUIRE(f != nullptr);
    CHECK((*f)["message"] == "the driver asks for: node reboot (2)");
    CHECK((*f)["severity"] == "fail");
    CHECK((*f)["action"] == "reboot");
    CHECK((*f)["injected"] == false);
  }
  SECTION("GPU reset (1) on gpu5") {
    const json v = run_on_fake(dir, std::string(kEightGpus) + "gpu5.recovery_action=1\n", {});
    const json& findings = inventory_findings(v);
    CHECK(gpu_findings(findings) == std::vector<std::string>{"GPU_RECOVERY_RESET@gpu5"});
    const json* f = find_finding(findings, "GPU_RECOVERY_RESET", "gpu5");
    REQUIRE(f != nullptr);
    CHECK((*f)["message"] == "the driver asks for: GPU reset (1)");
    CHECK((*f)["action"] == "reset_gpu");
  }
  SECTION("a driver without the field is silent; a failing field is a read error") {
    const json v = run_on_fake(dir,
                               std::string(kEightGpus) +
                                   "gpu1.unsupported.recovery_action=1\n"
                                   "gpu4.error.recovery_action=unknown\n",
                               {});
    const json& findings = inventory_findings(v);
    CHECK(gpu_findings(findings) == std::vector<std::string>{"NVML_READ_ERROR@gpu4"});
    const json* error = find_finding(findings, "NVML_READ_ERROR", "gpu4");
    REQUIRE(error != nullptr);
    CHECK((*error)["message"] ==
          "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): Unknown Error");
    const json& gpus = (*find_check(v, "inventory"))["readings"]["gpus"];
    CHECK_FALSE(gpus[1].contains("recovery_action"));
    CHECK_FALSE(gpus[4].contains("recovery_action"));
  }
}

TEST_CASE("fake nvml run: an injected ECC fault lands on the named GPU", "[fake-nvml]") {
  TempDir dir;
  const json v = run_on_fake(dir, kEightGpus, {"--inject-fault", "ecc-uncorrectable:2@gpu=5"});
  INFO(v.dump(2));
  CHECK(v["injected_faults"] == json::array({"ecc-uncorrectable:2@gpu=5"}));
  check_node_findings(v);
  const json& findings = inventory_findings(v);
  CHECK(gpu_findings(findings) == std::vector<std::string>{"ECC_UNCORRECTABLE_VOLATILE@gpu5"});
  const json* ecc = find_finding(findings, "ECC_UNCORRECTABLE_VOLATILE", "gpu5");
  REQUIRE(ecc != nullptr);
  CHECK((*ecc)["injected"] == true);
  CHECK((*ecc)["value"] == 2.0);
  CHECK(v["verdict"] == "fail");
  CHECK(v["reason"].get<std::string>().rfind("injected fault: ", 0) == 0);
}

TEST_CASE("fake nvml run: an injected Xid lands on the GPU at its bus id, by the Xid table",
          "[fake-nvml]") {
  TempDir dir;
  for (const auto& [spec, code] :
       std::vector<std::pair<std::string, std::string>>{{"xid:79@gpu=5", "XID_REBOOT"},
                                                        {"xid:48@gpu=2", "XID_RESET_GPU"},
                                                        {"xid:64@gpu=1", "XID_SERVICE"},
                                                        {"xid:13@gpu=3", "XID_APPLICATION"},
                                                        {"xid:999@gpu=0", "XID_UNLISTED"}}) {
    INFO(spec);
    const json v = run_on_fake(dir, kEightGpus, {"--checks", "events", "--inject-fault", spec});
    const json* events = find_check(v, "events");
    REQUIRE(events != nullptr);
    const std::string gpu = "gpu" + spec.substr(spec.find('=') + 1);
    CHECK(gpu_findings((*events)["findings"]) == std::vector<std::string>{code + "@" + gpu});
    const json* f = find_finding((*events)["findings"], code, gpu);
    REQUIRE(f != nullptr);
    CHECK((*f)["injected"] == true);
  }
}

TEST_CASE("fake nvml run: a fault aimed at a GPU the node lacks is invalid", "[fake-nvml]") {
  TempDir dir;
  const std::string verdict_path = dir.file("verdict.json");
  const RunResult r =
      run_preflight({"run", "--inject-fault", "mig-on@gpu=9", "--json", verdict_path},
                    fake_nvml_options(dir, kEightGpus));
  INFO(describe(r));
  REQUIRE(r.exited());
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("preflight: ", 0) == 0);
  CHECK(r.err.find("gpu9") != std::string::npos);
  CHECK(r.err.find("8 GPUs visible") != std::string::npos);
  CHECK_FALSE(path_exists(verdict_path));
}

TEST_CASE("fake nvml run: NVML failing to initialize leaves no GPU visible", "[fake-nvml]") {
  TempDir dir;
  const json v = run_on_fake(dir, "gpus=8\ninit_error=driver_not_loaded\n", {});
  INFO(v.dump(2));
  CHECK(v["system"]["gpus"].empty());
  CHECK(v["system"]["driver_version"] == "");
  const json* none = find_finding(inventory_findings(v), "NO_GPU_VISIBLE", "node");
  REQUIRE(none != nullptr);
  CHECK_THAT((*none)["message"].get<std::string>(), Catch::Contains("nvmlInit: Driver Not Loaded"));
}

}  // namespace preflight::test
