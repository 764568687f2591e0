// The rdma check's time model (src/checks/rdma/rdma_plan.hpp): the profile's whole work, the
// work shrunk to the seconds it is given, the NIC pairs and the loopback mesh rotating over runs,
// and run() recording what it covered. Before a run the model counts two NUMA nodes
// (rdma_model::kModelNumaNodes); the runs here read the tests' empty sysfs: one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "checks/common/counters.hpp"
#include "checks/rdma/rdma_check.hpp"
#include "checks/rdma/rdma_math.hpp"
#include "checks/rdma/rdma_plan.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_rdma_engine.hpp"

using namespace preflight;
using preflight::test::kEps;
using namespace std::chrono_literals;

namespace {

WorkRequest rdma_request(Profile profile, int gpus, int nics, const CheckOptions& options,
                         std::optional<double> seconds = std::nullopt, std::uint64_t rotation = 0) {
  WorkRequest r;
  r.profile = profile;
  r.shape.gpus = gpus;
  r.shape.nics = nics;
  r.options = &options;  // thresholds stay null: the model needs none
  r.seconds = seconds;
  r.rotation = rotation;
  return r;
}

// Listing, then each transfer's setup and writes, and with transfers the ports' error counters
// read around them (kCounterReadSeconds).
double model_s(int transfers, double transfer_s) {
  return rdma_model::kListing_s + transfers * (rdma_model::kTransferSetup_s + transfer_s) +
         (transfers > 0 ? kCounterReadSeconds : 0.0);
}

struct RdmaPlanOutcome {
  CheckResult rdma;
  std::size_t jobs = 0;
};

// The check through the runner, as a run does it: the planner's request (shape, rotation) in
// ctx.work.
RdmaPlanOutcome run_rdma_plan(test::FakeRdmaEngine& engine, int gpus, std::uint64_t rotation,
                              Profile profile = Profile::quick) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  CheckOptions opts;
  const auto plan = plan_checks(registry, profile, {"rdma"}, opts);
  FaultPlan faults;
  test::FakeBackend backend(test::healthy_node(gpus));
  backend.rdma = &engine;
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.profile = profile;
  settings.deadline = SteadyClock::now() + 120s;
  settings.options = opts;
  settings.nics = static_cast<int>(engine.inv.devices.size());
  settings.rotation = rotation;
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  RdmaPlanOutcome o;
  for (const auto& c : out.verdict.checks) {
    if (c.name == "rdma") o.rdma = c;
  }
  o.jobs = engine.jobs().size();
  return o;
}

}  // namespace

TEST_CASE("rdma plan: the quick profile's whole work for 0, 1 and 8 NICs") {
  const CheckOptions none;
  SECTION("no NIC: the device listing only") {
    const WorkPlan p = plan_rdma_work(rdma_request(Profile::quick, 1, 0, none));
    CHECK(p.expected_s == Approx(0.2));
    CHECK(p.floor_s == Approx(0.2));
    CHECK_FALSE(p.reduced);
    CHECK(p.rotation_steps == 1);
    CHECK(p.coverage == "device listing only: no compute NIC");
  }
  SECTION("1 GPU, 1 NIC: a loopback into each socket's memory and GPUDirect, about a second") {
    const WorkPlan p = plan_rdma_work(rdma_request(Profile::quick, 1, 1, none));
    CHECK(p.expected_s == Approx(model_s(3, 0.15)));  // 1.0 s
    CHECK(p.floor_s == Approx(model_s(2, 0.1)));      // 0.65 s: one socket a run
    CHECK_FALSE(p.reduced);
    CHECK(p.rotation_steps == 1);
    CHECK(p.coverage ==
          "2 loopbacks, 1 GPUDirect, no NIC pair (1 NIC); 0.15 s of writes per transfer");
  }
  SECTION("8 GPUs, 8 NICs: a shift of each part, about 6 s, everything in 8 runs") {
    const WorkPlan p = plan_rdma_work(rdma_request(Profile::quick, 8, 8, none));
    CHECK(p.expected_s == Approx(model_s(8 + 8 + 8, 0.15)));  // 6.25 s
    CHECK(p.floor_s == Approx(model_s(8 + 8 + 8, 0.1)));      // 5.05 s
    CHECK_FALSE(p.reduced);  // rotating is quick's whole work, not a reduction
    CHECK(p.rotation_steps == 8);
    CHECK(p.rotation_step == 0);
    CHECK(p.covered.size() == 24);
    CHECK(p.coverage ==
          "8 of 16 loopbacks (NUMA nodes rotate: step 1 of 2), 8 of 64 GPUDirect (GPUs rotate: "
          "step 1 of 8), 8 of 56 NIC pairs (pairs rotate: step 1 of 7); 0.15 s of writes per "
          "transfer");
  }
  SECTION("without GPUs there is no GPUDirect; 4 NICs fit every pair") {
    const WorkPlan p = plan_rdma_work(rdma_request(Profile::quick, 0, 4, none));
    CHECK(p.expected_s == Approx(model_s(8 + 12, 0.15)));
    CHECK(p.rotation_steps == 1);
    CHECK(p.covered.empty());
    CHECK_THAT(p.coverage, Catch::StartsWith("8 loopbacks, 0 GPUDirect, 12 of 12 NIC pairs;"));
  }
  SECTION("--rdma-devices names the compute NICs: their count and names, not the node's") {
    CheckOptions listed;
    listed.set("--rdma-devices", "mlx5_0,mlx5_3,mlx5_4");
    const WorkPlan p = plan_rdma_work(rdma_request(Profile::quick, 8, 12, listed));
    // 3 x (2 + 8) cells and 6 pairs do not fit 6.5 s: two steps of 18 transfers.
    CHECK(p.expected_s == Approx(model_s(3 * (1 + 4 + 1), 0.15)));
    CHECK(p.rotation_steps == 2);
    CHECK_THAT(p.coverage, Catch::Contains("3 of 6 NIC pairs"));
    CheckOptions eight;
    eight.set("--rdma-devices", "a0,a1,a2,a3,a4,a5,a6,a7");
    const WorkPlan q = plan_rdma_work(rdma_request(Profile::quick, 8, 12, eight, std::nullopt, 3));
    CHECK(q.rotation_steps == 8);
    CHECK(q.covered.size() == 24);
    for (const std::string& e : q.covered) CHECK(e.rfind('a', 0) == 0);
    CHECK(std::count(q.covered.begin(), q.covered.end(), "a0-gpu3") == 1);  // step 4: shift 3
  }
}

TEST_CASE("rdma plan: standard and burnin keep the whole mesh and every pair at 2 s and 10 s") {
  const CheckOptions none;
  const WorkPlan standard = plan_rdma_work(rdma_request(Profile::standard, 8, 8, none));
  const int whole = 8 * 2 + 8 * 8 + 56;                        // 136 transfers
  CHECK(standard.expected_s == Approx(model_s(whole, 2.0)));   // 285.85 s
  CHECK(standard.floor_s == Approx(model_s(8 + 8 + 8, 0.1)));  // 5.05 s
  CHECK(standard.rotation_steps == 1);
  CHECK(standard.covered.empty());
  CHECK_FALSE(standard.reduced);
  CHECK(standard.coverage ==
        "16 loopbacks, 64 GPUDirect, 56 of 56 NIC pairs; 2 s of writes per transfer");
  const WorkPlan burnin = plan_rdma_work(rdma_request(Profile::burnin, 8, 8, none));
  CHECK(burnin.expected_s == Approx(model_s(whole, 10.0)));  // 1373.85 s
  CHECK(burnin.rotation_steps == 1);
  const WorkPlan one = plan_rdma_work(rdma_request(Profile::standard, 1, 1, none));
  CHECK(one.expected_s == Approx(model_s(3, 2.0)));  // 6.55 s
}

TEST_CASE("rdma plan: given seconds, the work shrinks to fit and never below its floor") {
  const CheckOptions none;
  for (Profile profile : {Profile::quick, Profile::standard, Profile::burnin}) {
    for (int nics : {1, 2, 4, 8}) {
      const WorkPlan whole = plan_rdma_work(rdma_request(profile, 8, nics, none));
      for (double f : {0.0, 0.1, 0.25, 0.5, 0.75, 0.99}) {
        const double seconds = whole.floor_s + f * (whole.expected_s - whole.floor_s);
        INFO("profile " << static_cast<int>(profile) << ", " << nics << " NICs, " << seconds
                        << " s");
        const WorkPlan p = plan_rdma_work(rdma_request(profile, 8, nics, none, seconds));
        CHECK(p.expected_s <= seconds + 1e-6);
        CHECK(p.expected_s >= whole.floor_s - 1e-6);
        CHECK(p.floor_s == Approx(whole.floor_s));
        CHECK(p.reduced == (p.expected_s < whole.expected_s - kEps));
      }
      // Seconds at or above the whole work change nothing.
      const WorkPlan more = plan_rdma_work(rdma_request(profile, 8, nics, none, whole.expected_s));
      CHECK_FALSE(more.reduced);
      CHECK(more.expected_s == Approx(whole.expected_s));
    }
  }
  SECTION("standard: shorter transfers first, then fewer cells and pairs, then 0.1 s transfers") {
    const WorkPlan shorter = plan_rdma_work(rdma_request(Profile::standard, 8, 8, none, 100.0));
    CHECK(shorter.reduced);
    CHECK(shorter.rotation_steps == 1);  // the whole mesh and every pair still
    CHECK(shorter.coverage ==
          "16 loopbacks, 64 GPUDirect, 56 of 56 NIC pairs; 0.63 s of writes per transfer");
    const WorkPlan fewer = plan_rdma_work(rdma_request(Profile::standard, 8, 8, none, 12.0));
    CHECK(fewer.rotation_steps == 4);  // every part in 4 runs: 1, 2 and 2 shifts a step
    CHECK(fewer.coverage ==
          "8 of 16 loopbacks (NUMA nodes rotate: step 1 of 2), 16 of 64 GPUDirect (GPUs "
          "rotate: step 1 of 4), 16 of 56 NIC pairs (pairs rotate: step 1 of 4); 0.19 s of "
          "writes per transfer");
    CHECK(fewer.expected_s <= 12.0);
    const WorkPlan least = plan_rdma_work(rdma_request(Profile::standard, 8, 8, none, 5.0));
    CHECK(least.expected_s == Approx(5.0 + kCounterReadSeconds));  // its floor
    CHECK(least.rotation_steps == 8);
    CHECK_THAT(least.coverage, Catch::EndsWith("; 0.1 s of writes per transfer"));
  }
  SECTION("quick on 8 NICs: a shift of each part is its least, so only the transfers shorten") {
    const WorkPlan p = plan_rdma_work(rdma_request(Profile::quick, 8, 8, none, 5.5));
    CHECK(p.reduced);
    CHECK(p.rotation_steps == 8);
    CHECK(p.expected_s <= 5.5);
    CHECK_THAT(p.coverage, Catch::EndsWith("; 0.11 s of writes per transfer"));
  }
}

TEST_CASE(
    "rdma plan: the NIC pairs and the mesh rotate, covering every pair and cell over the steps") {
  const CheckOptions none;
  for (int nics : {2, 3, 5, 8, 16}) {
    for (bool at_floor : {false, true}) {
      // At the floor a shift of each part per run (the planner never asks for less); else
      // quick's whole work.
      const WorkPlan whole = plan_rdma_work(rdma_request(Profile::quick, 8, nics, none));
      const auto sized = at_floor ? std::optional<double>(whole.floor_s) : std::nullopt;
      const WorkPlan step0 = plan_rdma_work(rdma_request(Profile::quick, 8, nics, none, sized));
      std::set<std::string> pairs;
      std::set<std::string> cells;
      for (int r = 0; r < step0.rotation_steps; ++r) {
        const WorkPlan p =
            plan_rdma_work(rdma_request(Profile::quick, 8, nics, none, sized, r + 7 * 100));
        CHECK(p.rotation_steps == step0.rotation_steps);
        for (const std::string& e : p.covered) {
          // "nic0-nic1" is a pair; "nic0-numa1" and "nic0-gpu3" are cells of the mesh.
          (e.find("-nic") != std::string::npos ? pairs : cells).insert(e);
        }
      }
      INFO(nics << " NICs" << (at_floor ? ", at the floor" : ""));
      if (step0.rotation_steps == 1) {
        CHECK(step0.covered.empty());  // everything every run: nothing to name
        continue;
      }
      CHECK(cells.size() == static_cast<std::size_t>(nics * (2 + 8)));
      CHECK(cells.count("nic1-numa0") == 1);
      CHECK(cells.count("nic1-gpu7") == 1);
      if (!pairs.empty()) {
        CHECK(pairs.size() == static_cast<std::size_t>(nics * (nics - 1)));
        CHECK(pairs.count("nic0-nic1") == 1);
        CHECK(pairs.count("nic1-nic0") == 1);
      }
    }
  }
}

TEST_CASE("rdma plan: plan_transfers takes the rotation's cells and pairs, or all of them") {
  std::vector<RdmaDevice> devices;
  for (int i = 0; i < 8; ++i) devices.push_back(test::healthy_nic(i, i));
  RdmaMesh mesh;
  for (int i = 0; i < 8; ++i) mesh.gpus.push_back(i);
  CHECK(rdma_pair_endpoints(devices).size() == 8);
  const CheckOptions none;
  RdmaWorkShape shape;
  shape.nics = 8;
  shape.gpu_cells = 8;
  const RdmaWork work = plan_rdma(rdma_request(Profile::quick, 8, 8, none, std::nullopt, 1), shape,
                                  rdma_pair_endpoints(devices));
  const auto plan = plan_transfers(devices, mesh, work.coverage());
  REQUIRE(plan.size() == 8 + 8 + 8);
  std::vector<std::string> rotating;
  for (const auto& t : plan) {
    if (t.kind != "loopback") rotating.push_back(t.entity);
  }
  CHECK(rotating == work.plan.covered);
  CHECK(work.plan.rotation_step == 1);
  CHECK(rotating.front() == "mlx5_0-mlx5_7");  // pairs' step 2 is shift n-1: i -> i+7
  CHECK(rotating.back() == "mlx5_7-gpu0");     // GPUs' step 2: each NIC's nearest + 1
  // No coverage: everything, as before.
  CHECK(plan_transfers(devices, mesh).size() == 8 + 56 + 64);
  RdmaCoverage none_of_them;
  none_of_them.pairs.emplace();
  none_of_them.gpu_shifts.emplace();
  CHECK(plan_transfers(devices, mesh, none_of_them).size() == 8);
  // A down NIC is no endpoint: the rotation's indices skip it.
  devices[2].ports[0].state = "DOWN";
  CHECK(rdma_pair_endpoints(devices) == std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_3",
                                                                 "mlx5_4", "mlx5_5", "mlx5_6",
                                                                 "mlx5_7"});
  RdmaCoverage one;
  one.pairs = {{1, 2}};
  one.gpu_shifts.emplace();
  CHECK(plan_transfers(devices, mesh, one)[7].entity == "mlx5_1-mlx5_3");
}

TEST_CASE("rdma plan: run() records its coverage, rotating 8 NICs' pairs and GPUs in quick") {
  SECTION("8 NICs quick, run 2: loopbacks, a GPU each and the 8 pairs of step 2") {
    test::FakeRdmaEngine engine(8, true);
    const RdmaPlanOutcome o = run_rdma_plan(engine, 8, 1);
    INFO(o.rdma.summary);
    CHECK(o.rdma.status == Status::pass);
    CHECK(o.jobs == 8 + 8 + 8);
    REQUIRE(o.rdma.plan.has_value());
    const CheckPlanRecord& plan = *o.rdma.plan;
    CHECK_FALSE(plan.reduced);
    CHECK(plan.rotation_step == 1);
    CHECK(plan.rotation_steps == 8);
    CHECK(plan.coverage ==
          "8 loopbacks, 8 of 64 GPUDirect (GPUs rotate: step 2 of 8), 8 of 56 NIC pairs (pairs "
          "rotate: step 2 of 7); 0.15 s of writes per transfer");
    REQUIRE(plan.covered.size() == 16);
    CHECK(plan.covered.front() == "mlx5_0-mlx5_7");
    CHECK(plan.covered.back() == "mlx5_7-gpu0");
    CHECK(plan.expected_s == Approx(model_s(24, 0.15)));
    CHECK_THAT(o.rdma.summary,
               Catch::Contains("24 of 24 transfers run; 8 of 64 GPUDirect (GPUs rotate: step 2 "
                               "of 8), 8 of 56 NIC pairs (pairs rotate: step 2 of 7)"));
    // Pairs another step covers are not "not run": no timeout, nothing missing.
    const auto& r = o.rdma.readings;
    CHECK(r["transfers"].size() == 24);
    CHECK_FALSE(r.contains("transfers_not_run"));
  }
  SECTION("the check counts its NICs itself: 3 usable of 4, every pair and cell") {
    test::FakeRdmaEngine engine(4, true);
    engine.inv.devices[1].ports[0].state = "DOWN";
    const RdmaPlanOutcome o = run_rdma_plan(engine, 4, 5);
    REQUIRE(o.rdma.plan.has_value());
    CHECK(o.rdma.plan->rotation_steps == 1);
    CHECK(o.rdma.plan->covered.empty());
    CHECK(o.rdma.plan->coverage ==
          "3 loopbacks, 12 GPUDirect, 6 of 6 NIC pairs; 0.15 s of writes per transfer");
    CHECK(o.jobs == 3 + 6 + 12);
  }
  SECTION("a GPU CUDA cannot use has no GPUDirect in the count") {
    test::FakeRdmaEngine engine(2, true);
    RdmaCheck check;
    NodeReading node = test::healthy_node(2);
    node.gpus[1].cuda_ordinal = -1;
    const Thresholds thresholds = preflight::test::builtin_thresholds(nullptr, "test");
    const FaultPlan faults;
    const CheckOptions options;
    CheckContext ctx;  // by hand, without a planner's request: the profile's whole work
    ctx.profile = Profile::standard;
    ctx.thresholds = &thresholds;
    ctx.faults = &faults;
    ctx.node = &node;
    ctx.engines.rdma = &engine;
    ctx.options = &options;
    ctx.cancel = std::make_shared<std::atomic<bool>>(false);
    ctx.deadline = SteadyClock::now() + 60s;
    ctx.work.seconds = 1.0;  // below the floor: the floor is done
    const CheckResult r = check.run(ctx);
    REQUIRE(r.plan.has_value());
    CHECK(r.plan->reduced);
    CHECK(r.plan->coverage ==
          "2 loopbacks, 2 GPUDirect, 2 of 2 NIC pairs; 0.1 s of writes per transfer");
    CHECK(engine.jobs().size() == 2 + 2 + 2);
    for (const auto& job : engine.jobs()) CHECK(job.seconds == Approx(0.1));
    CHECK_THAT(r.summary, Catch::Contains("; reduced to fit its time: 2 loopbacks"));
  }
}
