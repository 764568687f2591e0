// The real libibverbs engine of src/net/ (make_system_rdma_engine(): dlopen, the inventory from
// verbs and sysfs, queue-pair transitions, RDMA writes with selective signalling, completion
// polling, error texts, deadlines, cancellation, verification and teardown) against the fake
// libibverbs of tests/fake_ibverbs, on machines without an RDMA NIC. What it cannot show: a real
// NIC, a fabric, real bandwidth, GPU memory registration (docs/checks/rdma.md).
//
// The fake's environment, sysfs tree, counters and jobs: fake_verbs_fixture.hpp.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <stdlib.h>  // mkdtemp, setenv, unsetenv
#include <unistd.h>  // symlink

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "checks/rdma/rdma_math.hpp"
#include "net/fake_verbs_fixture.hpp"
#include "preflight/engine/rdma_engine.hpp"

using namespace preflight;
using namespace preflight::fake_verbs_test;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST_CASE("ibverbs fake: the fake exports rdma-core's symbol versions") {
  // dlsym must give the IBVERBS_1.1 functions, as it does with the real library, where the
  // IBVERBS_1.0 twins take the old ABI's structs.
  void* handle = dlopen(FAKE_IBVERBS_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  for (const char* name : {"ibv_get_device_list", "ibv_open_device", "ibv_query_port", "ibv_reg_mr",
                           "ibv_create_qp", "ibv_modify_qp"}) {
    INFO(name);
    void* current = dlvsym(handle, name, "IBVERBS_1.1");
    void* old = dlvsym(handle, name, "IBVERBS_1.0");
    CHECK(current != nullptr);
    CHECK(old != nullptr);
    CHECK(old != current);
    CHECK(dlsym(handle, name) == current);
  }
  CHECK(dlvsym(handle, "ibv_reg_mr_iova2", "IBVERBS_1.8") != nullptr);
  CHECK(dlvsym(handle, "ibv_reg_dmabuf_mr", "IBVERBS_1.12") != nullptr);
  dlclose(handle);
}

TEST_CASE("ibverbs fake: inventory of two InfiniBand devices from verbs and sysfs") {
  FakeVerbs fake(2);
  // fake1 sits on a PCIe link trained down to Gen4 x8.
  const PciLink degraded{1, "16.0 GT/s PCIe", 8, "32.0 GT/s PCIe", 16};
  std::filesystem::remove_all(fake.sysfs().root() + "/devices/pci0000:00/0000:00:02.0");
  std::filesystem::remove(fake.sysfs().device_dir(1) / "device");
  fake.sysfs().add_device(1, degraded);

  SECTION("through the context's extended query_port") {}
  SECTION("through the exported ibv_query_port (a context without the extended part)") {
    fake.set("FAKE_IBV_COMPAT_CONTEXT", "1");
  }

  const Objects before = Objects::now();
  const RdmaInventory inventory = make_system_rdma_engine()->inventory();
  INFO(inventory.error);
  REQUIRE(inventory.library_loaded);
  CHECK(inventory.error.empty());
  REQUIRE(inventory.devices.size() == 2);
  for (int i = 0; i < 2; ++i) {
    const RdmaDevice& device = inventory.devices[static_cast<std::size_t>(i)];
    INFO(device.name << ": " << device.error);
    CHECK(device.name == "fake" + std::to_string(i));
    CHECK(device.error.empty());
    CHECK(device.firmware == "28.39.1002");
    CHECK(device.pci_bus_id == FakeIbSysfs::bus_id(i));
    CHECK(device.sysfs_path.size() > device.pci_bus_id.size());
    CHECK(device.numa_node == i);
    CHECK(device.pcie_max_gen == 5);
    CHECK(device.pcie_max_width == 16);
    REQUIRE(device.ports.size() == 1);
    const RdmaPort& port = device.ports[0];
    CHECK(port.port_num == 1);
    CHECK(port.state == "ACTIVE");
    CHECK(port.phys_state == "LinkUp");
    CHECK(rdma_port_rate_gbps(port.active_speed, port.active_width) == 400.0);  // NDR 4x
    CHECK(port.active_mtu == 4096);
    CHECK(port.link_layer == "InfiniBand");
    CHECK(port.usable_gid);
    CHECK(port.gid_index == 0);
  }
  CHECK(inventory.devices[0].pcie_gen == 5);
  CHECK(inventory.devices[0].pcie_width == 16);
  CHECK(inventory.devices[1].pcie_gen == 4);
  CHECK(inventory.devices[1].pcie_width == 8);
  // Every context it opened is closed again.
  const Objects after = Objects::now();
  INFO(describe(before) << " -> " << describe(after));
  CHECK(after == before);
}

TEST_CASE("ibverbs fake: the rate, MTU and port count are the ports' own") {
  FakeVerbs fake(1, 2);
  fake.set("FAKE_IBV_SPEED", "HDR");
  fake.set("FAKE_IBV_WIDTH", "2");
  fake.set("FAKE_IBV_MTU", "2048");
  const RdmaInventory inventory = make_system_rdma_engine()->inventory();
  REQUIRE(inventory.devices.size() == 1);
  const RdmaDevice& device = inventory.devices[0];
  REQUIRE(device.ports.size() == 2);
  for (const RdmaPort& port : device.ports) {
    CHECK(rdma_port_rate_gbps(port.active_speed, port.active_width) == 100.0);  // HDR 2x
    CHECK(rdma_port_rate_name(port.active_speed, port.active_width) == "HDR 2x (100 Gb/s)");
    CHECK(port.active_mtu == 2048);
  }
  CHECK(device.ports[1].port_num == 2);
}

TEST_CASE("ibverbs fake: a down port reads DOWN and Disabled, and cannot transfer") {
  FakeVerbs fake(2);
  fake.set("FAKE_IBV_DOWN", "fake1");
  SECTION("physical state from sysfs") {
    fake.sysfs().set_phys_state(1, 1, "3: Disabled");
  }
  SECTION("physical state from ibv_query_port where sysfs has none") {
    std::filesystem::remove(fake.sysfs().port_dir(1, 1) / "phys_state");
  }
  auto engine = make_system_rdma_engine();
  const RdmaInventory inventory = engine->inventory();
  REQUIRE(inventory.devices.size() == 2);
  CHECK(device_named(inventory, "fake0").ports.at(0).state == "ACTIVE");
  const RdmaPort& down = device_named(inventory, "fake1").ports.at(0);
  CHECK(down.state == "DOWN");
  CHECK(down.phys_state == "Disabled");

  const RdmaTransferResult r = engine->transfer(job("fake0", "fake1"));
  INFO(describe(r));
  CHECK_FALSE(r.connected);
  CHECK(r.error == "fake1 port 1 is not active (DOWN)");
}

TEST_CASE("ibverbs fake: RoCE ports use the first RoCE v2 GID with an IP address") {
  FakeVerbs fake(2);
  fake.set("FAKE_IBV_LINK_LAYER", "Ethernet");
  fake.sysfs().add_roce_gids(0, 1, true);
  fake.sysfs().add_roce_gids(1, 1, true);
  auto engine = make_system_rdma_engine();

  SECTION("both ports have an address") {
    const RdmaInventory inventory = engine->inventory();
    REQUIRE(inventory.devices.size() == 2);
    for (const RdmaDevice& device : inventory.devices) {
      INFO(device.name);
      REQUIRE(device.ports.size() == 1);
      CHECK(device.ports[0].link_layer == "Ethernet");
      CHECK(device.ports[0].usable_gid);
      CHECK(device.ports[0].gid_index == 3);
    }
    // The fake delivers a write only when the destination GID is one of the peer port's.
    const Objects before = Objects::now();
    require_clean(engine->transfer(job("fake0", "fake0")), std::size_t{256} << 10);
    require_clean(engine->transfer(job("fake0", "fake1")), std::size_t{256} << 10);
    CHECK(Objects::now() == before);
  }
  SECTION("a port whose interface has no address") {
    std::filesystem::remove_all(fake.sysfs().port_dir(1, 1) / "gids");
    std::filesystem::remove_all(fake.sysfs().port_dir(1, 1) / "gid_attrs");
    fake.sysfs().add_roce_gids(1, 1, false);
    const RdmaInventory inventory = engine->inventory();
    const RdmaPort& port = device_named(inventory, "fake1").ports.at(0);
    CHECK_FALSE(port.usable_gid);
    CHECK(port.gid_index == -1);
    const RdmaTransferResult r = engine->transfer(job("fake0", "fake1"));
    INFO(describe(r));
    CHECK_FALSE(r.connected);
    CHECK(r.error == "fake1 port 1 has no RoCE v2 GID with an IP address");
  }
}

TEST_CASE("ibverbs fake: a device that cannot be opened carries the verbs error") {
  FakeVerbs fake(2);
  fake.set("FAKE_IBV_OPEN_FAIL", "fake1");
  auto engine = make_system_rdma_engine();
  const RdmaInventory inventory = engine->inventory();
  REQUIRE(inventory.devices.size() == 2);
  CHECK(device_named(inventory, "fake0").error.empty());
  const RdmaDevice& failed = device_named(inventory, "fake1");
  CHECK(failed.error == "ibv_open_device(fake1): Permission denied");
  CHECK(failed.ports.empty());
  // sysfs still places it.
  CHECK(failed.pci_bus_id == FakeIbSysfs::bus_id(1));

  const RdmaTransferResult r = engine->transfer(job("fake0", "fake1"));
  INFO(describe(r));
  CHECK_FALSE(r.connected);
  CHECK(r.error == "ibv_open_device(fake1): Permission denied");
}

TEST_CASE("ibverbs fake: a node without devices, or without RDMA in its kernel") {
  FakeVerbs fake(0);
  SECTION("no devices") {
    const auto engine = make_system_rdma_engine();
    const RdmaInventory inventory = engine->inventory();
    CHECK(inventory.library_loaded);
    CHECK(inventory.error.empty());
    CHECK(inventory.devices.empty());
    CHECK(engine->transfer(job("fake0", "fake0")).error == "no RDMA device named fake0");
  }
  SECTION("ibv_get_device_list fails with ENOSYS: the same as no devices") {
    fake.set("FAKE_IBV_NO_KERNEL", "1");
    const auto engine = make_system_rdma_engine();
    const RdmaInventory inventory = engine->inventory();
    CHECK(inventory.library_loaded);
    CHECK(inventory.error.empty());
    CHECK(inventory.devices.empty());
    CHECK(engine->transfer(job("fake0", "fake0")).error ==
          "no RDMA devices (the kernel has no RDMA support)");
  }
}

TEST_CASE("ibverbs fake: a library that cannot be loaded or lacks the verbs") {
  FakeVerbs fake;
  std::string library;
  std::string expected;
  SECTION("missing") {
    library = "/nonexistent/libibverbs.so.1";
    expected = "/nonexistent/libibverbs.so.1: cannot open shared object file";
  }
  SECTION("not libibverbs") {
    library = "libm.so.6";
    expected = "undefined symbol: ibv_get_device_list";
  }
  fake.set("PREFLIGHT_IBVERBS_LIBRARY", library);
  const auto engine = make_system_rdma_engine();
  const RdmaInventory inventory = engine->inventory();
  CHECK_FALSE(inventory.library_loaded);
  CHECK_THAT(inventory.error, Catch::Contains(expected));
  CHECK(inventory.devices.empty());
  const RdmaTransferResult r = engine->transfer(job("fake0", "fake0"));
  CHECK_FALSE(r.connected);
  CHECK_THAT(r.error, Catch::Contains(expected));
}

TEST_CASE("ibverbs fake: a loopback from host memory writes, measures and verifies") {
  FakeVerbs fake;
  const Objects before = Objects::now();
  const long writes = fake_counter("writes");
  const RdmaTransferJob loopback = job("fake0", "fake0", 0.2);
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(loopback);
  require_clean(r, loopback.message_bytes);
  // Every completed write was a real copy, and no faster than the port's 400 Gb/s allows: the
  // fake holds completions back to the port's rate.
  CHECK(fake_counter("writes") - writes >= static_cast<long>(r.bytes / loopback.message_bytes));
  CHECK(r.gbps <= 400.0 * 1.001);
  // Queue pairs, regions, queues, domains and contexts all destroyed, none refused as busy.
  const Objects after = Objects::now();
  INFO(describe(before) << " -> " << describe(after));
  CHECK(after == before);
}

TEST_CASE("ibverbs fake: transfers between two NICs and between ports") {
  FakeVerbs fake(2, 2);
  auto engine = make_system_rdma_engine();
  const Objects before = Objects::now();
  SECTION("fake0 to fake1") {
    // The fake delivers a write only when the destination LID is the peer port's.
    require_clean(engine->transfer(job("fake0", "fake1")), std::size_t{256} << 10);
  }
  SECTION("fake1 port 2 to fake0 port 1") {
    RdmaTransferJob pair = job("fake1", "fake0");
    pair.from_port = 2;
    require_clean(engine->transfer(pair), pair.message_bytes);
  }
  SECTION("a port the device does not have") {
    RdmaTransferJob pair = job("fake0", "fake1");
    pair.to_port = 3;
    CHECK(engine->transfer(pair).error == "fake1 has no port 3");
  }
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake: the device's queue limit caps the requests in flight") {
  // 64 requests in flight, one in 16 signalled, on a device that takes 8 per queue pair: the
  // fake refuses a queue pair or a request beyond that, so this passes only if the engine
  // lowers both the depth and the signalling interval.
  FakeVerbs fake;
  fake.set("FAKE_IBV_MAX_QP_WR", "8");
  RdmaTransferJob deep = job("fake0", "fake0");
  deep.outstanding = 64;
  deep.signal_every = 16;
  deep.message_bytes = std::size_t{64} << 10;
  require_clean(make_system_rdma_engine()->transfer(deep), deep.message_bytes);
}

TEST_CASE("ibverbs fake: the queue's edge cases: one in flight, all signalled, no time") {
  FakeVerbs fake;
  RdmaTransferJob edge = job("fake0", "fake0");
  SECTION("one request in flight") {
    edge.outstanding = 1;
    edge.signal_every = 16;
  }
  SECTION("every request signalled") {
    edge.signal_every = 1;
  }
  SECTION("zero seconds: still one batch, written and verified") {
    edge.seconds = 0;
  }
  SECTION("a message that is not a whole number of pages") {
    edge.message_bytes = 100001;
  }
  require_clean(make_system_rdma_engine()->transfer(edge), edge.message_bytes);
}

TEST_CASE("ibverbs fake: a message larger than the ports take is refused before writing") {
  FakeVerbs fake;
  RdmaTransferJob huge = job("fake0", "fake0");
  huge.message_bytes = (std::size_t{1} << 30) + 1;
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(huge);
  CHECK_FALSE(r.connected);
  CHECK(r.error ==
        "invalid transfer: message of 1073741825 bytes exceeds the ports' maximum of 1073741824");
}

TEST_CASE("ibverbs fake: corrupted writes are counted") {
  FakeVerbs fake;
  fake.set("FAKE_IBV_CORRUPT", "1");
  const RdmaTransferJob loopback = job("fake0", "fake0");
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(loopback);
  INFO(describe(r));
  CHECK(r.error.empty());
  CHECK(r.connected);
  CHECK(r.verified);
  // One flipped byte in each of the buffer's slots (4 messages) that was written.
  const std::uint64_t messages = r.bytes / loopback.message_bytes;
  CHECK(r.bad_bytes == std::min<std::uint64_t>(messages, 4));
  CHECK(r.bad_bytes > 0);
}

TEST_CASE("ibverbs fake: a completion error gives the verbs status") {
  FakeVerbs fake;
  // The 6th request (wr 5) fails and those after it are flushed. Of the five before it, the 4th
  // (wr 3) was signalled: its completion vouches for four.
  fake.set("FAKE_IBV_FAIL_AT", "6");
  const Objects before = Objects::now();
  const RdmaTransferJob loopback = job("fake0", "fake0");
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(loopback);
  INFO(describe(r));
  CHECK(r.connected);
  CHECK_FALSE(r.timed_out);
  CHECK_FALSE(r.verified);
  CHECK(r.error == "IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded: wr 5");
  // Only what a successful completion vouched for counts.
  CHECK(r.bytes == 4 * loopback.message_bytes);
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake: a queue pair that cannot be connected names the transition") {
  FakeVerbs fake(2);
  std::string state;
  SECTION("INIT") {
    state = "INIT";
  }
  SECTION("RTR") {
    state = "RTR";
  }
  SECTION("RTS") {
    state = "RTS";
  }
  fake.set("FAKE_IBV_MODIFY_FAIL", state);
  const Objects before = Objects::now();
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(job("fake0", "fake1"));
  INFO(describe(r));
  CHECK_FALSE(r.connected);
  CHECK_FALSE(r.timed_out);
  CHECK(r.bytes == 0);
  CHECK(r.error == "ibv_modify_qp(" + state + "): Connection timed out");
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake: a link that never answers times out by the deadline") {
  FakeVerbs fake;
  fake.set("FAKE_IBV_HANG", "1");
  const Objects before = Objects::now();
  RdmaTransferJob loopback = job("fake0", "fake0");
  SECTION("during the writes") {
    loopback.deadline = Clock::now() + 500ms;
    const auto start = Clock::now();
    const RdmaTransferResult r = make_system_rdma_engine()->transfer(loopback);
    INFO(describe(r));
    // About 0.5 s; a busy machine gets 3 s more. Without the deadline it would never return.
    CHECK(seconds_since(start) < 0.5 + 3.0);
    CHECK(r.connected);
    CHECK(r.timed_out);
    CHECK(r.bytes == 0);
    CHECK_FALSE(r.verified);
    // Abandoned, not destroyed (destroying could wait on a hung device): both queue pairs stay.
    CHECK(Objects::now().qps == before.qps + 2);
  }
  SECTION("a deadline already past: nothing is written") {
    loopback.deadline = Clock::now() - 1ms;
    const auto start = Clock::now();
    const RdmaTransferResult r = make_system_rdma_engine()->transfer(loopback);
    INFO(describe(r));
    // Milliseconds; bounded for a busy machine, far below the hang that writing would be.
    CHECK(seconds_since(start) < 3.0);
    CHECK(r.timed_out);
    CHECK_FALSE(r.connected);
  }
}

TEST_CASE("ibverbs fake: cancel ends a transfer promptly") {
  FakeVerbs fake;
  bool hang = false;
  SECTION("while the writes flow") {}
  SECTION("while the link hangs") {
    fake.set("FAKE_IBV_HANG", "1");
    hang = true;
  }
  RdmaTransferJob loopback = job("fake0", "fake0", 10.0);
  loopback.deadline = Clock::now() + 20s;
  const auto cancel = std::make_shared<std::atomic<bool>>(false);
  loopback.cancel = cancel;
  // The cancel comes while the transfer is under way: once its two queue pairs exist and, unless
  // the link hangs, writes are being made (polled, for up to 10 s: a busy machine is slow to get
  // there), and 0.2 s into that.
  const CounterReader counter;
  const long qps = counter("qps");
  const long writes = counter("writes");
  bool under_way = false;
  Clock::time_point cancelled_at;
  std::thread canceller([&] {
    for (const auto give_up = Clock::now() + 10s; Clock::now() < give_up;) {
      under_way = counter("qps") >= qps + 2 && (hang || counter("writes") > writes);
      if (under_way) break;
      std::this_thread::sleep_for(5ms);
    }
    std::this_thread::sleep_for(200ms);
    cancelled_at = Clock::now();
    cancel->store(true);
  });
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(loopback);
  const auto ended = Clock::now();
  canceller.join();
  INFO(describe(r));
  CHECK(under_way);
  // Milliseconds after the cancel; a busy machine gets 3 s. Not honoured, the transfer would
  // take its 10 s (or, hung, its 20 s deadline).
  CHECK(std::chrono::duration<double>(ended - cancelled_at).count() < 3.0);
  CHECK(r.error == "cancelled");
  CHECK_FALSE(r.timed_out);
  CHECK_FALSE(r.verified);
}

TEST_CASE("ibverbs fake: slow_factor 0.5 halves the bandwidth") {
  // SDR 1x: a 2.5 Gb/s port, which the fake paces completions to, so the figures depend on the
  // engine's idling and not on how fast this machine copies memory. 32 writes of 64 KiB in
  // flight are 6.7 ms of the port's time: a sender thread that a loaded machine leaves waiting
  // for less than that still keeps the port busy.
  FakeVerbs fake;
  fake.set("FAKE_IBV_SPEED", "SDR");
  fake.set("FAKE_IBV_WIDTH", "1");
  RdmaTransferJob loopback = job("fake0", "fake0", 0.4);
  loopback.message_bytes = std::size_t{64} << 10;
  loopback.outstanding = 32;
  auto engine = make_system_rdma_engine();
  const RdmaTransferResult full = engine->transfer(loopback);
  require_clean(full, loopback.message_bytes);
  loopback.slow_factor = 0.5;
  loopback.deadline = Clock::now() + 5s;
  const RdmaTransferResult slowed = engine->transfer(loopback);
  require_clean(slowed, loopback.message_bytes);
  INFO("full " << full.gbps << " Gb/s, slowed " << slowed.gbps << " Gb/s");
  // Never above the port's rate (how far below depends on how loaded this machine is).
  CHECK(full.gbps <= 2.5 * 1.001);
  CHECK(slowed.gbps > 0.3 * full.gbps);
  CHECK(slowed.gbps < 0.7 * full.gbps);
}

TEST_CASE("ibverbs fake: slow_factor holds when the queue drains slower than a pacing phase") {
  // The check's own transfer (1 MiB writes, 64 in flight, one in 16 signalled, the quick
  // profile's 0.25 s) on a 10 Gb/s port: 54 ms of queued writes, longer than the engine's 25 ms
  // pacing phase, so the 0.25 s hold only two or three active phases. The rate must still be
  // the factor's share: the window has to include the last phase's idle share too.
  FakeVerbs fake;
  fake.set("FAKE_IBV_SPEED", "SDR");  // SDR 4x: 10 Gb/s
  RdmaTransferJob loopback = job("fake0", "fake0", 0.25);
  loopback.message_bytes = std::size_t{1} << 20;
  loopback.outstanding = 64;
  loopback.signal_every = 16;
  auto engine = make_system_rdma_engine();
  const RdmaTransferResult full = engine->transfer(loopback);
  require_clean(full, loopback.message_bytes);
  loopback.slow_factor = 0.5;
  loopback.deadline = Clock::now() + 5s;
  const RdmaTransferResult slowed = engine->transfer(loopback);
  require_clean(slowed, loopback.message_bytes);
  INFO("full " << full.gbps << " Gb/s, slowed " << slowed.gbps << " Gb/s");
  // The bug this guards against reads above 0.6. Below, the margin is for a loaded machine or a
  // sanitizer build, where a descheduled copy thread lowers the slowed rate further.
  CHECK(slowed.gbps > 0.25 * full.gbps);
  CHECK(slowed.gbps < 0.6 * full.gbps);
}

TEST_CASE("ibverbs fake: GPU memory is a clear error where it cannot be had") {
  FakeVerbs fake;
  RdmaTransferJob gpu = job("fake0", "fake0");
  gpu.memory = RdmaMemory::gpu;
  gpu.gpu_cuda_ordinal = 0;
  const Objects before = Objects::now();
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(gpu);
  INFO(describe(r));
  CHECK_FALSE(r.connected);
  CHECK_FALSE(r.timed_out);
  CHECK(r.bytes == 0);
#if FAKE_IBVERBS_WITH_CUDA
  // No GPU, or one the fake cannot reach: either way a CUDA or registration error.
  CHECK_FALSE(r.error.empty());
#else
  CHECK(r.error == "built without CUDA: GPUDirect not available");
#endif
  CHECK(Objects::now() == before);
}
