// The rdma check end to end without RDMA hardware: inventory against expectations, the NIC's
// PCIe link, loopback, NIC pairs and the GPUDirect mesh through a fake engine, fault injection by
// NIC name, and the paths of a node without RDMA. The runs are on a host of one NUMA node (the
// tests' empty sysfs, tests/support/no-sysfs); the NUMA mesh is test_rdma_mesh_check.cpp's.
#include <catch2/catch.hpp>

#include <set>

#include "checks/rdma/rdma_check.hpp"
#include "checks/rdma/rdma_readings.hpp"
#include "preflight/errors.hpp"
#include "run/rejudge.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_rdma_engine.hpp"

using namespace preflight;
using preflight::test::findings;
using preflight::test::has_metric;
using namespace std::chrono_literals;

namespace {

struct RdmaOutcome {
  Verdict verdict;
  CheckResult rdma;
  int abandoned = 0;
};

// The standard profile unless told: every pair and the whole mesh every run (quick rotates them,
// test_rdma_plan.cpp), so that a test sees every transfer a NIC is part of.
RdmaOutcome run_rdma(test::FakeRdmaEngine& engine, const std::vector<std::string>& fault_specs = {},
                     const std::vector<std::pair<std::string, std::string>>& options = {},
                     NodeReading node = test::healthy_node(4), std::chrono::seconds timeout = 60s,
                     Profile profile = Profile::standard) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  CheckOptions opts;
  for (const auto& [k, v] : options) opts.set(k, v);
  const auto plan = plan_checks(registry, profile, {"rdma"}, opts);
  std::vector<InjectedFault> faults;
  for (const auto& spec : fault_specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan fault_plan(faults);
  test::FakeBackend backend(node);
  backend.rdma = &engine;
  Verdict skeleton;
  skeleton.injected_faults = fault_specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.profile = profile;
  settings.deadline = SteadyClock::now() + timeout;
  settings.options = opts;
  Runner runner(backend.engines(), fault_plan);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  RdmaOutcome o;
  o.verdict = out.verdict;
  for (const auto& c : o.verdict.checks) {
    if (c.name == "rdma") o.rdma = c;
  }
  o.abandoned = state.abandoned_threads();
  return o;
}

}  // namespace

TEST_CASE("rdma check: four healthy NDR NICs pass: loopbacks, every pair, the GPUDirect mesh") {
  test::FakeRdmaEngine engine(4, true);
  const auto o = run_rdma(engine, {}, {{"--expect-rnics", "4"}});
  INFO(o.rdma.summary);
  CHECK(o.rdma.status == Status::pass);
  CHECK(o.rdma.findings.empty());
  CHECK(engine.jobs().size() == 4 + 12 + 4 * 4);
  CHECK(has_metric(o.rdma, "mlx5_0.rate_gbps"));
  CHECK(has_metric(o.rdma, "mlx5_2.loopback_gbps"));
  CHECK(has_metric(o.rdma, "mlx5_0-mlx5_3.pair_gbps"));
  CHECK(has_metric(o.rdma, "mlx5_1-gpu1.gpudirect_gbps"));  // its nearest GPU
  CHECK(has_metric(o.rdma, "mlx5_1-gpu3.gpudirect_gbps"));  // a far one
  CHECK(has_metric(o.rdma, "mlx5_1-gpu1.gpudirect_dmabuf"));
  CHECK_THAT(o.rdma.summary,
             Catch::Contains("GPUDirect by dma-buf on 16, by peer memory on 0 paths"));
  std::set<std::pair<std::string, int>> cells;
  for (const auto& j : engine.jobs()) {
    if (j.memory != RdmaMemory::gpu) continue;
    CHECK(j.gpu_cuda_ordinal >= 0);
    CHECK(j.from_device == j.to_device);
    cells.insert({j.from_device, j.gpu_cuda_ordinal});
  }
  CHECK(cells.size() == 16);  // every NIC with every GPU, once
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
    // Transfers run only over the usable ports: 3 loopbacks, 6 pairs, 3 NICs x 4 GPUs.
    CHECK(engine.jobs().size() == 3 + 6 + 12);
  }
  SECTION("slow") {
    test::FakeRdmaEngine engine(3);
    const auto o = run_rdma(engine, {"rdma-slow:0.5@nic=mlx5_1"});
    CHECK(findings(o.rdma) ==
          std::set<std::string>{
              "RDMA_BANDWIDTH_LOW@mlx5_1", "RDMA_BANDWIDTH_LOW@mlx5_0-mlx5_1",
              "RDMA_BANDWIDTH_LOW@mlx5_1-mlx5_0", "RDMA_BANDWIDTH_LOW@mlx5_1-mlx5_2",
              "RDMA_BANDWIDTH_LOW@mlx5_2-mlx5_1", "RDMA_BANDWIDTH_LOW@mlx5_1-gpu0",
              "RDMA_BANDWIDTH_LOW@mlx5_1-gpu1", "RDMA_BANDWIDTH_LOW@mlx5_1-gpu2",
              "RDMA_BANDWIDTH_LOW@mlx5_1-gpu3"});
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
  SECTION("named compute NICs are judged") {
    const auto o = run_rdma(engine, {}, {{"--rdma-devices", "mlx5_0,mlx5_1,mlx5_2,mlx5_3"}});
    const auto got = findings(o.rdma);
    CHECK(got.count("RDMA_PORT_SLOW@mlx5_0") == 1);
    CHECK(got.count("RDMA_NO_GID@mlx5_1") == 1);
    CHECK(got.count("RDMA_PCIE_DEGRADED@mlx5_2") == 1);
    for (const auto& f : o.rdma.findings) {
      if (f.code == "RDMA_PCIE_DEGRADED") CHECK_THAT(f.message, Catch::Contains("Gen4 x16"));
    }
  }
  SECTION("without a topology or a list, the Ethernet NIC is not on the InfiniBand fabric") {
    // The fake devices have no sysfs path: the fabric rule takes the InfiniBand NICs, at any rate
    // (docs/checks/rdma.md, "How topology enters"). The Ethernet one is reported, not judged.
    const auto o = run_rdma(engine);
    CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_PORT_SLOW@mlx5_0",
                                                    "RDMA_NIC_NOT_COMPUTE@mlx5_1",
                                                    "RDMA_PCIE_DEGRADED@mlx5_2"});
    CHECK_THAT(o.rdma.summary,
               Catch::StartsWith("4 RDMA devices, 3 compute (on the InfiniBand fabric), 1 other "
                                 "left out: mlx5_1; 3 usable ports"));
    // --expect-rnics counts the compute NICs' usable ports: the node is short of its four.
    CHECK(findings(run_rdma(engine, {}, {{"--expect-rnics", "4"}}).rdma)
              .count("RDMA_COUNT_MISMATCH@node") == 1);
  }
}

TEST_CASE("rdma check: a storage NIC with a port down is reported, left out, and passes") {
  test::FakeRdmaEngine engine(4, true);
  RdmaDevice storage = test::healthy_nic(4);
  storage.ports[0].link_layer = "Ethernet";
  storage.ports[0].active_speed = 32;  // EDR 4x: 100 GbE
  RdmaPort second = storage.ports[0];
  second.port_num = 2;
  second.state = "DOWN";
  second.phys_state = "Disabled";
  storage.ports.push_back(second);
  engine.inv.devices.push_back(storage);
  const auto o = run_rdma(engine, {}, {{"--expect-rnics", "4"}});
  INFO(o.rdma.summary);
  CHECK(o.rdma.status == Status::pass);
  CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_NIC_NOT_COMPUTE@mlx5_4"});
  // No transfer touches it: 4 loopbacks, 12 pairs, 16 GPUDirect over the compute NICs.
  CHECK(engine.jobs().size() == 4 + 12 + 16);
  for (const auto& j : engine.jobs()) {
    CHECK(j.from_device != "mlx5_4");
    CHECK(j.to_device != "mlx5_4");
  }
  CHECK_THAT(o.rdma.summary, Catch::Contains("1 other left out: mlx5_4; 4 usable ports"));
  // Its rate is still exported: the readings and metrics keep what was read.
  CHECK(has_metric(o.rdma, "mlx5_4.rate_gbps"));
  const auto& r = o.rdma.readings;
  REQUIRE(r.is_object());
  CHECK(r["devices"].size() == 5);
  CHECK(r["devices"][4]["ports"][1]["phys_state"] == "Disabled");
  CHECK(r["expect"]["rnics"] == 4);
  CHECK(r["transfers"].size() == 32);
}

TEST_CASE("rdma check: --rdma-devices names the compute NICs, each of which must exist") {
  SECTION("the listed ones only are judged and tested") {
    test::FakeRdmaEngine engine(4);
    engine.inv.devices[3].ports[0].state = "DOWN";
    const auto o = run_rdma(engine, {}, {{"--rdma-devices", "mlx5_0,mlx5_1"}});
    CHECK(findings(o.rdma) ==
          std::set<std::string>{"RDMA_NIC_NOT_COMPUTE@mlx5_2", "RDMA_NIC_NOT_COMPUTE@mlx5_3"});
    CHECK(o.rdma.status == Status::pass);
    CHECK(engine.jobs().size() == 2 + 2 + 2 * 4);
    CHECK_THAT(o.rdma.summary, Catch::Contains("2 compute (listed in --rdma-devices)"));
  }
  SECTION("a name the node does not have fails") {
    test::FakeRdmaEngine engine(2);
    const auto o = run_rdma(engine, {}, {{"--rdma-devices", "mlx5_0,mlx5_1,mlx5_2"}});
    CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_DEVICE_MISSING@mlx5_2"});
    CHECK(o.verdict.verdict == Status::fail);
  }
  SECTION("a node without RDMA fails instead of skipping") {
    test::FakeRdmaEngine engine(0);
    const auto o = run_rdma(engine, {}, {{"--rdma-devices", "mlx5_0"}});
    CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_NO_DEVICE@node"});
  }
  SECTION("a bad list is refused before anything runs") {
    CheckRegistry registry;
    register_builtin_checks(registry);
    for (const char* text : {"", "mlx5_0,,mlx5_1", "mlx5_0 mlx5_1", "mlx5_0,mlx5_0", "mlx5_0,"}) {
      INFO(text);
      CheckOptions bad;
      bad.set("--rdma-devices", text);
      CHECK_THROWS_WITH(plan_checks(registry, Profile::quick, {"rdma"}, bad),
                        Catch::Contains("--rdma-devices"));
    }
    CheckOptions good;
    good.set("--rdma-devices", "mlx5_0,mlx5_bond_0,irdma1");
    CHECK(rdma_device_list(good) == std::vector<std::string>{"mlx5_0", "mlx5_bond_0", "irdma1"});
  }
}

TEST_CASE("rdma check: a run's readings judged again give its findings") {
  // Faults and failures of every kind, so that judged findings and observations both appear.
  test::FakeRdmaEngine engine(4, true);
  engine.inv.devices[1].pcie_gen = 4;
  engine.no_connect = {"mlx5_3"};
  const auto o = run_rdma(engine, {"rdma-slow:0.5@nic=mlx5_0", "rdma-down@nic=mlx5_2"},
                          {{"--expect-rnics", "4"}});
  REQUIRE(o.verdict.thresholds.has_value());
  std::vector<std::string> unknown;
  const Thresholds thresholds = thresholds_from_record(preflight::test::builtin_threshold_specs(),
                                                       *o.verdict.thresholds, "recorded", unknown);
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto judged = registry.find("rdma")->judge(o.rdma.readings, thresholds);
  REQUIRE(judged.has_value());
  std::vector<Finding> recorded;
  for (const Finding& f : o.rdma.findings) {
    if (f.judged) recorded.push_back(f);
  }
  CHECK(findings(o.rdma).count("RDMA_BANDWIDTH_LOW@mlx5_0-mlx5_1") == 1);
  CHECK(findings(o.rdma).count("RDMA_CONNECT_FAILED@mlx5_3") == 1);  // an observation
  REQUIRE(judged->size() == recorded.size());
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    INFO(recorded[i].code << "@" << recorded[i].entity);
    CHECK((*judged)[i].code == recorded[i].code);
    CHECK((*judged)[i].entity == recorded[i].entity);
    CHECK((*judged)[i].message == recorded[i].message);
    CHECK((*judged)[i].value == recorded[i].value);
    CHECK((*judged)[i].threshold == recorded[i].threshold);
    // rdma-slow's pair findings are marked by the judgement itself (the readings say which
    // transfers were slowed); rdma-down's by the runner, as it marks any finding on the NIC.
    if ((*judged)[i].code.rfind("RDMA_BANDWIDTH", 0) == 0) CHECK((*judged)[i].injected);
  }
  // Through `preflight judge`'s path too: the whole verdict, with its recorded thresholds.
  RejudgeSettings settings;
  settings.thresholds = &thresholds;
  settings.fault_kinds = registry.fault_kinds();
  const Verdict again = rejudge(o.verdict, registry, settings);
  for (const CheckResult& c : again.checks) {
    if (c.name != "rdma") continue;
    CHECK(findings(c) == findings(o.rdma));
    CHECK(c.status == o.rdma.status);
    for (std::size_t i = 0; i < c.findings.size() && i < o.rdma.findings.size(); ++i) {
      CHECK(c.findings[i].injected == o.rdma.findings[i].injected);
    }
  }
  CHECK(again.verdict == o.verdict.verdict);
  // Readings it cannot read are bad input, naming the field.
  CHECK_THROWS_WITH(
      registry.find("rdma")->judge(nlohmann::ordered_json::parse(R"({"devices": [{"ports": []}]})"),
                                   thresholds),
      Catch::StartsWith("devices[0].name:"));
}

TEST_CASE("rdma check: connection failures, GPUDirect, corruption and hangs") {
  SECTION("a NIC that cannot connect fails every transfer it is part of") {
    test::FakeRdmaEngine engine(2);
    engine.no_connect = {"mlx5_1"};
    const auto got = findings(run_rdma(engine, {}, {}, test::no_gpu_node()).rdma);
    CHECK(got == std::set<std::string>{"RDMA_CONNECT_FAILED@mlx5_1",
                                       "RDMA_CONNECT_FAILED@mlx5_0-mlx5_1",
                                       "RDMA_CONNECT_FAILED@mlx5_1-mlx5_0"});
  }
  SECTION("GPUDirect that cannot register GPU memory is reported, a warning") {
    test::FakeRdmaEngine engine(2, true);
    engine.no_gpudirect = {"mlx5_0"};
    const auto o = run_rdma(engine, {}, {}, test::healthy_node(2));
    CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_GPUDIRECT_UNAVAILABLE@mlx5_0-gpu0",
                                                    "RDMA_GPUDIRECT_UNAVAILABLE@mlx5_0-gpu1"});
    CHECK(o.rdma.status == Status::warn);
  }
  SECTION("bytes changed in flight") {
    test::FakeRdmaEngine engine(1);
    engine.corrupting = {"mlx5_0"};
    CHECK(findings(run_rdma(engine, {}, {}, test::healthy_node(1)).rdma) ==
          std::set<std::string>{"RDMA_DATA_MISMATCH@mlx5_0", "RDMA_DATA_MISMATCH@mlx5_0-gpu0"});
  }
  SECTION("a transfer that never returns") {
    test::FakeRdmaEngine engine(1);
    engine.hanging = {"mlx5_0"};
    const auto o = run_rdma(engine, {}, {}, test::healthy_node(1), 20s, Profile::quick);
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
