// The nccl check's time model (src/checks/nccl/nccl_plan.hpp): the profile's whole work on two
// and eight GPUs, the work shrunk to the seconds given (iterations, then the smaller sizes, the
// judged largest size always kept), never below the floor, and run() giving the engine the
// planned sizes and recording what it covered.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <numeric>

#include "checks/nccl/nccl_plan.hpp"
#include "model/byte_units.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_collective_engine.hpp"

using namespace preflight;
using preflight::test::h100;
using preflight::test::kEps;
using namespace std::chrono_literals;

namespace {

WorkRequest nccl_request(Profile profile, int gpus, std::optional<double> seconds = std::nullopt,
                         const Thresholds* thresholds = &h100()) {
  static const CheckOptions none;
  WorkRequest r;
  r.profile = profile;
  r.shape.gpus = gpus;
  r.options = &none;
  r.thresholds = thresholds;
  r.seconds = seconds;
  return r;
}

}  // namespace

TEST_CASE("unit: nccl plan: quick's whole work on two and eight H100 GPUs") {
  const NcclWork eight = plan_nccl_work(nccl_request(Profile::quick, 8));
  CHECK(eight.sizes.sizes == std::vector<std::size_t>{1 * kMiB, 256 * kMiB});
  CHECK(eight.sizes.iterations == 10);
  CHECK_FALSE(eight.plan.reduced);
  // Two communicators' init dominate (nccl_plan.cpp): about 3.5 s.
  CHECK(eight.plan.expected_s > 2.5);
  CHECK(eight.plan.expected_s < 4.0);
  CHECK(eight.plan.floor_s < eight.plan.expected_s);
  CHECK(eight.plan.coverage ==
        "all-gather and all-reduce over 8 GPUs: 1 MiB, 256 MiB x 10 iterations");
  REQUIRE(eight.collective_s.size() == 2);
  // NCCL's library load and the two collectives.
  const double collectives =
      std::accumulate(eight.collective_s.begin(), eight.collective_s.end(), 0.0);
  CHECK(eight.plan.expected_s > collectives);
  CHECK(eight.plan.expected_s < collectives + 0.5);
  // all-gather moves (n-1) x the bytes of a rank, all-reduce 2(n-1)/n: all-gather is longer.
  CHECK(eight.collective_s[0] > eight.collective_s[1]);

  const NcclWork two = plan_nccl_work(nccl_request(Profile::quick, 2));
  CHECK(two.plan.expected_s < eight.plan.expected_s);  // communicator init grows with the GPUs
  CHECK(two.plan.expected_s > 1.0);

  SECTION("one GPU: the check skips, nothing planned") {
    const NcclWork one = plan_nccl_work(nccl_request(Profile::quick, 1));
    CHECK(one.plan.expected_s == 0.0);
    CHECK(one.plan.floor_s == 0.0);
    CHECK(one.collective_s == std::vector<double>{0.0, 0.0});
  }
  SECTION("standard and burnin: four sizes, more iterations") {
    const NcclWork standard = plan_nccl_work(nccl_request(Profile::standard, 8));
    CHECK(standard.sizes.sizes.size() == 4);
    CHECK(standard.sizes.iterations == 20);
    const NcclWork burnin = plan_nccl_work(nccl_request(Profile::burnin, 8));
    CHECK(burnin.sizes.iterations == 200);
    CHECK(standard.plan.expected_s > eight.plan.expected_s);
    CHECK(burnin.plan.expected_s > standard.plan.expected_s + 3.0);
    CHECK(burnin.plan.floor_s == Approx(standard.plan.floor_s));
  }
  SECTION("a SKU without a bus-bandwidth figure is modelled at PCIe's speed") {
    const NcclWork unknown = plan_nccl_work(nccl_request(Profile::quick, 8, std::nullopt, nullptr));
    CHECK(unknown.plan.expected_s > eight.plan.expected_s + 0.5);
  }
  SECTION("the smallest GPU's memory leaves large sizes out, as nccl_plan does") {
    const NcclWork small =
        plan_nccl_work(nccl_request(Profile::standard, 8), std::uint64_t{8} << 30);
    CHECK(small.sizes.sizes == std::vector<std::size_t>{1 * kMiB, 16 * kMiB, 256 * kMiB});
  }
}

TEST_CASE("unit: nccl plan: seconds cut iterations, then the smaller sizes, never the largest") {
  const NcclWork whole = plan_nccl_work(nccl_request(Profile::burnin, 8));
  const NcclWork least = plan_nccl_work(nccl_request(Profile::burnin, 8, 0.0));

  SECTION("time to spare: the whole work") {
    const NcclWork w = plan_nccl_work(nccl_request(Profile::burnin, 8, 1000.0));
    CHECK_FALSE(w.plan.reduced);
    CHECK(w.sizes.iterations == 200);
  }
  SECTION("below the floor: the largest size, 3 iterations") {
    CHECK(least.plan.reduced);
    CHECK(least.sizes.sizes == std::vector<std::size_t>{1024 * kMiB});
    CHECK(least.sizes.iterations == 3);
    CHECK(least.plan.expected_s == Approx(whole.plan.floor_s));
    CHECK_THAT(least.plan.coverage,
               Catch::EndsWith("1024 MiB x 3 iterations (of 1 MiB, 16 MiB, 256 MiB, 1024 MiB x "
                               "200 iterations)"));
  }
  SECTION("a share between floor and whole") {
    const double floor = whole.plan.floor_s;
    for (double s :
         {floor + 0.01, floor + 0.05, floor + 0.5, floor + 2.0, whole.plan.expected_s - 0.1}) {
      INFO(s);
      const NcclWork w = plan_nccl_work(nccl_request(Profile::burnin, 8, s));
      CHECK(w.plan.reduced);
      CHECK(w.plan.expected_s <= s + kEps);
      CHECK(w.plan.expected_s >= floor - kEps);
      CHECK(w.sizes.iterations >= 3);
      CHECK(w.sizes.iterations < 200);
      CHECK(w.sizes.sizes.back() == 1024 * kMiB);
      CHECK(w.collective_s.size() == 2);
    }
    // With time for more than 3 iterations every size stays.
    const NcclWork roomy = plan_nccl_work(nccl_request(Profile::burnin, 8, floor + 2.0));
    CHECK(roomy.sizes.sizes.size() == 4);
    CHECK(roomy.sizes.iterations > 3);
  }
}

TEST_CASE("unit: nccl plan: run() gives the engine the planned sizes and records them") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const Check& check = *registry.find("nccl");
  test::FakeCollectiveEngine engine;
  NodeReading node = test::healthy_node(8);
  test::FakeBackend backend(node);
  backend.collective = &engine;
  const CheckOptions none;
  FaultPlan faults;
  CheckContext ctx;
  ctx.profile = Profile::burnin;
  ctx.thresholds = &h100();
  ctx.faults = &faults;
  ctx.node = &node;
  ctx.engines = backend.engines();
  ctx.options = &none;
  ctx.cancel = std::make_shared<std::atomic<bool>>(false);
  ctx.abandoned_threads = std::make_shared<std::atomic<int>>(0);
  ctx.deadline = SteadyClock::now() + 60s;

  SECTION("reduced: the planner's seconds") {
    const double seconds = plan_nccl_work(nccl_request(Profile::burnin, 8)).plan.floor_s + 0.5;
    ctx.work.seconds = seconds;
    const NcclWork planned = plan_nccl_work(nccl_request(Profile::burnin, 8, seconds));
    REQUIRE(planned.plan.reduced);
    const CheckResult r = check.run(ctx);
    REQUIRE(engine.jobs().size() == 2);
    for (const CollectiveJob& j : engine.jobs()) {
      CHECK(j.sizes == planned.sizes.sizes);
      CHECK(j.iterations == planned.sizes.iterations);
    }
    REQUIRE(r.plan);
    CHECK(r.plan->reduced);
    CHECK(r.plan->coverage == planned.plan.coverage);
    CHECK_THAT(r.summary, Catch::Contains("of 200 iterations"));
    // The judged size is the largest: a healthy node still passes.
    CHECK(r.findings.empty());
  }
  SECTION("whole, on the GPUs CUDA can use") {
    node.gpus[7].cuda_ordinal = -1;
    const CheckResult r = check.run(ctx);
    REQUIRE(engine.jobs().size() == 2);
    CHECK(engine.jobs()[0].nranks == 7);
    CHECK(engine.jobs()[0].iterations == 200);
    REQUIRE(r.plan);
    CHECK_FALSE(r.plan->reduced);
    CHECK_THAT(r.plan->coverage, Catch::StartsWith("all-gather and all-reduce over 7 GPUs: "));
  }
}
