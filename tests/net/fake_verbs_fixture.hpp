#pragma once
// What the tests of the real RDMA engine on the fake libibverbs share (test_fake_ibverbs.cpp:
// InfiniBand and RoCE; test_fake_efa.cpp: EFA): the fake's environment set per test, a sysfs
// tree of its devices, its object counters, and short transfer jobs. FAKE_IBVERBS_PATH is the
// fake's path (tests/CMakeLists.txt).
//
// Every engine loads its library at its first use, but dlopen hands out the copy already loaded,
// and the engine never unloads it: one copy of the fake serves every test in this process. The
// fake therefore reads its configuration from the environment at every call; each test sets the
// variables it needs (FakeVerbs below), makes a fresh engine, and the previous values come back
// at its end. The fake's object counters are process-wide: tests compare them before and after.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <stdlib.h>  // mkdtemp, setenv, unsetenv

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "preflight/engine/rdma_engine.hpp"

namespace preflight::fake_verbs_test {

// Every variable the fake reads (docs/testing.md), cleared for each test so that one exported in
// the shell cannot change what a test sees.
inline constexpr const char* kFakeVariables[] = {
    "FAKE_IBV_DEVICES",   "FAKE_IBV_PORTS",     "FAKE_IBV_LINK_LAYER",  "FAKE_IBV_SPEED",
    "FAKE_IBV_WIDTH",     "FAKE_IBV_MTU",       "FAKE_IBV_DOWN",        "FAKE_IBV_SYSFS",
    "FAKE_IBV_OPEN_FAIL", "FAKE_IBV_NO_KERNEL", "FAKE_IBV_MODIFY_FAIL", "FAKE_IBV_FAIL_AT",
    "FAKE_IBV_HANG",      "FAKE_IBV_CORRUPT",   "FAKE_IBV_MAX_QP_WR",   "FAKE_IBV_COMPAT_CONTEXT",
    "FAKE_IBV_EFA",       "FAKE_IBV_EFA_OPS"};

// Environment variables changed for one scope; the first value seen of each comes back at its
// end.
class Env {
 public:
  Env() = default;
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;
  ~Env() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }
  void set(const std::string& name, const std::string& value) {
    save(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    save(name);
    unsetenv(name.c_str());
  }

 private:
  void save(const std::string& name) {
    for (const auto& entry : saved_) {
      if (entry.first == name) return;
    }
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream file(path);
  file << text << "\n";
  if (!file) throw std::runtime_error("cannot write " + path.string());
}

struct PciLink {
  int numa_node = 0;
  std::string speed = "32.0 GT/s PCIe";  // Gen5
  int width = 16;
  std::string max_speed = "32.0 GT/s PCIe";
  int max_width = 16;
};

// A sysfs tree in a temporary folder, in the layout the engine reads under /sys: each device's
// class/infiniband/fakeN folder, its `device` link to a PCI function under devices/, and per port
// the physical state and GID table.
class FakeIbSysfs {
 public:
  FakeIbSysfs() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/preflight-ibv-sysfs-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp " + pattern);
    root_ = pattern;
  }
  ~FakeIbSysfs() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FakeIbSysfs(const FakeIbSysfs&) = delete;
  FakeIbSysfs& operator=(const FakeIbSysfs&) = delete;

  const std::string& root() const { return root_; }
  std::filesystem::path device_dir(int device) const {
    return std::filesystem::path(root_) / "class/infiniband" / ("fake" + std::to_string(device));
  }
  std::filesystem::path port_dir(int device, int port) const {
    return device_dir(device) / "ports" / std::to_string(port);
  }
  // 0000:1b:00.0 for fake0, 0000:2b:00.0 for fake1, ...
  static std::string bus_id(int device) {
    char text[32];
    std::snprintf(text, sizeof text, "0000:%02x:00.0", 0x1b + 0x10 * device);
    return text;
  }

  void add_device(int device, const PciLink& link = {}, int ports = 1) {
    const auto pci = std::filesystem::path(root_) / "devices/pci0000:00" /
                     ("0000:00:0" + std::to_string(device + 1) + ".0") / bus_id(device);
    write_text(pci / "numa_node", std::to_string(link.numa_node));
    write_text(pci / "current_link_speed", link.speed);
    write_text(pci / "current_link_width", std::to_string(link.width));
    write_text(pci / "max_link_speed", link.max_speed);
    write_text(pci / "max_link_width", std::to_string(link.max_width));
    std::filesystem::create_directories(device_dir(device));
    std::filesystem::create_directory_symlink(pci, device_dir(device) / "device");
    for (int port = 1; port <= ports; ++port) set_phys_state(device, port, "5: LinkUp");
  }
  void set_phys_state(int device, int port, const std::string& text) {
    write_text(port_dir(device, port) / "phys_state", text);
  }
  // A GID table entry: its address (eight groups) and its type ("IB/RoCE v1", "RoCE v2").
  void add_gid(int device, int port, int index, const std::string& type, const std::string& gid) {
    write_text(port_dir(device, port) / "gid_attrs/types" / std::to_string(index), type);
    write_text(port_dir(device, port) / "gids" / std::to_string(index), gid);
  }
  // What mlx5 shows for a RoCE port with an IPv4 address: the link-local GID as v1 and v2
  // (entries 0 and 1), then 10.0.0.(10 + device) as v1 and v2 (2 and 3); only the link-local
  // ones when the interface has no address.
  void add_roce_gids(int device, int port, bool with_ip) {
    const std::string link_local =
        "fe80:0000:0000:0000:0202:c9ff:fe00:00" + std::to_string(10 + device);
    add_gid(device, port, 0, "IB/RoCE v1", link_local);
    add_gid(device, port, 1, "RoCE v2", link_local);
    if (!with_ip) return;
    char ip[64];
    std::snprintf(ip, sizeof ip, "0000:0000:0000:0000:0000:ffff:0a00:00%02x", 10 + device);
    add_gid(device, port, 2, "IB/RoCE v1", ip);
    add_gid(device, port, 3, "RoCE v2", ip);
  }

 private:
  std::string root_;
};

// The process's copy of the fake (the one the engine loaded: dlopen of the same path), for its
// counters.
inline long fake_counter(const char* name) {
  void* handle = dlopen(FAKE_IBVERBS_PATH, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  using CounterFn = long (*)(const char*);
  const auto counter = reinterpret_cast<CounterFn>(dlsym(handle, "fake_ibv_counter"));
  REQUIRE(counter != nullptr);
  const long value = counter(name);
  dlclose(handle);  // the engine's reference keeps it loaded
  return value;
}

// fake_counter for a thread other than the test's (Catch2's assertions are for the test's
// thread alone): looked up once, held loaded while this object lives.
class CounterReader {
 public:
  CounterReader() : handle_(dlopen(FAKE_IBVERBS_PATH, RTLD_NOW | RTLD_LOCAL)) {
    REQUIRE(handle_ != nullptr);
    read_ = reinterpret_cast<long (*)(const char*)>(dlsym(handle_, "fake_ibv_counter"));
    REQUIRE(read_ != nullptr);
  }
  ~CounterReader() { dlclose(handle_); }
  CounterReader(const CounterReader&) = delete;
  CounterReader& operator=(const CounterReader&) = delete;
  long operator()(const char* name) const { return read_(name); }

 private:
  void* handle_;
  long (*read_)(const char*) = nullptr;
};

// The verbs objects alive in the fake, and the teardowns it refused.
struct Objects {
  long contexts, pds, cqs, qps, mrs, ahs, busy;
  static Objects now() {
    return {fake_counter("contexts"), fake_counter("pds"), fake_counter("cqs"), fake_counter("qps"),
            fake_counter("mrs"),      fake_counter("ahs"), fake_counter("busy")};
  }
  bool operator==(const Objects& o) const {
    return contexts == o.contexts && pds == o.pds && cqs == o.cqs && qps == o.qps && mrs == o.mrs &&
           ahs == o.ahs && busy == o.busy;
  }
};

inline std::string describe(const Objects& o) {
  return "contexts " + std::to_string(o.contexts) + ", pds " + std::to_string(o.pds) + ", cqs " +
         std::to_string(o.cqs) + ", qps " + std::to_string(o.qps) + ", mrs " +
         std::to_string(o.mrs) + ", ahs " + std::to_string(o.ahs) + ", busy " +
         std::to_string(o.busy);
}

// One test's fake RDMA node: the engine loads the fake, which serves `devices` InfiniBand NDR 4x
// devices with a healthy PCIe Gen5 x16 link each from a fresh sysfs tree.
class FakeVerbs {
 public:
  explicit FakeVerbs(int devices = 1, int ports = 1) {
    env_.set("PREFLIGHT_IBVERBS_LIBRARY", FAKE_IBVERBS_PATH);
    // The fake exports libefa's efadv too; a device of the real libefa must never meet it.
    env_.set("PREFLIGHT_EFADV_LIBRARY", FAKE_IBVERBS_PATH);
    for (const char* name : kFakeVariables) env_.unset(name);
    env_.set("FAKE_IBV_SYSFS", sysfs_.root());
    env_.set("FAKE_IBV_DEVICES", std::to_string(devices));
    env_.set("FAKE_IBV_PORTS", std::to_string(ports));
    for (int i = 0; i < devices; ++i) sysfs_.add_device(i, PciLink{i % 2}, ports);
  }
  void set(const std::string& name, const std::string& value) { env_.set(name, value); }
  void unset(const std::string& name) { env_.unset(name); }
  FakeIbSysfs& sysfs() { return sysfs_; }

 private:
  Env env_;
  FakeIbSysfs sysfs_;
};

inline const RdmaDevice& device_named(const RdmaInventory& inventory, const std::string& name) {
  for (const RdmaDevice& device : inventory.devices) {
    if (device.name == name) return device;
  }
  FAIL("no device " << name);
  throw std::logic_error("unreachable");
}

// A short transfer of 256 KiB messages, 16 in flight and one in 4 signalled, with a deadline
// far enough for a loaded machine.
inline RdmaTransferJob job(const std::string& from, const std::string& to, double seconds = 0.1) {
  RdmaTransferJob job;
  job.from_device = from;
  job.to_device = to;
  job.message_bytes = std::size_t{256} << 10;
  job.outstanding = 16;
  job.signal_every = 4;
  job.seconds = seconds;
  job.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  job.cancel = std::make_shared<std::atomic<bool>>(false);
  return job;
}

inline std::string describe(const RdmaTransferResult& r) {
  return "connected " + std::to_string(r.connected) + ", gbps " + std::to_string(r.gbps) +
         ", bytes " + std::to_string(r.bytes) + ", verified " + std::to_string(r.verified) +
         ", bad_bytes " + std::to_string(r.bad_bytes) + ", registration '" + r.registration +
         "', queue_pair '" + r.queue_pair + "', timed_out " + std::to_string(r.timed_out) +
         ", error '" + r.error + "'";
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A transfer that completed, measured and found every byte in place, carried by `queue_pair`.
inline void require_clean(const RdmaTransferResult& r, std::size_t message_bytes,
                          const std::string& queue_pair = "rc") {
  INFO(describe(r));
  REQUIRE(r.error.empty());
  CHECK(r.connected);
  CHECK_FALSE(r.timed_out);
  CHECK(r.bytes > 0);
  CHECK(r.bytes % message_bytes == 0);
  CHECK(r.gbps > 0);
  CHECK(r.verified);
  CHECK(r.bad_bytes == 0);
  CHECK(r.registration == "host");
  CHECK(r.queue_pair == queue_pair);
}

}  // namespace preflight::fake_verbs_test
