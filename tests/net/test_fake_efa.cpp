// The real RDMA engine of src/net/ on the fake libibverbs in EFA mode (FAKE_IBV_EFA=1): EFA
// devices found and their RDMA operations read through efadv (the fake exports libefa's
// functions too: PREFLIGHT_EFADV_LIBRARY names it, see fake_verbs_fixture.hpp), and transfers on
// SRD queue pairs, whose completions the fake delivers out of order as EFA may; then the
// transports of InfiniBand and RoCE devices and the members of a bonded RoCE device. What it
// cannot show: a real EFA device, its firmware's limits, AWS's fabric.
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checks/rdma/rdma_math.hpp"
#include "net/fake_verbs_fixture.hpp"
#include "net/verbs_connection.hpp"
#include "preflight/engine/rdma_engine.hpp"

using namespace preflight;
using namespace preflight::fake_verbs_test;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// `devices` fake EFA devices at EDR 4x (100 Gb/s, what EFA's driver reports), offering `ops`.
class FakeEfa {
 public:
  explicit FakeEfa(int devices = 1, const std::string& ops = "read,write") : verbs_(devices) {
    verbs_.set("FAKE_IBV_EFA", "1");
    verbs_.set("FAKE_IBV_EFA_OPS", ops);
    verbs_.set("FAKE_IBV_SPEED", "EDR");
  }
  void set(const std::string& name, const std::string& value) { verbs_.set(name, value); }

 private:
  FakeVerbs verbs_;
};

RdmaTransferJob efa_job(const std::string& from, const std::string& to, RdmaOp op) {
  RdmaTransferJob transfer = job(from, to);
  transfer.op = op;
  return transfer;
}

}  // namespace

TEST_CASE("ibverbs fake efa: the fake exports libefa's efadv and the extended verbs") {
  void* handle = dlopen(FAKE_IBVERBS_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  CHECK(dlvsym(handle, "efadv_query_device", "EFA_1.1") != nullptr);
  CHECK(dlvsym(handle, "efadv_create_qp_ex", "EFA_1.1") != nullptr);
  CHECK(dlvsym(handle, "ibv_qp_to_qp_ex", "IBVERBS_1.6") != nullptr);
  for (const char* name : {"ibv_create_ah", "ibv_destroy_ah"}) {
    INFO(name);
    CHECK(dlvsym(handle, name, "IBVERBS_1.1") != nullptr);
    CHECK(dlvsym(handle, name, "IBVERBS_1.0") != dlvsym(handle, name, "IBVERBS_1.1"));
  }
  dlclose(handle);
}

TEST_CASE("ibverbs fake efa: 32 EFA devices are listed with their transport and operations") {
  std::string ops = "read,write";
  bool read = true;
  bool write = true;
  SECTION("read and write") {}
  SECTION("read only (p4d)") {
    ops = "read";
    write = false;
  }
  SECTION("write only") {
    ops = "write";
    read = false;
  }
  SECTION("neither") {
    ops = "none";
    read = write = false;
  }
  FakeEfa fake(32, ops);
  const Objects before = Objects::now();
  const RdmaInventory inventory = make_system_rdma_engine()->inventory();
  INFO(inventory.error);
  REQUIRE(inventory.library_loaded);
  CHECK(inventory.error.empty());
  REQUIRE(inventory.devices.size() == 32);
  for (const RdmaDevice& device : inventory.devices) {
    INFO(device.name << ": " << device.error);
    CHECK(device.error.empty());
    CHECK(device.transport == "efa");
    CHECK(device.rdma_read == read);
    CHECK(device.rdma_write == write);
    CHECK(device.bond_members.empty());
    REQUIRE(device.ports.size() == 1);
    const RdmaPort& port = device.ports[0];
    CHECK(port.state == "ACTIVE");
    CHECK(port.link_layer == "Unspecified");
    CHECK(rdma_port_rate_gbps(port.active_speed, port.active_width) == 100.0);
    // No LID: the device's address is its GID 0.
    CHECK(port.usable_gid);
    CHECK(port.gid_index == 0);
  }
  CHECK(inventory.devices.back().name == "fake31");
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake efa: without libefa the devices are listed and a transfer says why") {
  FakeEfa fake(2);
  fake.set("PREFLIGHT_EFADV_LIBRARY", "/nonexistent/libefa.so.1");
  const auto engine = make_system_rdma_engine();
  const RdmaInventory inventory = engine->inventory();
  REQUIRE(inventory.devices.size() == 2);
  for (const RdmaDevice& device : inventory.devices) {
    INFO(device.name << ": " << device.error);
    // Listed and judged as usual; its operations are unknown, so a transfer is tried (below).
    CHECK(device.error.empty());
    CHECK(device.transport == "efa");
    CHECK(device.rdma_write);
    CHECK(device.rdma_read);
  }
  const Objects before = Objects::now();
  const RdmaTransferResult r = engine->transfer(job("fake0", "fake1"));
  INFO(describe(r));
  CHECK_FALSE(r.connected);
  CHECK_THAT(r.error, Catch::StartsWith("/nonexistent/libefa.so.1 not loadable: "));
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake efa: SRD transfers write and read, verified, and tear down") {
  RdmaOp op = RdmaOp::write;
  std::string ops = "read,write";
  const char* counted = "writes";
  SECTION("RDMA write") {}
  SECTION("RDMA read on a device that only reads (p4d)") {
    op = RdmaOp::read;
    ops = "read";
    counted = "reads";
  }
  SECTION("RDMA write on a device that only writes") {
    ops = "write";
  }
  FakeEfa fake(2, ops);
  const auto engine = make_system_rdma_engine();
  const Objects before = Objects::now();
  const long moved = fake_counter(counted);
  for (const char* to : {"fake0", "fake1"}) {
    INFO("fake0 to " << to);
    const RdmaTransferJob transfer = efa_job("fake0", to, op);
    const RdmaTransferResult r = engine->transfer(transfer);
    // The fake's SRD completions overtake each other: every one counts once.
    require_clean(r, transfer.message_bytes, "srd");
    CHECK(r.gbps <= 100.0 * 1.001);
  }
  CHECK(fake_counter(counted) > moved);
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake efa: corruption is found in the bytes that arrived") {
  RdmaOp op = RdmaOp::write;
  SECTION("RDMA write: the peer's buffer") {}
  SECTION("RDMA read: the initiator's buffer") {
    op = RdmaOp::read;
  }
  FakeEfa fake(2);
  fake.set("FAKE_IBV_CORRUPT", "1");
  const RdmaTransferJob transfer = efa_job("fake0", "fake1", op);
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(transfer);
  INFO(describe(r));
  CHECK(r.error.empty());
  CHECK(r.queue_pair == "srd");
  CHECK(r.verified);
  // One flipped byte in each of the buffer's slots (4 messages) that was written.
  const std::uint64_t messages = r.bytes / transfer.message_bytes;
  CHECK(r.bad_bytes == std::min<std::uint64_t>(messages, 4));
  CHECK(r.bad_bytes > 0);
}

TEST_CASE("ibverbs fake efa: a hung SRD transfer ends at the deadline, abandoned") {
  FakeEfa fake(2);
  fake.set("FAKE_IBV_HANG", "1");
  const Objects before = Objects::now();
  RdmaTransferJob transfer = efa_job("fake0", "fake1", RdmaOp::write);
  transfer.deadline = Clock::now() + 500ms;
  const auto start = Clock::now();
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(transfer);
  INFO(describe(r));
  // About 0.5 s; a busy machine gets 3 s more.
  CHECK(seconds_since(start) < 0.5 + 3.0);
  CHECK(r.connected);
  CHECK(r.timed_out);
  CHECK(r.bytes == 0);
  CHECK_FALSE(r.verified);
  // Abandoned, not destroyed: both queue pairs and the address handle stay.
  const Objects after = Objects::now();
  CHECK(after.qps == before.qps + 2);
  CHECK(after.ahs == before.ahs + 1);
}

TEST_CASE("ibverbs fake efa: a completion error on SRD gives the verbs status") {
  FakeEfa fake;
  fake.set("FAKE_IBV_FAIL_AT", "3");
  const Objects before = Objects::now();
  const RdmaTransferResult r =
      make_system_rdma_engine()->transfer(efa_job("fake0", "fake0", RdmaOp::write));
  INFO(describe(r));
  CHECK(r.connected);
  CHECK_FALSE(r.verified);
  CHECK(r.error == "IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded: wr 2");
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake efa: an operation the device does not offer is refused, not tried") {
  std::string ops;
  RdmaOp op = RdmaOp::write;
  std::string expected;
  SECTION("RDMA write on a device that only reads") {
    ops = "read";
    expected = "fake0 does not offer RDMA write (efadv_query_device caps 0x3)";
  }
  SECTION("RDMA read on a device that only writes") {
    ops = "write";
    op = RdmaOp::read;
    expected = "fake0 does not offer RDMA read (efadv_query_device caps 0xa)";
  }
  SECTION("either on a device with neither") {
    ops = "none";
    expected = "fake0 does not offer RDMA write (efadv_query_device caps 0x2)";
  }
  FakeEfa fake(2, ops);
  const Objects before = Objects::now();
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(efa_job("fake0", "fake1", op));
  INFO(describe(r));
  CHECK_FALSE(r.connected);
  CHECK(r.error == expected);
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake efa: RDMA messages are bounded by the device, not the port's MTU") {
  FakeEfa fake;
  // 256 KiB messages (the clean transfers above) are far beyond the port's max_msg_sz of 8928.
  RdmaTransferJob huge = efa_job("fake0", "fake0", RdmaOp::write);
  huge.message_bytes = (std::size_t{1} << 30) + 4096;
  const RdmaTransferResult r = make_system_rdma_engine()->transfer(huge);
  CHECK(r.error ==
        "invalid transfer: message of 1073745920 bytes exceeds the devices' largest "
        "RDMA operation of 1073741824");
}

TEST_CASE("ibverbs fake efa: an RC queue pair on an EFA device fails as on EFA") {
  FakeEfa fake;
  const Objects before = Objects::now();
  {
    const VerbsLibrary library(FAKE_IBVERBS_PATH);
    REQUIRE(library.ok());
    const VerbsDeviceList list(library);
    VerbsEndpoint end;
    REQUIRE(open_endpoint(library, list, "fake0", 1, end).empty());
    CHECK(end.efa);
    CHECK(create_queue_pair(library, end, 16, 17) ==
          "ibv_create_qp(fake0): Operation not supported");
  }
  CHECK(Objects::now() == before);
}

TEST_CASE("ibverbs fake efa: InfiniBand and RoCE transports, and a bonded RoCE device") {
  SECTION("InfiniBand") {
    FakeVerbs fake(1);
    const RdmaInventory inventory = make_system_rdma_engine()->inventory();
    REQUIRE(inventory.devices.size() == 1);
    CHECK(inventory.devices[0].transport == "ib");
    CHECK(inventory.devices[0].rdma_write);
    CHECK(inventory.devices[0].rdma_read);
  }
  SECTION("RoCE: fake0 on bond0, fake1 on a plain interface") {
    FakeVerbs fake(2);
    fake.set("FAKE_IBV_LINK_LAYER", "Ethernet");
    FakeIbSysfs& sysfs = fake.sysfs();
    for (int device = 0; device < 2; ++device) sysfs.add_roce_gids(device, 1, true);
    // mlx5_bond_0: its GIDs are bond0's addresses; the bond's members are in class/net.
    write_text(sysfs.port_dir(0, 1) / "gid_attrs/ndevs/0", "bond0");
    const std::filesystem::path net = std::filesystem::path(sysfs.root()) / "class/net";
    write_text(net / "bond0/bonding/slaves", "ens1f0np0 ens1f1np1");
    // A device without GID interfaces in sysfs: its PCI function's own interface.
    std::filesystem::create_directories(sysfs.device_dir(1) / "device/net/ens2f0np0");
    std::filesystem::create_directories(net / "ens2f0np0");
    const RdmaInventory inventory = make_system_rdma_engine()->inventory();
    REQUIRE(inventory.devices.size() == 2);
    CHECK(inventory.devices[0].transport == "roce");
    CHECK(inventory.devices[0].bond_members == std::vector<std::string>{"ens1f0np0", "ens1f1np1"});
    CHECK(inventory.devices[1].transport == "roce");
    CHECK(inventory.devices[1].bond_members.empty());
  }
}
