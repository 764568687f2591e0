// The loopback mesh end to end on the fake libibverbs (tests/fake_ibverbs): the rdma check plans
// from a host of two NUMA nodes (a sysfs tree of the test's own) and four GPUs, and the real
// engine (make_system_rdma_engine) runs every transfer through the fake, which paces each to its
// port's rate; the rdma-path-slow drill slows one path inside the engine's timed window, and the
// check judges what was measured.
//
// The fake cannot reach GPU memory (it refuses to register it, and a host-only build has no
// CUDA), so the GPUDirect cells are carried in host memory here: the plan, the job, the pacing,
// the measurement and the judgement are the real ones, only the buffers are not the GPU's. Nor
// are the host buffers bound to the tree's NUMA nodes, which this machine need not have: what
// binding does is tested by the engine's own tests; here the jobs are checked to ask for it.
// Only with PREFLIGHT_WITH_IBVERBS, where the fake is built (tests/CMakeLists.txt).
#include <catch2/catch.hpp>

#ifdef FAKE_IBVERBS_PATH

#include <stdlib.h>  // mkdtemp, setenv, unsetenv

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checks/rdma/rdma_check.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"

using namespace preflight;
using namespace std::chrono_literals;

namespace {

// The fake's variables for this test, every other one cleared; the old values come back at the
// end of the scope.
class FakeMeshEnv {
 public:
  FakeMeshEnv() {
    for (const char* name :
         {"FAKE_IBV_PORTS", "FAKE_IBV_LINK_LAYER", "FAKE_IBV_MTU", "FAKE_IBV_DOWN",
          "FAKE_IBV_SYSFS", "FAKE_IBV_OPEN_FAIL", "FAKE_IBV_NO_KERNEL", "FAKE_IBV_MODIFY_FAIL",
          "FAKE_IBV_FAIL_AT", "FAKE_IBV_HANG", "FAKE_IBV_CORRUPT", "FAKE_IBV_MAX_QP_WR",
          "FAKE_IBV_COMPAT_CONTEXT", "FAKE_IBV_EFA", "FAKE_IBV_EFA_OPS"}) {
      change(name, nullptr);
    }
    change("PREFLIGHT_IBVERBS_LIBRARY", FAKE_IBVERBS_PATH);
    change("FAKE_IBV_DEVICES", "2");
    // SDR 1x, 2.5 Gb/s: a rate any machine copies memory faster than, so a healthy transfer
    // reaches it (tests/net/test_fake_ibverbs_run.cpp).
    change("FAKE_IBV_SPEED", "SDR");
    change("FAKE_IBV_WIDTH", "1");
  }
  ~FakeMeshEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        unsetenv(it->first.c_str());
      }
    }
  }
  FakeMeshEnv(const FakeMeshEnv&) = delete;
  FakeMeshEnv& operator=(const FakeMeshEnv&) = delete;

 private:
  void change(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// devices/system/node/online under a temporary sysfs root: the host's NUMA nodes for the check.
class FakeRunNumaTree {
 public:
  explicit FakeRunNumaTree(const std::string& online) {
    char name[] = "/tmp/preflight-mesh-numa-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    root_ = name;
    std::filesystem::create_directories(root_ + "/devices/system/node");
    std::ofstream(root_ + "/devices/system/node/online") << online;
  }
  ~FakeRunNumaTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  FakeRunNumaTree(const FakeRunNumaTree&) = delete;
  FakeRunNumaTree& operator=(const FakeRunNumaTree&) = delete;
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

// The real engine, with GPU jobs carried in host memory and host memory left unbound (above);
// records the jobs as the check gave them.
class HostBackedGpus final : public RdmaEngine {
 public:
  explicit HostBackedGpus(std::unique_ptr<RdmaEngine> real) : real_(std::move(real)) {}
  RdmaInventory inventory() override { return real_->inventory(); }
  RdmaTransferResult transfer(const RdmaTransferJob& job) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(job);
    }
    RdmaTransferJob carried = job;
    carried.memory = RdmaMemory::host;
    carried.gpu_cuda_ordinal = -1;
    carried.host_numa_node = -1;
    return real_->transfer(carried);
  }
  std::vector<RdmaTransferJob> jobs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return jobs_;
  }

 private:
  std::unique_ptr<RdmaEngine> real_;
  mutable std::mutex mutex_;
  std::vector<RdmaTransferJob> jobs_;
};

}  // namespace

TEST_CASE("rdma mesh on the fake libibverbs: 2 NUMA nodes x 4 GPUs, one slowed path fails") {
  const FakeMeshEnv env;
  const FakeRunNumaTree numa("0-1\n");
  HostBackedGpus engine(make_system_rdma_engine());

  CheckRegistry registry;
  registry.add(std::make_unique<RdmaCheck>(numa.root()));
  const auto plan = plan_checks(registry, Profile::standard, {"rdma"});
  const std::string spec = "rdma-path-slow:0.3@nic=fake1-gpu2";
  FaultPlan faults({parse_fault(spec, registry.fault_kinds())});
  test::FakeBackend backend(test::healthy_node(4));
  backend.rdma = &engine;
  Verdict skeleton;
  skeleton.injected_faults = {spec};
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.profile = Profile::standard;
  // A --timeout that holds the whole mesh at shorter writes than standard's 2 s: the fake's
  // transfers take their seconds for real.
  settings.deadline = SteadyClock::now() + 15s;
  settings.timeout_given = true;
  settings.nics = 2;  // what `preflight run` counts before discovery: the planner sizes by it
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  CheckResult rdma;
  for (const auto& c : out.verdict.checks) {
    if (c.name == "rdma") rdma = c;
  }
  INFO(rdma.summary);
  REQUIRE(rdma.plan.has_value());
  INFO(rdma.plan->coverage);

  // Every NIC x (NUMA memory, GPU) pair ran, each once, and every NIC pair.
  std::set<std::pair<std::string, std::string>> cells;
  std::set<std::string> pairs;
  for (const RdmaTransferJob& j : engine.jobs()) {
    if (j.from_device != j.to_device) {
      pairs.insert(j.from_device + "-" + j.to_device);
      continue;
    }
    const bool gpu = j.memory == RdmaMemory::gpu;
    CHECK(cells
              .insert({j.from_device, gpu ? "gpu" + std::to_string(j.gpu_cuda_ordinal)
                                          : "numa" + std::to_string(j.host_numa_node)})
              .second);
  }
  CHECK(engine.jobs().size() == 2 * (2 + 4) + 2);
  for (const char* nic : {"fake0", "fake1"}) {
    for (const char* memory : {"numa0", "numa1", "gpu0", "gpu1", "gpu2", "gpu3"}) {
      INFO(nic << " x " << memory);
      CHECK(cells.count({nic, memory}) == 1);
    }
  }
  CHECK(pairs == std::set<std::string>{"fake0-fake1", "fake1-fake0"});
  CHECK_FALSE(rdma.plan->covered.size() > 0);  // the whole mesh: nothing rotates

  // The slowed path fails, on its entity, marked injected; nothing else fails.
  bool slowed_failed = false;
  for (const Finding& f : rdma.findings) {
    INFO(f.code << "@" << f.entity << ": " << f.message);
    if (f.entity == "fake1-gpu2") {
      CHECK(f.code == "RDMA_BANDWIDTH_LOW");
      CHECK(f.injected);
      slowed_failed = true;
    } else {
      CHECK(f.severity != Severity::fail);
    }
  }
  CHECK(slowed_failed);
  CHECK(rdma.status == Status::fail);
  CHECK(test::has_metric(rdma, "fake0-numa1.loopback_gbps"));
  CHECK(test::has_metric(rdma, "fake1-gpu3.gpudirect_gbps"));
}

#endif  // FAKE_IBVERBS_PATH
