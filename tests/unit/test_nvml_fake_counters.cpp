// The error counters through the real NVML code path (src/gpu/nvml_library.cpp, the backend's
// error_counters()) against the fake NVML: what each counter reads, counters that climb between
// readings, and queries that are not supported or fail. docs/checks/counters.md.
#include <catch2/catch.hpp>

#include <string>

#include "preflight/engine/node_backend.hpp"
#include "support/fake_nvml_library.hpp"

using namespace preflight;
using preflight::test::FakeNvml;

TEST_CASE("nvml fake counters: ECC, PCIe replays and NVLink errors summed over the links") {
  const FakeNvml fake(R"(
gpus=2
gpu0.ecc_corrected_volatile=5
gpu0.ecc_uncorrected_volatile=1
gpu0.pcie_replay=4000
gpu0.nvlink_links=18
gpu0.nvlink_replay=1
gpu0.nvlink_recovery=2
gpu0.nvlink_crc_flit=3
gpu0.nvlink_crc_data=4
gpu1.nvlink_links=0
)");
  const auto backend = make_system_node_backend();
  const NodeReading node = backend->discover();
  REQUIRE(node.nvml_loaded);
  REQUIRE(node.gpus.size() >= 2);

  const auto c = backend->error_counters(node.gpus[0]);
  REQUIRE(c);
  CHECK(c->problems.empty());
  CHECK(c->ecc_corrected_volatile == 5u);
  CHECK(c->ecc_uncorrected_volatile == 1u);
  CHECK(c->pcie_replay == 4000u);
  CHECK(c->nvlink_replay == 18u);  // the same count on each of the 18 links
  CHECK(c->nvlink_recovery == 36u);
  CHECK(c->nvlink_crc_flit == 54u);
  CHECK(c->nvlink_crc_data == 72u);

  // A GPU without NVLink: not read, silently.
  const auto none = backend->error_counters(node.gpus[1]);
  REQUIRE(none);
  CHECK(none->problems.empty());
  CHECK_FALSE(none->nvlink_crc_flit);
  CHECK_FALSE(none->nvlink_replay);
  CHECK(none->pcie_replay == 0u);
}

TEST_CASE("nvml fake counters: counters that climb at every read rise between two readings") {
  const FakeNvml fake(R"(
gpus=1
gpu0.ecc_corrected_step=17000
gpu0.pcie_replay_step=3
gpu0.nvlink_links=2
gpu0.nvlink_crc_step=10
)");
  const auto backend = make_system_node_backend();
  const NodeReading node = backend->discover();
  REQUIRE(node.gpus.size() == 1);
  const auto first = backend->error_counters(node.gpus[0]);
  const auto second = backend->error_counters(node.gpus[0]);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(*second->ecc_corrected_volatile - *first->ecc_corrected_volatile == 17000u);
  CHECK(*second->pcie_replay - *first->pcie_replay == 3u);
  CHECK(*second->nvlink_crc_flit - *first->nvlink_crc_flit == 20u);  // both links
  CHECK(*second->nvlink_replay == *first->nvlink_replay);
}

TEST_CASE("nvml fake counters: a query not supported is unset, one that fails is said") {
  const FakeNvml fake(R"(
gpus=1
gpu0.unsupported.pcie_replay=1
gpu0.error.nvlink_errors=unknown
)");
  const auto backend = make_system_node_backend();
  const NodeReading node = backend->discover();
  REQUIRE(node.gpus.size() == 1);
  const auto c = backend->error_counters(node.gpus[0]);
  REQUIRE(c);
  CHECK_FALSE(c->pcie_replay);
  CHECK(c->ecc_corrected_volatile == 0u);
  // A failure leaves every NVLink sum unset: a partial sum would hide the links not read.
  CHECK_FALSE(c->nvlink_crc_flit);
  CHECK_FALSE(c->nvlink_recovery);
  REQUIRE(c->problems.size() == 1);
  CHECK_THAT(c->problems[0], Catch::Contains("nvmlDeviceGetNvLinkErrorCounter"));

  GpuReading cuda_only;
  cuda_only.index = -1;
  CHECK_FALSE(backend->error_counters(cuda_only));
}

TEST_CASE("nvml fake counters: no counters when NVML does not initialize") {
  const FakeNvml fake("init_error=1\n");
  const auto backend = make_system_node_backend();
  CHECK_FALSE(backend->discover().nvml_loaded);
  GpuReading gpu;
  gpu.index = 0;
  CHECK_FALSE(backend->error_counters(gpu));
}

TEST_CASE("nvml fake counters: Xid events registered for the run arrive on their GPU, once") {
  const FakeNvml fake(R"(
gpus=3
gpu1.xid_events=79,48
gpu2.unsupported.events=1
gpu2.xid_events=13
)");
  const auto backend = make_system_node_backend();
  const NodeReading node = backend->discover();
  REQUIRE(node.gpus.size() == 3);
  const auto events = backend->open_events(node);
  REQUIRE(events);
  // gpu2 cannot be registered: said, and its Xid never arrives.
  REQUIRE(events->problems.size() == 1);
  CHECK_THAT(events->problems[0], Catch::StartsWith("gpu2: Xid events not registered"));
  const auto got = events->drain(std::chrono::milliseconds(5));
  REQUIRE(got.size() == 2);
  CHECK(got[0].gpu_index == 1);
  CHECK(got[0].type == "xid");
  CHECK(got[0].data == 79u);
  CHECK(got[1].gpu_index == 1);
  CHECK(got[1].data == 48u);
  CHECK(events->drain(std::chrono::milliseconds(0)).empty());
}

TEST_CASE("nvml fake counters: no event stream when NVML does not initialize") {
  const FakeNvml fake("init_error=1\n");
  const auto backend = make_system_node_backend();
  const NodeReading node = backend->discover();
  CHECK_FALSE(backend->open_events(node));
}
