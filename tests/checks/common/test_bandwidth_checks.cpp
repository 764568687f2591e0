// The pcie, nvlink and hbm checks end to end without a GPU: the runner, the checks, a fake copy
// engine, fault injection through the real fault parser, judgement against the SKU's
// thresholds, and the matrices in the result. The engine itself is covered by
// tests/gpu/test_bandwidth_gpu.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"

using namespace preflight;
using preflight::test::findings;
using preflight::test::has_metric;
using namespace std::chrono_literals;

namespace {

struct BandwidthOutcome {
  Verdict verdict;
  int abandoned = 0;
  double seconds = 0.0;
  const CheckResult& check(const std::string& name) const {
    for (const auto& c : verdict.checks) {
      if (c.name == name) return c;
    }
    FAIL("no check " << name);
    return verdict.checks.front();
  }
};

BandwidthOutcome run_bandwidth_checks(const NodeReading& node, test::FakeBandwidthEngine& engine,
                                      const std::vector<std::string>& checks,
                                      const std::vector<std::string>& fault_specs = {},
                                      Profile profile = Profile::quick,
                                      std::chrono::seconds timeout = 60s) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, profile, checks);
  std::vector<InjectedFault> faults;
  for (const auto& spec : fault_specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan fault_plan(faults);
  test::FakeBackend backend(node);
  backend.bandwidth = &engine;
  Verdict skeleton;
  skeleton.injected_faults = fault_specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.profile = profile;
  settings.deadline = SteadyClock::now() + timeout;
  Runner runner(backend.engines(), fault_plan);
  const auto start = SteadyClock::now();
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  BandwidthOutcome o;
  o.verdict = out.verdict;
  o.abandoned = state.abandoned_threads();
  o.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  return o;
}

const Finding* find(const CheckResult& r, const std::string& code) {
  for (const auto& f : r.findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("bandwidth checks: a healthy 4-GPU H100 node passes all three") {
  test::FakeBandwidthEngine engine;
  const auto o = run_bandwidth_checks(test::healthy_node(4), engine, {"pcie", "nvlink", "hbm"});
  for (const char* name : {"pcie", "nvlink", "hbm"}) {
    const CheckResult& c = o.check(name);
    INFO(name << ": " << c.summary);
    CHECK(c.status == Status::pass);
    CHECK(c.findings.empty());
  }
  const CheckResult& pcie = o.check("pcie");
  CHECK(has_metric(pcie, "gpu0.h2d_gbps"));
  CHECK(has_metric(pcie, "gpu3.bidir_gbps"));
  CHECK(has_metric(pcie, "gpu2.h2d_all_gbps"));
  const CheckResult& nvlink = o.check("nvlink");
  REQUIRE(nvlink.matrices.size() == 3);
  const Matrix& unidir = nvlink.matrices[1];
  CHECK(unidir.name == "unidirectional_gbps");
  CHECK(unidir.labels == std::vector<std::string>{"gpu0", "gpu1", "gpu2", "gpu3"});
  CHECK_FALSE(unidir.values[2][2].has_value());
  CHECK(unidir.values[0][3] == Approx(380.0));
  CHECK(nvlink.matrices[2].values[1][0] == Approx(760.0));  // both directions together
  const CheckResult& hbm = o.check("hbm");
  CHECK(has_metric(hbm, "gpu1.hbm_traffic_gbps"));
  REQUIRE(engine.pattern_jobs.size() == 4);
  CHECK(engine.pattern_jobs[0].bytes == std::uint64_t{2048} << 20);  // the quick slice
  CHECK(engine.pattern_jobs[0].patterns.size() == 3);
  // Every measurement of the pcie check verified its bytes and named its NUMA placement.
  CHECK(has_metric(pcie, "gpu0.host_numa_node"));
}

TEST_CASE("bandwidth checks: pcie-slow fails the GPU it targets, naming its link") {
  test::FakeBandwidthEngine engine;
  const auto o =
      run_bandwidth_checks(test::healthy_node(4), engine, {"pcie"}, {"pcie-slow:0.5@gpu=1"});
  const CheckResult& pcie = o.check("pcie");
  const auto got = findings(pcie);
  CHECK(got.count("PCIE_BANDWIDTH_LOW@gpu1") == 1);
  for (const auto& f : pcie.findings) {
    INFO(f.code << " " << f.entity << ": " << f.message);
    CHECK(f.entity == "gpu1");
    CHECK(f.injected);
  }
  const Finding* low = find(pcie, "PCIE_BANDWIDTH_LOW");
  REQUIRE(low != nullptr);
  CHECK_THAT(low->message, Catch::Contains("Gen5 x16"));
  CHECK(*low->threshold == Approx(63.0 * 0.6).epsilon(0.01));
  CHECK(o.verdict.verdict == Status::fail);
}

TEST_CASE("bandwidth checks: a link trained down is named in the finding") {
  test::FakeBandwidthEngine engine;
  engine.gpu_factor[2] = 0.5;  // Gen4 carries half
  NodeReading node = test::healthy_node(4);
  node.gpus[2].pcie_gen_max_link = 4;
  const auto o = run_bandwidth_checks(node, engine, {"pcie"});
  const Finding* low = find(o.check("pcie"), "PCIE_BANDWIDTH_LOW");
  REQUIRE(low != nullptr);
  CHECK(low->entity == "gpu2");
  CHECK_THAT(low->message, Catch::Contains("Gen5 x16 running Gen4 x16"));
  CHECK_FALSE(low->injected);
}

TEST_CASE("bandwidth checks: a switch that cannot carry all GPUs at once") {
  test::FakeBandwidthEngine engine;
  engine.shared_host_factor = 0.4;
  const auto o = run_bandwidth_checks(test::healthy_node(4), engine, {"pcie"});
  const auto got = findings(o.check("pcie"));
  CHECK(got ==
        std::set<std::string>{"PCIE_SHARED_BANDWIDTH_LOW@gpu0", "PCIE_SHARED_BANDWIDTH_LOW@gpu1",
                              "PCIE_SHARED_BANDWIDTH_LOW@gpu2", "PCIE_SHARED_BANDWIDTH_LOW@gpu3"});
}

TEST_CASE("bandwidth checks: pcie records its readings, and judging them again agrees") {
  test::FakeBandwidthEngine engine;
  const auto o =
      run_bandwidth_checks(test::healthy_node(3), engine, {"pcie"}, {"pcie-slow:0.5@gpu=2"});
  const CheckResult& pcie = o.check("pcie");
  REQUIRE(pcie.readings.is_object());
  const auto& gpus = pcie.readings["gpus"];
  REQUIRE(gpus.size() == 3);
  CHECK(gpus[2]["bus_id"] == "00000000:12:00.0");
  CHECK(gpus[2]["link"]["gen_max_link"] == 5);
  CHECK(gpus[2]["alone"]["h2d"]["median_gbps"] == Approx(26.5));
  CHECK(gpus[2]["alone"]["bidir"]["median_gbps"] == Approx(53.0));
  CHECK(gpus[0]["all_at_once"]["d2h"]["median_gbps"] == Approx(53.0));
  CHECK(gpus[0]["host_numa_node"] == 0);
  CHECK_FALSE(gpus[0]["all_at_once"].contains("bidir"));
  // Every threshold-dependent finding is marked judged, and is what judge() makes again.
  std::vector<Finding> judged;
  for (const auto& f : pcie.findings) {
    if (f.judged) judged.push_back(f);
  }
  CHECK(judged.size() == pcie.findings.size());
  CheckRegistry registry;
  register_builtin_checks(registry);
  const Thresholds t = preflight::test::builtin_thresholds(find_sku("h100-sxm5-80gb"), "test");
  const auto again = registry.find("pcie")->judge(pcie.readings, t);
  REQUIRE(again.has_value());
  REQUIRE(again->size() == judged.size());
  for (std::size_t i = 0; i < judged.size(); ++i) {
    CHECK((*again)[i].code == judged[i].code);
    CHECK((*again)[i].entity == judged[i].entity);
    CHECK((*again)[i].message == judged[i].message);
    CHECK((*again)[i].threshold == judged[i].threshold);
  }
}

TEST_CASE("bandwidth checks: nvlink-slow fails its pair, whichever order it is written in") {
  for (const std::string spec : {"nvlink-slow:0.5@pair=1-2", "nvlink-slow:0.5@pair=2-1"}) {
    INFO(spec);
    test::FakeBandwidthEngine engine;
    const auto o = run_bandwidth_checks(test::healthy_node(4), engine, {"nvlink"}, {spec});
    const CheckResult& nvlink = o.check("nvlink");
    CHECK(findings(nvlink) == std::set<std::string>{"NVLINK_BANDWIDTH_LOW@gpu1-gpu2"});
    const Finding* low = find(nvlink, "NVLINK_BANDWIDTH_LOW");
    REQUIRE(low != nullptr);
    CHECK(low->injected);
    CHECK_THAT(low->message, Catch::Contains("gpu1 -> gpu2"));
    CHECK_THAT(low->message, Catch::Contains("gpu2 -> gpu1"));
    CHECK(nvlink.matrices[1].values[1][2] == Approx(190.0));
    CHECK(nvlink.matrices[1].values[0][1] == Approx(380.0));
  }
}

TEST_CASE("bandwidth checks: no peer access fails on an NVLink SKU, not on a PCIe card") {
  SECTION("H100 SXM") {
    test::FakeBandwidthEngine engine;
    engine.no_peer_access = {{0, 3}, {3, 0}};
    const auto o = run_bandwidth_checks(test::healthy_node(4), engine, {"nvlink"});
    const CheckResult& nvlink = o.check("nvlink");
    CHECK(findings(nvlink) == std::set<std::string>{"NVLINK_NO_PEER_ACCESS@gpu0-gpu3"});
    CHECK(nvlink.matrices[0].values[0][3] == Approx(0.0));
    CHECK_FALSE(nvlink.matrices[1].values[0][3].has_value());
  }
  SECTION("H100 PCIe: peer copies are reported, not judged") {
    test::FakeBandwidthEngine engine;
    engine.no_peer_access = {{0, 3}, {3, 0}};
    engine.peer_gbps = 25.0;
    NodeReading node = test::healthy_node(4);
    for (auto& g : node.gpus) {
      g.pci_device_id = 0x2331;
      g.name = "NVIDIA H100 PCIe";
    }
    const auto o = run_bandwidth_checks(node, engine, {"nvlink"});
    CHECK(o.check("nvlink").findings.empty());
    CHECK_THAT(o.check("nvlink").summary, Catch::Contains("no NVLink expectation"));
  }
}

TEST_CASE("bandwidth checks: nvlink is skipped on a single GPU, with the reason") {
  test::FakeBandwidthEngine engine;
  const auto o = run_bandwidth_checks(test::healthy_node(1), engine, {"nvlink"});
  CHECK(o.check("nvlink").status == Status::skip);
  CHECK_THAT(o.check("nvlink").skip_reason, Catch::Contains("single GPU"));
}

TEST_CASE("bandwidth checks: hbm-corrupt is found with its address range") {
  test::FakeBandwidthEngine engine;
  const auto o =
      run_bandwidth_checks(test::healthy_node(4), engine, {"hbm"}, {"hbm-corrupt@gpu=2"});
  const CheckResult& hbm = o.check("hbm");
  CHECK(findings(hbm) == std::set<std::string>{"HBM_PATTERN_MISMATCH@gpu2"});
  const Finding* bad = find(hbm, "HBM_PATTERN_MISMATCH");
  REQUIRE(bad != nullptr);
  CHECK(bad->injected);
  CHECK_THAT(bad->message, Catch::Contains("0x"));
  CHECK(*bad->value == 1.0);
  for (const auto& job : engine.pattern_jobs) CHECK(job.inject_corrupt == (job.cuda_ordinal == 2));
}

TEST_CASE("bandwidth checks: standard covers most of the memory with every pattern") {
  test::FakeBandwidthEngine engine;
  engine.bad_memory = {1};
  const auto o =
      run_bandwidth_checks(test::healthy_node(2), engine, {"hbm"}, {}, Profile::standard);
  REQUIRE(engine.pattern_jobs.size() == 2);
  const std::uint64_t usable = (std::uint64_t{80} << 30) - (std::uint64_t{3} << 29);
  CHECK(engine.pattern_jobs[0].bytes > usable * 85 / 100);
  CHECK(engine.pattern_jobs[0].bytes <= usable * 90 / 100);
  CHECK(engine.pattern_jobs[0].patterns.size() == 6);
  const Finding* bad = find(o.check("hbm"), "HBM_PATTERN_MISMATCH");
  REQUIRE(bad != nullptr);
  CHECK(bad->entity == "gpu1");
  CHECK_THAT(bad->message, Catch::Contains("0x40000000-0x40000013"));
  CHECK_FALSE(bad->injected);
}

TEST_CASE("bandwidth checks: slow memory, corrupted copies and CUDA errors are findings") {
  SECTION("slow HBM") {
    test::FakeBandwidthEngine engine;
    engine.gpu_factor[0] = 0.5;  // also halves its PCIe figures, which the hbm check ignores
    const auto o = run_bandwidth_checks(test::healthy_node(2), engine, {"hbm"});
    CHECK(findings(o.check("hbm")) == std::set<std::string>{"HBM_BANDWIDTH_LOW@gpu0"});
  }
  SECTION("bytes changed on the way") {
    test::FakeBandwidthEngine engine;
    engine.corrupt_copies = {1};
    const auto o = run_bandwidth_checks(test::healthy_node(2), engine, {"pcie"});
    CHECK(findings(o.check("pcie")).count("BANDWIDTH_DATA_MISMATCH@gpu1") == 1);
  }
  SECTION("a CUDA error") {
    test::FakeBandwidthEngine engine;
    engine.failing = {0};
    const auto o = run_bandwidth_checks(test::healthy_node(1), engine, {"hbm"});
    CHECK(findings(o.check("hbm")).count("BANDWIDTH_CUDA_ERROR@gpu0") == 1);
  }
}

TEST_CASE("bandwidth checks: a copy that never returns is a timeout on its GPU; the run ends") {
  test::FakeBandwidthEngine engine;
  engine.hanging = {1};
  const auto o =
      run_bandwidth_checks(test::healthy_node(3), engine, {"pcie"}, {}, Profile::quick, 40s);
  const CheckResult& pcie = o.check("pcie");
  CHECK(findings(pcie).count("BANDWIDTH_TIMEOUT@gpu1") == 1);
  CHECK(has_metric(pcie, "gpu2.h2d_gbps"));
  CHECK(o.abandoned >= 1);
  CHECK(o.seconds < 25.0);
  engine.release();
}

TEST_CASE("bandwidth checks: a 4-GPU board's pairs are held to their direct links") {
  SECTION("6 of 18 links per pair carry a third: 130 GB/s passes") {
    test::FakeBandwidthEngine engine;
    engine.peer_gbps = 130.0;
    const auto o = run_bandwidth_checks(test::direct_mesh_node(), engine, {"nvlink"});
    CHECK(o.check("nvlink").findings.empty());
  }
  SECTION("a pair that lost links is named with its basis") {
    test::FakeBandwidthEngine engine;
    engine.peer_gbps = 130.0;
    const auto o = run_bandwidth_checks(test::direct_mesh_node(), engine, {"nvlink"},
                                        {"nvlink-slow:0.5@pair=0-3"});
    const CheckResult& nvlink = o.check("nvlink");
    CHECK(findings(nvlink) == std::set<std::string>{"NVLINK_BANDWIDTH_LOW@gpu0-gpu3"});
    CHECK_THAT(nvlink.findings.at(0).message, Catch::Contains("6 direct links"));
    CHECK(*nvlink.findings.at(0).threshold == Approx(150.0 * 0.6));
  }
  SECTION("the same figures on an NVSwitch node fail: every pair should get all 18 links") {
    test::FakeBandwidthEngine engine;
    engine.peer_gbps = 130.0;
    NodeReading node = test::healthy_node(4);
    for (auto& g : node.gpus) g.nvlink_switch_links = 18;
    const auto o = run_bandwidth_checks(node, engine, {"nvlink"});
    CHECK(o.check("nvlink").findings.size() == 6);  // every unordered pair
    CHECK_THAT(o.check("nvlink").findings.at(0).message, Catch::Contains("NVSwitch"));
  }
}

TEST_CASE("bandwidth checks: a GPU CUDA cannot use is reported untested, never a silent pass") {
  test::FakeBandwidthEngine engine;
  NodeReading node = test::healthy_node(3);
  node.gpus[1].cuda_ordinal = -1;
  const auto o = run_bandwidth_checks(node, engine, {"pcie", "nvlink", "hbm"});
  for (const char* name : {"pcie", "nvlink", "hbm"}) {
    INFO(name);
    CHECK(findings(o.check(name)).count("BANDWIDTH_GPU_NOT_TESTED@gpu1") == 1);
    CHECK(o.check(name).status == Status::warn);
  }
  NodeReading none = test::healthy_node(2);
  for (auto& g : none.gpus) g.cuda_ordinal = -1;
  const auto skipped = run_bandwidth_checks(none, engine, {"pcie", "hbm"});
  CHECK(skipped.check("pcie").status == Status::skip);
  CHECK_THAT(skipped.check("hbm").skip_reason, Catch::Contains("CUDA can use none"));
}
