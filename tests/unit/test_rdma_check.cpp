// The rdma check end to end without RDMA hardware: inventory against expectations, the NIC's
// PCIe link, loopback, NIC pairs and GPUDirect through a fake engine, fault injection by NIC
// name, and the paths of a node without RDMA.
#include <catch2/catch.hpp>

#include <set>

#include "checks/rdma/rdma_check.hpp"
#include "preflight/errors.hpp"
#include "run/runner.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_rdma_engine.hpp"

using namespace preflight;
using namespace std::chrono_literals;

namespace {

struct Outcome {
  Verdict verdict;
  CheckResult rdma;
  int abandoned = 0;
};

Outcome run_rdma(test::FakeRdmaEngine& engine, const std::vector<std::string>& fault_specs = {},
                 const std::vector<std::pair<std::string, std::string>>& options = {},
                 NodeReading node = test::healthy_node(4), std::chrono::seconds timeout = 60s) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  CheckOptions opts;
  for (const auto& [k, v] : options) opts.set(k, v);
  const auto plan = plan_checks(registry, Profile::quick, {"rdma"}, opts);
  std::vector<InjectedFault> faults;
  for (const auto& spec : fault_specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan fault_plan(faults);
  test::FakeBackend backend(node);
  backend.rdma = &engine;
  Verdict skeleton;
  skeleton.injected_faults = fault_specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.deadline = SteadyClock::now() + timeout;
  settings.options = opts;
  Runner runner(backend.engines(), fault_plan);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  Outcome o;
  o.verdict = out.verdict;
  for (const auto& c : o.verdict.checks) {
    if (c.name == "rdma") o.rdma = c;
  }
  o.abandoned = state.abandoned_threads();
  return o;
}

std::set<std::string> findings(const CheckResult& r) {
  std::set<std::string> out;
  for (const auto& f : r.findings) out.insert(f.code + "@" + f.entity);
  return out;
}

bool has_metric(const CheckResult& r, const std::string& key) {
  for (const Metric& m : r.metrics) {
    if (m.key() == key) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("rdma check: four healthy NDR NICs pass: loopbacks, every pair, GPUDirect") {
  test::FakeRdmaEngine engine(4, true);
  const auto o = run_rdma(engine, {}, {{"--expect-rnics", "4"}});
  INFO(o.rdma.summary);
  CHECK(o.rdma.status == Status::pass);
  CHECK(o.rdma.findings.empty());
  CHECK(engine.jobs.size() == 4 + 12 + 4);
  CHECK(has_metric(o.rdma, "mlx5_0.rate_gbps"));
  CHECK(has_metric(o.rdma, "mlx5_2.loopback_gbps"));
  CHECK(has_metric(o.rdma, "mlx5_0-mlx5_3.pair_gbps"));
  CHECK(has_metric(o.rdma, "mlx5_1.gpudirect_gbps"));
  CHECK(has_metric(o.rdma, "mlx5_1.gpudirect_dmabuf"));
  CHECK_THAT(o.rdma.summary, Catch::Contains("GPUDirect by dma-buf on 4, by peer memory on 0"));
  int gpu_jobs = 0;
  for (const auto& j : engine.jobs) {
    if (j.memory == RdmaMemory::gpu) {
      ++gpu_jobs;
      CHECK(j.gpu_cuda_ordinal >= 0);
    }
  }
  CHECK(gpu_jobs == 4);
}

TEST_CASE("rdma check: a node without RDMA skips, unless NICs are expected") {
  SECTION("no device") {
    test::FakeRdmaEngine engine(0);
    CHECK(run_rdma(engine).rdma.status == Status::skip);
    CHECK_THAT(run_rdma(engine).rdma.skip_reason, Catch::Contains("no RDMA device"));
    const auto o = run_rdma(engine, {}, {{"--expect-rnics", "8"}});
    CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_NO_DEVICE@node"});
    CHECK(o.verdict.verdict == Status::fail);
  }
  SECTION("no libibverbs") {
    test::FakeRdmaEngine engine(0);
    engine.inv.library_loaded = false;
    engine.inv.error = "libibverbs.so.1: cannot open shared object file";
    CHECK(run_rdma(engine).rdma.status == Status::skip);
    const auto o = run_rdma(engine, {}, {{"--expect-rnics", "2"}});
    CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_UNAVAILABLE@node"});
  }
  SECTION("a drill aimed at a NIC the node lacks fails instead of skipping") {
    test::FakeRdmaEngine engine(0);
    const auto o = run_rdma(engine, {"rdma-down@nic=mlx5_0"});
    CHECK(findings(o.rdma) == std::set<std::string>{"FAULT_TARGET_MISSING@mlx5_0"});
    CHECK(o.verdict.verdict == Status::fail);
    test::FakeRdmaEngine two(2);
    CHECK(findings(run_rdma(two, {"rdma-slow:0.5@nic=mlx5_7"}).rdma) ==
          std::set<std::string>{"FAULT_TARGET_MISSING@mlx5_7"});
  }
}

TEST_CASE("rdma check: rdma-down fails the NIC and the count; rdma-slow its transfers") {
  SECTION("down") {
    test::FakeRdmaEngine engine(4);
    const auto o = run_rdma(engine, {"rdma-down@nic=mlx5_2"}, {{"--expect-rnics", "4"}});
    CHECK(findings(o.rdma) ==
          std::set<std::string>{"RDMA_PORT_DOWN@mlx5_2", "RDMA_COUNT_MISMATCH@node"});
    for (const auto& f : o.rdma.findings) CHECK(f.injected);
    // Transfers run only over the usable ports: 3 loopbacks and 6 pairs.
    CHECK(engine.jobs.size() == 3 + 6);
  }
  SECTION("slow") {
    test::FakeRdmaEngine engine(3);
    const auto o = run_rdma(engine, {"rdma-slow:0.5@nic=mlx5_1"});
    CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_BANDWIDTH_LOW@mlx5_1",
                                                    "RDMA_BANDWIDTH_LOW@mlx5_0-mlx5_1",
                                                    "RDMA_BANDWIDTH_LOW@mlx5_1-mlx5_0",
                                                    "RDMA_BANDWIDTH_LOW@mlx5_1-mlx5_2",
                                                    "RDMA_BANDWIDTH_LOW@mlx5_2-mlx5_1"});
    for (const auto& f : o.rdma.findings) CHECK(f.injected);
  }
  SECTION("a NIC the node does not have: the drill fails loudly") {
    test::FakeRdmaEngine engine(2);
    const auto o = run_rdma(engine, {"rdma-down@nic=mlx5_9"});
    CHECK(findings(o.rdma) == std::set<std::string>{"FAULT_TARGET_MISSING@mlx5_9"});
    CHECK(o.verdict.verdict == Status::fail);
  }
}

TEST_CASE("rdma check: ports slow, without GID or on a starved PCIe link are named") {
  test::FakeRdmaEngine engine(4);
  engine.inv.devices[0].ports[0].active_speed = 64;  // HDR 4x: 200 Gb/s on a 400 Gb/s node
  engine.inv.devices[1].ports[0].link_layer = "Ethernet";
  engine.inv.devices[1].ports[0].usable_gid = false;
  engine.inv.devices[2].pcie_gen = 4;  // Gen4 x16 carries 252 Gb/s raw: not 400
  const auto o = run_rdma(engine);
  const auto got = findings(o.rdma);
  CHECK(got.count("RDMA_PORT_SLOW@mlx5_0") == 1);
  CHECK(got.count("RDMA_NO_GID@mlx5_1") == 1);
  CHECK(got.count("RDMA_PCIE_DEGRADED@mlx5_2") == 1);
  for (const auto& f : o.rdma.findings) {
    if (f.code == "RDMA_PCIE_DEGRADED") CHECK_THAT(f.message, Catch::Contains("Gen4 x16"));
  }
}

TEST_CASE("rdma check: connection failures, GPUDirect, corruption and hangs") {
  SECTION("a NIC that cannot connect fails every transfer it is part of") {
    test::FakeRdmaEngine engine(2);
    engine.no_connect = {"mlx5_1"};
    const auto got = findings(run_rdma(engine).rdma);
    CHECK(got == std::set<std::string>{"RDMA_CONNECT_FAILED@mlx5_1",
                                       "RDMA_CONNECT_FAILED@mlx5_0-mlx5_1",
                                       "RDMA_CONNECT_FAILED@mlx5_1-mlx5_0"});
  }
  SECTION("GPUDirect that cannot register GPU memory is reported, a warning") {
    test::FakeRdmaEngine engine(2, true);
    engine.no_gpudirect = {"mlx5_0"};
    const auto o = run_rdma(engine);
    CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_GPUDIRECT_UNAVAILABLE@mlx5_0"});
    CHECK(o.rdma.status == Status::warn);
  }
  SECTION("bytes changed in flight") {
    test::FakeRdmaEngine engine(1);
    engine.corrupting = {"mlx5_0"};
    CHECK(findings(run_rdma(engine).rdma) == std::set<std::string>{"RDMA_DATA_MISMATCH@mlx5_0"});
  }
  SECTION("a transfer that never returns") {
    test::FakeRdmaEngine engine(1);
    engine.hanging = {"mlx5_0"};
    const auto o = run_rdma(engine, {}, {}, test::healthy_node(1), 20s);
    CHECK(findings(o.rdma).count("RDMA_TIMEOUT@mlx5_0") == 1);
    CHECK(o.abandoned >= 1);
    engine.release();
  }
}

TEST_CASE("rdma check: --expect-rnics is validated before anything runs") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  CheckOptions bad;
  bad.set("--expect-rnics", "eight");
  CHECK_THROWS_WITH(plan_checks(registry, Profile::quick, {"rdma"}, bad),
                    Catch::Contains("--expect-rnics"));
  CheckOptions good;
  good.set("--expect-rnics", "8");
  CHECK(expected_rnics(good) == 8);
}
