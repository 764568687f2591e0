// The rdma check's loopback mesh through a run (fake engine): the host's NUMA nodes read from a
// sysfs tree of the test's own, every NIC into each node's memory and every GPU in the standard
// profile, quick's rotation over runs, the rdma-path-slow drill on one path, and NICs that offer
// RDMA read only, or neither.
#include <catch2/catch.hpp>

#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checks/rdma/rdma_check.hpp"
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

// A sysfs root holding only devices/system/node/online (none when `online` is empty) and
// has_memory (when given).
class NumaSysfsTree {
 public:
  explicit NumaSysfsTree(const std::string& online, const std::string& has_memory = {}) {
    char name[] = "/tmp/preflight-numa-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    root_ = name;
    if (online.empty()) return;
    std::filesystem::create_directories(root_ + "/devices/system/node");
    std::ofstream(root_ + "/devices/system/node/online") << online;
    if (!has_memory.empty()) std::ofstream(root_ + "/devices/system/node/has_memory") << has_memory;
  }
  ~NumaSysfsTree() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  NumaSysfsTree(const NumaSysfsTree&) = delete;
  NumaSysfsTree& operator=(const NumaSysfsTree&) = delete;
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

struct MeshRun {
  Verdict verdict;
  CheckResult rdma;
};

// The rdma check alone, reading the host's NUMA nodes under `sysfs_root`, through the runner.
MeshRun run_mesh_check(test::FakeRdmaEngine& engine, const std::string& sysfs_root,
                       const std::vector<std::string>& fault_specs = {},
                       Profile profile = Profile::standard, std::uint64_t rotation = 0,
                       NodeReading node = test::healthy_node(4)) {
  CheckRegistry registry;
  registry.add(std::make_unique<RdmaCheck>(sysfs_root));
  const auto plan = plan_checks(registry, profile, {"rdma"});
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
  settings.rotation = rotation;
  settings.deadline = SteadyClock::now() + 60s;
  Runner runner(backend.engines(), fault_plan);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  MeshRun r;
  r.verdict = out.verdict;
  for (const auto& c : r.verdict.checks) {
    if (c.name == "rdma") r.rdma = c;
  }
  return r;
}

// (NIC, memory) of every job the engine was given: "numa1", "gpu3" (by CUDA ordinal, which the
// fake node numbers as the NVML index), "host" for an unbound loopback, "pair" for a pair.
std::set<std::pair<std::string, std::string>> job_cells(const test::FakeRdmaEngine& engine) {
  std::set<std::pair<std::string, std::string>> cells;
  for (const RdmaTransferJob& j : engine.jobs()) {
    if (j.from_device != j.to_device) {
      cells.insert({j.from_device + "-" + j.to_device, "pair"});
    } else if (j.memory == RdmaMemory::gpu) {
      cells.insert({j.from_device, "gpu" + std::to_string(j.gpu_cuda_ordinal)});
    } else {
      cells.insert({j.from_device,
                    j.host_numa_node >= 0 ? "numa" + std::to_string(j.host_numa_node) : "host"});
    }
  }
  return cells;
}

}  // namespace

TEST_CASE("rdma mesh check: standard runs every NIC into both sockets' memory and every GPU") {
  const NumaSysfsTree tree("0-1\n");
  test::FakeRdmaEngine engine(2, true);
  const MeshRun o = run_mesh_check(engine, tree.root());
  INFO(o.rdma.summary);
  CHECK(o.rdma.status == Status::pass);
  CHECK(o.rdma.findings.empty());
  CHECK(engine.jobs().size() == 2 * 2 + 2 + 2 * 4);
  const auto cells = job_cells(engine);
  for (const char* nic : {"mlx5_0", "mlx5_1"}) {
    for (const char* memory : {"numa0", "numa1", "gpu0", "gpu1", "gpu2", "gpu3"}) {
      INFO(nic << " x " << memory);
      CHECK(cells.count({nic, memory}) == 1);
    }
  }
  CHECK(cells.count({"mlx5_0", "host"}) == 0);  // every host buffer bound to a node
  CHECK(has_metric(o.rdma, "mlx5_0-numa1.loopback_gbps"));
  CHECK(has_metric(o.rdma, "mlx5_1-gpu3.gpudirect_gbps"));
  CHECK_THAT(o.rdma.plan->coverage,
             Catch::StartsWith("4 loopbacks, 8 GPUDirect, 2 of 2 NIC pairs; 2 s"));
  // The readings record the node each loopback's memory was bound to.
  bool numa_recorded = false;
  for (const auto& t : o.rdma.readings["transfers"]) {
    if (t["entity"] == "mlx5_1-numa0") numa_recorded = t["numa_node"] == 0;
  }
  CHECK(numa_recorded);
}

TEST_CASE("rdma mesh check: rdma-path-slow fails the one path it names, marked injected") {
  const NumaSysfsTree tree("0-1\n");
  for (const char* path : {"mlx5_1-gpu2", "mlx5_0-numa1"}) {
    INFO(path);
    test::FakeRdmaEngine engine(2, true);
    const MeshRun o =
        run_mesh_check(engine, tree.root(), {std::string("rdma-path-slow:0.5@nic=") + path});
    CHECK(findings(o.rdma) == std::set<std::string>{std::string("RDMA_BANDWIDTH_LOW@") + path});
    for (const Finding& f : o.rdma.findings) CHECK(f.injected);
    CHECK(o.verdict.verdict == Status::fail);
    int slowed = 0;
    for (const RdmaTransferJob& j : engine.jobs()) slowed += j.slow_factor < 1.0 ? 1 : 0;
    CHECK(slowed == 1);
  }
  SECTION("a path the node does not have fails the drill") {
    test::FakeRdmaEngine engine(2, true);
    const MeshRun o = run_mesh_check(
        engine, tree.root(),
        {"rdma-path-slow:0.5@nic=mlx5_0-gpu9", "rdma-path-slow:0.5@nic=mlx5_0-numa3"});
    CHECK(findings(o.rdma) == std::set<std::string>{"FAULT_TARGET_MISSING@mlx5_0-gpu9",
                                                    "FAULT_TARGET_MISSING@mlx5_0-numa3"});
    for (const Finding& f : o.rdma.findings) CHECK(f.injected);
    test::FakeRdmaEngine none(0);
    CHECK(
        findings(run_mesh_check(none, tree.root(), {"rdma-path-slow:0.5@nic=mlx5_0-gpu0"}).rdma) ==
        std::set<std::string>{"FAULT_TARGET_MISSING@mlx5_0-gpu0"});
  }
}

TEST_CASE("rdma mesh check: quick rotates the mesh over runs; a drilled path always runs") {
  const NumaSysfsTree tree("0-1\n");
  std::set<std::pair<std::string, std::string>> covered;
  for (std::uint64_t run = 0; run < 2; ++run) {
    test::FakeRdmaEngine engine(4, true);
    const MeshRun o = run_mesh_check(engine, tree.root(), {}, Profile::quick, run);
    INFO(o.rdma.summary);
    CHECK(o.rdma.status == Status::pass);
    REQUIRE(o.rdma.plan.has_value());
    CHECK(o.rdma.plan->rotation_steps == 2);
    // 4 NICs x (2 + 4) cells and 12 pairs do not fit quick: half of each mesh part per run,
    // and the pairs' shifts 1 and 3, then 2.
    const std::size_t pairs = run == 0 ? 8 : 4;
    CHECK(engine.jobs().size() == 4 + 8 + pairs);
    CHECK(o.rdma.plan->covered.size() == 4 + 8 + pairs);
    CHECK_THAT(o.rdma.summary, Catch::Contains("8 of 16 GPUDirect (GPUs rotate: step " +
                                               std::to_string(run + 1) + " of 2)"));
    for (const auto& cell : job_cells(engine)) covered.insert(cell);
  }
  CHECK(covered.size() == 4 * (2 + 4) + 12);  // every cell and pair in two runs
  // Step 1 covers each NIC's nearest GPU and the next: mlx5_0-gpu3 is step 2's, yet a drill on
  // it runs in step 1 too.
  test::FakeRdmaEngine engine(4, true);
  const MeshRun o =
      run_mesh_check(engine, tree.root(), {"rdma-path-slow:0.4@nic=mlx5_0-gpu3"}, Profile::quick);
  CHECK(engine.jobs().size() == 20 + 1);
  CHECK(findings(o.rdma) == std::set<std::string>{"RDMA_BANDWIDTH_LOW@mlx5_0-gpu3"});
}

TEST_CASE("rdma mesh check: an EFA NIC without RDMA write reads; one with neither is left out") {
  const NumaSysfsTree tree("0\n");  // one node: one unbound loopback per NIC
  test::FakeRdmaEngine engine(3, true);
  engine.inv.devices[1].transport = "efa";
  engine.inv.devices[1].rdma_write = false;
  engine.inv.devices[2].transport = "efa";
  engine.inv.devices[2].rdma_write = engine.inv.devices[2].rdma_read = false;
  const MeshRun o = run_mesh_check(engine, tree.root());
  INFO(o.rdma.summary);
  // Nothing fails for it: the NIC is inventoried and judged, it only moves no bytes.
  for (const Finding& f : o.rdma.findings) {
    INFO(f.code << "@" << f.entity);
    CHECK(f.severity == Severity::info);
  }
  CHECK(o.rdma.status == Status::pass);
  CHECK(engine.jobs().size() == 2 + 2 + 2 * 4);
  for (const RdmaTransferJob& j : engine.jobs()) {
    CHECK(j.from_device != "mlx5_2");
    CHECK(j.to_device != "mlx5_2");
    CHECK(j.host_numa_node == -1);
    const bool reads = j.from_device == "mlx5_1" || j.to_device == "mlx5_1";
    CHECK(j.op == (reads ? RdmaOp::read : RdmaOp::write));
  }
}

TEST_CASE("rdma mesh check: a node without memory has no buffer to bind: it is left out") {
  // Grace Hopper lists memoryless nodes online; a CPU-only node is the same.
  const NumaSysfsTree tree("0-2\n", "0,2\n");
  test::FakeRdmaEngine engine(1, true);
  const MeshRun o =
      run_mesh_check(engine, tree.root(), {}, Profile::standard, 0, test::no_gpu_node());
  CHECK(o.rdma.status == Status::pass);
  CHECK(job_cells(engine) ==
        std::set<std::pair<std::string, std::string>>{{"mlx5_0", "numa0"}, {"mlx5_0", "numa2"}});
}

TEST_CASE("rdma mesh check: without a NUMA node list, one unbound loopback per NIC") {
  const NumaSysfsTree tree("");
  test::FakeRdmaEngine engine(2, true);
  const MeshRun o = run_mesh_check(engine, tree.root());
  CHECK(o.rdma.status == Status::pass);
  CHECK(engine.jobs().size() == 2 + 2 + 2 * 4);
  CHECK(job_cells(engine).count({"mlx5_1", "host"}) == 1);
  CHECK(has_metric(o.rdma, "mlx5_1.loopback_gbps"));
}
