// The real NVML code path (src/gpu/nvml_library.cpp: dlopen, symbol resolution, every query,
// error handling; src/gpu/cuda_backend.cpp: discover and read_health) against the fake NVML of
// tests/fake_nvml, and the inventory judgement of what it reads. Runs on any machine: the fake
// stands in for the driver, and CUDA_VISIBLE_DEVICES is emptied so a real GPU cannot join in.
#include <catch2/catch.hpp>

#include <stdlib.h>  // mkstemp, setenv, unsetenv
#include <unistd.h>  // write, close

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "checks/inventory/inventory_rules.hpp"
#include "preflight/engine/node_backend.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/fake_nvml_library.hpp"

using namespace preflight;

namespace {

using preflight::test::FakeNvml;

// The GPUs NVML listed (a GPU only CUDA sees has index -1).
std::vector<GpuReading> nvml_gpus(const NodeReading& node) {
  std::vector<GpuReading> gpus;
  for (const GpuReading& g : node.gpus) {
    if (g.index >= 0) gpus.push_back(g);
  }
  return gpus;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += s + "\n";
  return out;
}

// Judged as the runner does: thresholds of the first GPU's SKU, no --expect-gpus.
InventoryJudgement judge(const NodeReading& node) {
  REQUIRE_FALSE(node.gpus.empty());
  const GpuReading& first = node.gpus.front();
  const Thresholds thresholds =
      preflight::test::builtin_thresholds(detect_sku(first.pci_device_id, first.name), "fake nvml");
  return judge_inventory(node, thresholds, NodeExpectations{});
}

using Codes = std::vector<std::string>;

// Finding codes by entity. Left out: what a real GPU causes where this process's CUDA runtime
// already saw one (the whole unit_tests binary run on a GPU node): CUDA-only GPUs (index -1) and
// GPU_NOT_VISIBLE_TO_CUDA on the fake's GPUs, which are not CUDA's.
std::map<std::string, Codes> codes_by_entity(const InventoryJudgement& judged) {
  std::map<std::string, Codes> out;
  for (const Finding& f : judged.findings) {
    if (f.entity != "gpu-1" && f.code != "GPU_NOT_VISIBLE_TO_CUDA") {
      out[f.entity].push_back(f.code);
    }
  }
  return out;
}

const char* const kEveryReadingChanged = R"(
# gpu0: every reading away from its default
gpus=2
gpu0.memory_total=42949672960
gpu0.mig=1
gpu0.ecc=0
gpu0.persistence=0
gpu0.ecc_uncorrected_volatile=2
gpu0.ecc_uncorrected_aggregate=7
gpu0.ecc_corrected_volatile=1234
gpu0.retired_pages_pending=1
gpu0.row_remap_pending=1
gpu0.row_remap_failed=1
gpu0.clocks_event_reasons=0x48
gpu0.temperature=71
gpu0.pcie_gen=3
gpu0.pcie_max_link_gen=4
gpu0.pcie_max_gpu_gen=5
gpu0.pcie_width=8
gpu0.pcie_max_width=16
gpu0.nvlink_links=12
gpu0.nvlink_active=10
gpu0.processes=2
gpu0.process_memory_mib=300
gpu0.include_self=1   # this process: not foreign
)";

}  // namespace

TEST_CASE("nvml fake: discover lists the configured GPUs and the driver version") {
  const FakeNvml fake(R"(
gpus=3
driver=570.124.06
gpu1.name=NVIDIA A100-SXM4-80GB
gpu1.uuid=GPU-11111111-2222-3333-4444-555555555555
gpu1.serial=1324321012345
gpu1.bus_id=00000000:4E:00.0
gpu1.device_id=0x20b2
gpu1.memory_total=85899345920
)");
  const NodeReading node = fake.read(false);
  INFO("nvml_error: " << node.nvml_error);
  CHECK(node.nvml_loaded);
  CHECK(node.nvml_error.empty());
  CHECK(node.driver_version == "570.124.06");
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 3);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    INFO("gpu" << i);
    CHECK(gpus[i].index == static_cast<int>(i));
    CHECK(gpus[i].read_errors.empty());
    if (node.cuda_device_count == 0) CHECK(gpus[i].cuda_ordinal == -1);
    CHECK_FALSE(gpus[i].temperature_c);  // health comes from read_health()
  }
  // Defaults: a healthy H100 SXM on an HGX bus address.
  CHECK(gpus[0].name == "NVIDIA H100 80GB HBM3");
  CHECK(gpus[0].uuid == "GPU-fa4e0000-0000-4000-8000-000000000000");
  CHECK(gpus[0].serial == "1650000000000");
  CHECK(gpus[0].pci_bus_id == "00000000:18:00.0");
  CHECK(gpus[0].pci_device_id == 0x2330);
  CHECK(gpus[0].memory_total_bytes == 85520809984ULL);
  CHECK(gpus[2].pci_bus_id == "00000000:3A:00.0");
  CHECK(gpus[2].uuid == "GPU-fa4e0000-0000-4000-8000-000000000002");
  // Configured.
  CHECK(gpus[1].name == "NVIDIA A100-SXM4-80GB");
  CHECK(gpus[1].uuid == "GPU-11111111-2222-3333-4444-555555555555");
  CHECK(gpus[1].serial == "1324321012345");
  CHECK(gpus[1].pci_bus_id == "00000000:4E:00.0");
  CHECK(gpus[1].pci_device_id == 0x20b2);
  CHECK(gpus[1].memory_total_bytes == 85899345920ULL);
}

TEST_CASE("nvml fake: read_health fills every reading") {
  const FakeNvml fake(kEveryReadingChanged);
  const NodeReading node = fake.read();
  INFO("nvml_error: " << node.nvml_error);
  REQUIRE(node.nvml_loaded);
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 2);

  const GpuReading& changed = gpus[0];
  INFO("gpu0 read_errors:\n" << joined(changed.read_errors));
  CHECK(changed.read_errors.empty());
  CHECK(changed.memory_total_bytes == 42949672960ULL);
  CHECK(changed.mig_enabled == true);
  CHECK(changed.ecc_enabled == false);
  CHECK(changed.persistence_enabled == false);
  CHECK(changed.ecc_uncorrected_volatile == std::uint64_t{2});
  CHECK(changed.ecc_uncorrected_aggregate == std::uint64_t{7});
  CHECK(changed.ecc_corrected_volatile == std::uint64_t{1234});
  CHECK(changed.retired_pages_pending == true);
  CHECK(changed.row_remap_pending == true);
  CHECK(changed.row_remap_failed == true);
  CHECK(changed.clock_event_reasons ==
        (clock_event::kHwSlowdown | clock_event::kHwThermalSlowdown));
  CHECK(changed.temperature_c == 71);
  CHECK(changed.pcie_gen_current == 3);
  CHECK(changed.pcie_gen_max_link == 4);
  CHECK(changed.pcie_gen_max_gpu == 5);
  CHECK(changed.pcie_width_current == 8);
  CHECK(changed.pcie_width_max == 16);
  CHECK(changed.nvlink_supported == 12);
  CHECK(changed.nvlink_active == 10);
  CHECK(changed.foreign_processes == 2);  // not this process
  CHECK(changed.foreign_memory_mib == std::uint64_t{600});

  const GpuReading& healthy = gpus[1];
  INFO("gpu1 read_errors:\n" << joined(healthy.read_errors));
  CHECK(healthy.read_errors.empty());
  CHECK(healthy.mig_enabled == false);
  CHECK(healthy.ecc_enabled == true);
  CHECK(healthy.persistence_enabled == true);
  CHECK(healthy.ecc_uncorrected_volatile == std::uint64_t{0});
  CHECK(healthy.ecc_uncorrected_aggregate == std::uint64_t{0});
  CHECK(healthy.ecc_corrected_volatile == std::uint64_t{0});
  CHECK(healthy.retired_pages_pending == false);
  CHECK(healthy.row_remap_pending == false);
  CHECK(healthy.row_remap_failed == false);
  CHECK(healthy.clock_event_reasons == clock_event::kGpuIdle);
  CHECK(healthy.temperature_c == 35);
  CHECK(healthy.pcie_gen_current == 5);
  CHECK(healthy.pcie_gen_max_link == 5);
  CHECK(healthy.pcie_gen_max_gpu == 5);
  CHECK(healthy.pcie_width_current == 16);
  CHECK(healthy.pcie_width_max == 16);
  CHECK(healthy.nvlink_supported == 18);
  CHECK(healthy.nvlink_active == 18);
  CHECK(healthy.foreign_processes == 0);
  CHECK(healthy.foreign_memory_mib == std::uint64_t{0});
}

TEST_CASE("nvml fake: a query the GPU does not support leaves its reading unset, silently") {
  const FakeNvml fake(R"(
gpus=1
gpu0.unsupported.serial=1
gpu0.unsupported.mig=1
gpu0.unsupported.ecc_uncorrected_aggregate=1
gpu0.unsupported.retired_pages_pending=1
gpu0.unsupported.remapped_rows=1
gpu0.unsupported.temperature=1
gpu0.unsupported.pcie_max_gpu_gen=1
gpu0.unsupported.processes=1
gpu0.error.clocks_event_reasons=not_supported
)");
  const NodeReading node = fake.read();
  REQUIRE(node.nvml_loaded);
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 1);
  const GpuReading& g = gpus[0];
  INFO("read_errors:\n" << joined(g.read_errors));
  CHECK(g.read_errors.empty());
  CHECK(g.serial.empty());
  CHECK_FALSE(g.mig_enabled);
  CHECK_FALSE(g.ecc_uncorrected_aggregate);
  CHECK_FALSE(g.retired_pages_pending);
  CHECK_FALSE(g.row_remap_pending);
  CHECK_FALSE(g.row_remap_failed);
  CHECK_FALSE(g.temperature_c);
  CHECK_FALSE(g.pcie_gen_max_gpu);
  CHECK_FALSE(g.foreign_processes);
  CHECK_FALSE(g.foreign_memory_mib);
  CHECK_FALSE(g.clock_event_reasons);
  // The rest is still read.
  CHECK(g.uuid == "GPU-fa4e0000-0000-4000-8000-000000000000");
  CHECK(g.ecc_uncorrected_volatile == std::uint64_t{0});
  CHECK(g.ecc_enabled == true);
  CHECK(g.pcie_gen_max_link == 5);
  CHECK(g.nvlink_active == 18);

  // Judged as missing readings, not as faults.
  const auto by_entity = codes_by_entity(judge(node));
  CHECK(by_entity.count("gpu0") == 0);
}

TEST_CASE("nvml fake: a GPU without NVLink answers not supported for every link") {
  const FakeNvml fake("gpus=2\ngpu1.nvlink_links=0\ngpu0.unsupported.nvlink=1\n");
  const NodeReading node = fake.read();
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 2);
  for (const GpuReading& g : gpus) {
    INFO("gpu" << g.index << " read_errors:\n" << joined(g.read_errors));
    CHECK(g.read_errors.empty());
    CHECK(g.nvlink_supported == 0);
    CHECK(g.nvlink_active == 0);
  }
}

TEST_CASE("nvml fake: a failing query is listed in read_errors and judged NVML_READ_ERROR") {
  const FakeNvml fake(R"(
gpus=3
gpu0.error.temperature=unknown
gpu1.error.ecc=gpu_lost
gpu1.error.nvlink=timeout
gpu1.error.uuid=no_permission
gpu2.error.handle=gpu_lost
)");
  const NodeReading node = fake.read();
  REQUIRE(node.nvml_loaded);
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 3);

  CHECK(gpus[0].read_errors == Codes{"nvmlDeviceGetTemperature: Unknown Error"});
  CHECK_FALSE(gpus[0].temperature_c);
  CHECK(gpus[0].ecc_enabled == true);

  // The NVLink failure is reported once, not once per link, and leaves no partial count.
  CHECK(gpus[1].read_errors == Codes{"nvmlDeviceGetUUID: Insufficient Permissions",
                                     "nvmlDeviceGetEccMode: GPU is lost",
                                     "nvmlDeviceGetNvLinkState: Timeout"});
  CHECK(gpus[1].uuid.empty());
  CHECK_FALSE(gpus[1].ecc_enabled);
  CHECK_FALSE(gpus[1].nvlink_active);
  CHECK_FALSE(gpus[1].nvlink_supported);
  CHECK(gpus[1].temperature_c == 35);

  // Without a handle nothing is read; discover's error is not repeated by read_health.
  CHECK(gpus[2].read_errors == Codes{"nvmlDeviceGetHandleByIndex_v2: GPU is lost"});
  CHECK(gpus[2].name.empty());
  CHECK(gpus[2].pci_bus_id.empty());
  CHECK_FALSE(gpus[2].temperature_c);

  const auto by_entity = codes_by_entity(judge(node));
  CHECK(by_entity.at("gpu0") == Codes{"NVML_READ_ERROR"});
  CHECK(by_entity.at("gpu1") == Codes{"NVML_READ_ERROR"});
  CHECK(by_entity.at("gpu2") == Codes{"NVML_READ_ERROR"});
}

TEST_CASE("nvml fake: NVLink peers are read per active link, in NVML's spelling") {
  const FakeNvml fake(R"(
gpus=4
# 18 active links over 3 peers: 6 links to each, in turn
gpu0.nvlink_peers=00000000:2A:00.0,00000000:3A:00.0,00000000:5D:00.0
# only the 5 active links of 12 are asked (the others answer Not Supported)
gpu1.nvlink_links=12
gpu1.nvlink_active=5
gpu1.nvlink_peers= 00000000:18:00.0 , 00000000:3A:00.0
# no active link: a topology with nothing in it
gpu3.nvlink_active=0
gpu3.nvlink_peers=00000000:18:00.0
)");
  const NodeReading node = fake.read();
  REQUIRE(node.nvml_loaded);
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 4);
  for (const GpuReading& g : gpus) {
    INFO("gpu" << g.index << " read_errors:\n" << joined(g.read_errors));
    CHECK(g.read_errors.empty());
  }

  const Codes gpu0_peers = {"00000000:2A:00.0", "00000000:3A:00.0", "00000000:5D:00.0"};
  REQUIRE(gpus[0].nvlink_peer_bus_ids.size() == 18);
  for (std::size_t link = 0; link < 18; ++link) {
    INFO("link " << link);
    CHECK(gpus[0].nvlink_peer_bus_ids[link] == gpu0_peers[link % 3]);
  }
  CHECK(gpus[0].nvlink_switch_links == 0);
  // Spelled as pci_bus_id is, so a peer is found by comparing the two as they are.
  const auto links_to = [](const GpuReading& from, const GpuReading& to) {
    return std::count(from.nvlink_peer_bus_ids.begin(), from.nvlink_peer_bus_ids.end(),
                      to.pci_bus_id);
  };
  CHECK(links_to(gpus[0], gpus[1]) == 6);
  CHECK(links_to(gpus[0], gpus[2]) == 6);
  CHECK(links_to(gpus[0], gpus[3]) == 6);
  CHECK(links_to(gpus[0], gpus[0]) == 0);

  CHECK(gpus[1].nvlink_active == 5);
  CHECK(gpus[1].nvlink_peer_bus_ids == Codes{"00000000:18:00.0", "00000000:3A:00.0",
                                             "00000000:18:00.0", "00000000:3A:00.0",
                                             "00000000:18:00.0"});
  CHECK(gpus[1].nvlink_switch_links == 0);
  CHECK(links_to(gpus[1], gpus[0]) == 3);
  CHECK(links_to(gpus[1], gpus[2]) == 2);

  // Nothing configured: the fake answers Not Supported, so the topology is not read.
  CHECK(gpus[2].nvlink_active == 18);
  CHECK(gpus[2].nvlink_peer_bus_ids.empty());
  CHECK_FALSE(gpus[2].nvlink_switch_links);

  CHECK(gpus[3].nvlink_active == 0);
  CHECK(gpus[3].nvlink_peer_bus_ids.empty());
  CHECK(gpus[3].nvlink_switch_links == 0);
}

TEST_CASE("nvml fake: NVLinks that end at an NVSwitch are counted, not listed as peers") {
  const FakeNvml fake(R"(
gpus=2
gpu0.nvlink_switch=1
gpu1.nvlink_switch=1
gpu1.nvlink_active=16
gpu1.nvlink_peers=00000000:18:00.0   # the switch wins
)");
  const NodeReading node = fake.read();
  REQUIRE(node.nvml_loaded);
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 2);
  for (const GpuReading& g : gpus) {
    INFO("gpu" << g.index << " read_errors:\n" << joined(g.read_errors));
    CHECK(g.read_errors.empty());
    CHECK(g.nvlink_peer_bus_ids.empty());
  }
  CHECK(gpus[0].nvlink_switch_links == 18);
  CHECK(gpus[1].nvlink_switch_links == 16);
}

TEST_CASE("nvml fake: an NVLink topology that cannot be read is left unset") {
  SECTION("not supported: silently") {
    const FakeNvml fake(R"(
gpus=3
gpu0.nvlink_peers=00000000:2A:00.0
gpu0.unsupported.nvlink_remote=1
gpu1.nvlink_switch=1
gpu1.error.nvlink_remote=not_supported
)");
    const NodeReading node = fake.read();
    REQUIRE(node.nvml_loaded);
    const auto gpus = nvml_gpus(node);
    REQUIRE(gpus.size() == 3);
    for (const GpuReading& g : gpus) {
      INFO("gpu" << g.index << " read_errors:\n" << joined(g.read_errors));
      CHECK(g.read_errors.empty());
      CHECK(g.nvlink_active == 18);
      CHECK(g.nvlink_peer_bus_ids.empty());
      CHECK_FALSE(g.nvlink_switch_links);
    }
  }
  SECTION("a failure: listed once in read_errors and judged NVML_READ_ERROR") {
    const FakeNvml fake(R"(
gpus=3
gpu0.nvlink_peers=00000000:2A:00.0,00000000:3A:00.0
gpu0.error.nvlink_remote=gpu_lost
gpu1.nvlink_switch=1
gpu1.error.nvlink_remote=1
# the link state failing is reported by itself; the topology is then not asked for
gpu2.nvlink_peers=00000000:18:00.0
gpu2.error.nvlink=timeout
)");
    const NodeReading node = fake.read();
    REQUIRE(node.nvml_loaded);
    const auto gpus = nvml_gpus(node);
    REQUIRE(gpus.size() == 3);

    // Once, not once per link, and no partial list.
    CHECK(gpus[0].read_errors == Codes{"nvmlDeviceGetNvLinkRemoteDeviceType: GPU is lost"});
    CHECK(gpus[0].nvlink_peer_bus_ids.empty());
    CHECK_FALSE(gpus[0].nvlink_switch_links);
    CHECK(gpus[0].nvlink_active == 18);  // the link states were still read
    CHECK(gpus[0].temperature_c == 35);

    CHECK(gpus[1].read_errors == Codes{"nvmlDeviceGetNvLinkRemoteDeviceType: Unknown Error"});
    CHECK_FALSE(gpus[1].nvlink_switch_links);

    CHECK(gpus[2].read_errors == Codes{"nvmlDeviceGetNvLinkState: Timeout"});
    CHECK(gpus[2].nvlink_peer_bus_ids.empty());
    CHECK_FALSE(gpus[2].nvlink_switch_links);

    const auto by_entity = codes_by_entity(judge(node));
    CHECK(by_entity.at("gpu0") == Codes{"NVML_READ_ERROR"});
    CHECK(by_entity.at("gpu1") == Codes{"NVML_READ_ERROR"});
    CHECK(by_entity.at("gpu2") == Codes{"NVML_READ_ERROR"});
  }
}

TEST_CASE("nvml fake: NVLink topology keys the fake does not understand fail nvmlInit") {
  for (const char* config :
       {"gpu0.nvlink_peers=\n", "gpu0.nvlink_peers=00000000:2A:00.0,\n",
        "gpu0.nvlink_peers=00000000:2A:00.0,,00000000:3A:00.0\n",
        "gpu0.nvlink_peers=000000000000000000000000000000000:2A:00.0\n",  // longer than busId
        "gpu0.nvlink_switch=yes\n", "gpu0.error.nvlink_remotes=1\n"}) {
    INFO(config);
    const FakeNvml fake(config);
    const NodeReading node = fake.read();
    CHECK_FALSE(node.nvml_loaded);
    CHECK(node.nvml_error == "nvmlInit: Unknown Error");
  }
}

TEST_CASE("nvml fake: nvmlInit failing leaves NVML unloaded with the reason") {
  for (const char* config : {"init_error=driver_not_loaded\n", "init_error=1\n"}) {
    INFO(config);
    const FakeNvml fake(config);
    const NodeReading node = fake.read();
    CHECK_FALSE(node.nvml_loaded);
    CHECK(node.nvml_error == "nvmlInit: Driver Not Loaded");
    CHECK(node.driver_version.empty());
    if (node.cuda_device_count == 0) CHECK(node.gpus.empty());
  }
}

TEST_CASE("nvml fake: a config the fake does not understand fails nvmlInit") {
  // A typo must not pass as a healthy default.
  for (const char* config :
       {"gpus=2\ngpu0.temprature=90\n", "gpus=2\ngpu2.mig=1\n", "gpu0.temperature=hot\n",
        "gpu0.error.temperature=sometimes\n", "no equals sign\n"}) {
    INFO(config);
    const FakeNvml fake(config);
    const NodeReading node = fake.read();
    CHECK_FALSE(node.nvml_loaded);
    CHECK(node.nvml_error == "nvmlInit: Unknown Error");
  }
}

TEST_CASE("nvml fake: failing system queries are reported on the node") {
  SECTION("the device count: NVML can tell nothing") {
    const FakeNvml fake("gpus=2\nerror.count=unknown\n");
    const NodeReading node = fake.read(false);
    CHECK_FALSE(node.nvml_loaded);
    CHECK(node.nvml_error == "nvmlDeviceGetCount_v2: Unknown Error");
    CHECK(node.driver_version == "580.65.06");
    if (node.cuda_device_count == 0) CHECK(node.gpus.empty());
  }
  SECTION("the driver version: the GPUs are still listed") {
    const FakeNvml fake("gpus=2\nerror.driver=1\n");
    const NodeReading node = fake.read(false);
    CHECK(node.nvml_loaded);
    CHECK(node.nvml_error == "nvmlSystemGetDriverVersion: Unknown Error");
    CHECK(node.driver_version.empty());
    CHECK(nvml_gpus(node).size() == 2);
  }
}

TEST_CASE("nvml fake: the inventory judges the readings of an 8-GPU node") {
  const FakeNvml fake(R"(
gpus=8
gpu1.mig=1
gpu2.ecc_uncorrected_volatile=3
gpu3.nvlink_active=12
gpu4.pcie_max_link_gen=4
gpu5.error.temperature=unknown
gpu6.row_remap_pending=1
gpu7.processes=1
gpu7.process_memory_mib=100
)");
  const NodeReading node = fake.read();
  REQUIRE(node.nvml_loaded);
  REQUIRE(nvml_gpus(node).size() == 8);
  const InventoryJudgement judged = judge(node);
  const auto by_entity = codes_by_entity(judged);

  CHECK(by_entity.count("gpu0") == 0);
  CHECK(by_entity.at("gpu1") == Codes{"MIG_ENABLED"});
  CHECK(by_entity.at("gpu2") == Codes{"ECC_UNCORRECTABLE_VOLATILE"});
  CHECK(by_entity.at("gpu3") == Codes{"NVLINK_INACTIVE"});
  CHECK(by_entity.at("gpu4") == Codes{"PCIE_LINK_DEGRADED"});
  CHECK(by_entity.at("gpu5") == Codes{"NVML_READ_ERROR"});
  CHECK(by_entity.at("gpu6") == Codes{"ROW_REMAP_PENDING"});
  CHECK(by_entity.at("gpu7") == Codes{"FOREIGN_PROCESSES"});

  // The node: an H100 SXM (not SKU_UNKNOWN), NVML loaded; the CUDA runtime sees no device.
  const Codes node_codes = by_entity.count("node") ? by_entity.at("node") : Codes{};
  if (node.cuda_device_count == 0) {
    CHECK(node_codes == Codes{"CUDA_UNAVAILABLE"});
  } else {
    CHECK(std::find(node_codes.begin(), node_codes.end(), "NVML_UNAVAILABLE") == node_codes.end());
  }
  CHECK_THAT(judged.summary, Catch::Contains("8 x NVIDIA H100 80GB HBM3, driver 580.65.06"));
  CHECK(status_from_findings(judged.findings) == Status::fail);
}

TEST_CASE("nvml fake: a healthy node has no GPU findings") {
  const FakeNvml fake("gpus=8\n");
  const NodeReading node = fake.read();
  REQUIRE(nvml_gpus(node).size() == 8);
  const auto by_entity = codes_by_entity(judge(node));
  for (const auto& [entity, codes] : by_entity) {
    INFO(entity << ": " << joined(codes));
    CHECK(entity == "node");
  }
}

TEST_CASE("nvml fake: NVML stays initialized while another backend still uses it") {
  const FakeNvml fake("gpus=2\ngpu1.temperature=50\n");
  const auto first = make_system_node_backend();
  NodeReading node = first->discover();
  REQUIRE(node.nvml_loaded);
  {
    const auto second = make_system_node_backend();
    CHECK(second->discover().driver_version == "580.65.06");
  }  // its nvmlShutdown must not pull the devices from under the first
  first->read_health(node);
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[1].temperature_c == 50);
  CHECK(gpus[1].read_errors.empty());
}

TEST_CASE("nvml fake: telemetry samples SM clock, temperature, power and clock-event reasons") {
  const FakeNvml fake(R"(
gpus=3
gpu0.sm_clock=1410
gpu0.power=350500   # milliwatts
gpu0.temperature=63
gpu0.clocks_event_reasons=0x4
gpu2.error.sm_clock=unknown
gpu2.unsupported.power=1
)");
  const auto backend = make_system_node_backend();
  const NodeReading node = backend->discover();
  REQUIRE(node.nvml_loaded);
  const auto gpus = nvml_gpus(node);
  REQUIRE(gpus.size() == 3);

  const auto busy = backend->telemetry(gpus[0]);
  REQUIRE(busy);
  CHECK(busy->t_s == 0.0);  // the caller's to fill
  CHECK(busy->sm_clock_mhz == 1410);
  CHECK(busy->temperature_c == 63);
  REQUIRE(busy->power_w);
  CHECK(*busy->power_w == Approx(350.5));
  CHECK(busy->clock_event_reasons == clock_event::kSwPowerCap);

  // The fake's defaults.
  const auto idle = backend->telemetry(gpus[1]);
  REQUIRE(idle);
  CHECK(idle->sm_clock_mhz == 1980);
  CHECK(idle->temperature_c == 35);
  REQUIRE(idle->power_w);
  CHECK(*idle->power_w == Approx(72.0));
  CHECK(idle->clock_event_reasons == clock_event::kGpuIdle);

  // A reading that fails or is not supported is left unset; the others are still taken.
  const auto partial = backend->telemetry(gpus[2]);
  REQUIRE(partial);
  CHECK_FALSE(partial->sm_clock_mhz);
  CHECK_FALSE(partial->power_w);
  CHECK(partial->temperature_c == 35);
  CHECK(partial->clock_event_reasons == clock_event::kGpuIdle);

  // No NVML handle: nothing to sample.
  GpuReading cuda_only;
  cuda_only.index = -1;
  CHECK_FALSE(backend->telemetry(cuda_only));
  GpuReading unknown;
  unknown.index = 7;
  CHECK_FALSE(backend->telemetry(unknown));
}

TEST_CASE("nvml fake: no telemetry when NVML does not initialize") {
  const FakeNvml fake("init_error=1\n");
  const auto backend = make_system_node_backend();
  CHECK_FALSE(backend->discover().nvml_loaded);
  GpuReading gpu;
  gpu.index = 0;
  CHECK_FALSE(backend->telemetry(gpu));
}
