// Issue 16 end to end below the CLI: the built-in checks on a made-up 8-GPU node with 8 NICs,
// their products and RDMA writes taking the seconds the plan gives them, under a --timeout too
// short for the quick profile's whole work. The run keeps the --timeout, every check runs, and
// what each covered is in the verdict.
#include <catch2/catch.hpp>

#include <chrono>
#include <set>
#include <string>

#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"
#include "support/fake_collective_engine.hpp"
#include "support/fake_gemm_engine.hpp"
#include "support/fake_rdma_engine.hpp"

using namespace preflight;
using preflight::test::check_of;
using namespace std::chrono_literals;

namespace {

struct EightGpuNode {
  test::FakeBackend backend{test::healthy_node(8)};
  test::FakeGemmEngine gemm;
  test::FakeBandwidthEngine bandwidth;
  test::FakeRdmaEngine rdma{8, true};
  test::FakeCollectiveEngine collective;

  EightGpuNode() {
    gemm.takes_its_time = true;
    rdma.takes_its_time = true;
    backend.gemm = &gemm;
    backend.bandwidth = &bandwidth;
    backend.rdma = &rdma;
    backend.collective = &collective;
  }

  RunOutcome run(std::chrono::seconds timeout, std::uint64_t rotation = 0) {
    CheckRegistry registry;
    register_builtin_checks(registry);
    const auto plan = plan_checks(registry, Profile::quick, {});
    const FaultPlan faults;
    RunState state(Verdict{}, plan, false);
    RunSettings settings;
    settings.threshold_specs = preflight::test::builtin_threshold_specs();
    settings.profile = Profile::quick;
    settings.deadline = SteadyClock::now() + timeout;
    settings.timeout_given = true;
    settings.nics = 8;
    settings.rotation = rotation;
    settings.rotation_from = "--rotation";
    Runner runner(backend.engines(), faults);
    return runner.run(state, plan, settings);
  }
};

}  // namespace

TEST_CASE("run plan: the quick profile on 8 GPUs and 8 NICs keeps a --timeout of 42 s") {
  EightGpuNode node;
  const auto start = SteadyClock::now();
  const RunOutcome out = node.run(42s, 3);
  const double took = std::chrono::duration<double>(SteadyClock::now() - start).count();
  REQUIRE(out.invalid.empty());
  CHECK(took < 42.0 + 1.0);
  const Verdict& v = out.verdict;
  INFO(v.reason);
  CHECK(v.verdict == Status::pass);
  REQUIRE(v.plan);
  CHECK(v.plan->timeout_given);
  CHECK(v.plan->reduced);
  CHECK(v.plan->gpus == 8);
  CHECK(v.plan->rotation == 3);
  for (const auto& c : v.checks) {
    INFO(c.name << ": " << c.summary);
    CHECK(c.status == Status::pass);
    REQUIRE(c.plan);
    CHECK(c.plan->deadline_s <= 42.0);
    CHECK_FALSE(c.plan->coverage.empty());
  }
  // The products were cut to fit, and the run says so.
  const CheckResult& gemm = check_of(v, "gemm");
  CHECK(gemm.plan->reduced);
  CHECK(node.gemm.jobs().at(0).product_seconds < 3.0);
  // The NIC pairs and the GPUs of the loopback mesh rotate: run 3 covers 8 of the 56 pairs
  // (step 4 of the pairs' 7) and 8 of the 64 NIC-GPU paths (step 4 of 8), and names them.
  const CheckResult& rdma = check_of(v, "rdma");
  CHECK(rdma.plan->rotation_steps == 8);
  CHECK(rdma.plan->rotation_step == 3);
  CHECK(rdma.plan->covered.size() == 16);
  CHECK_THAT(rdma.summary, Catch::Contains("pairs rotate: step 4 of 7"));
  // The NVLink pairs of other steps are unmeasured, not failed.
  const CheckResult& nvlink = check_of(v, "nvlink");
  CHECK(nvlink.plan->rotation_steps > 1);
  CHECK(nvlink.findings.empty());
}

TEST_CASE("run plan: eight runs with the rotation counter cover every NIC pair and GPU path") {
  std::set<std::string> covered;
  for (std::uint64_t run = 0; run < 8; ++run) {
    EightGpuNode node;
    node.gemm.takes_its_time = false;  // only the plan matters here
    node.rdma.takes_its_time = false;
    const RunOutcome out = node.run(120s, run);
    REQUIRE(out.invalid.empty());
    const CheckResult& rdma = check_of(out.verdict, "rdma");
    REQUIRE(rdma.plan);
    CHECK(rdma.plan->rotation_step == static_cast<int>(run));
    covered.insert(rdma.plan->covered.begin(), rdma.plan->covered.end());
  }
  // 56 NIC pairs and 8 NICs x 8 GPUs of the mesh.
  CHECK(covered.size() == 56 + 64);
}
