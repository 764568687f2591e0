// The gemm check's time model (src/checks/gemm/gemm_plan.hpp): the profile's whole work on one
// and eight GPUs, the product seconds shrunk to the seconds given and never below the floor,
// --gemm-seconds kept as given, and run() giving the engine the planned product seconds and
// recording what it covered.
#include <catch2/catch.hpp>

#include <atomic>
#include <memory>

#include "checks/gemm/gemm_plan.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_gemm_engine.hpp"

using namespace preflight;
using preflight::test::h100;
using preflight::test::kEps;
using preflight::test::options_of;
using namespace std::chrono_literals;

namespace {

WorkRequest gemm_request(Profile profile, int gpus, const CheckOptions& options,
                         std::optional<double> seconds = std::nullopt,
                         const Thresholds* thresholds = &h100()) {
  WorkRequest r;
  r.profile = profile;
  r.shape.gpus = gpus;
  r.options = &options;
  r.thresholds = thresholds;
  r.seconds = seconds;
  return r;
}

}  // namespace

TEST_CASE("unit: gemm plan: quick's whole work is about 6 s on one H100 and 7 s on eight") {
  const CheckOptions none;
  const GemmWork one = plan_gemm_work(gemm_request(Profile::quick, 1, none));
  CHECK(one.product_seconds == 3.0);
  CHECK_FALSE(one.plan.reduced);
  CHECK(one.plan.expected_s > 5.0);
  CHECK(one.plan.expected_s < 6.5);
  CHECK(one.plan.floor_s < one.plan.expected_s);
  CHECK(one.plan.floor_s > 1.0);
  CHECK(one.plan.coverage == "bf16: 3.0 s of products per GPU, 1 GPU");
  REQUIRE(one.dtypes.size() == 1);
  CHECK(one.dtypes[0].size == 16384);
  // An H100's bf16 round of 8 products is well under the product seconds.
  CHECK(one.dtypes[0].round_s < 0.5);

  const GemmWork eight = plan_gemm_work(gemm_request(Profile::quick, 8, none));
  CHECK(eight.product_seconds == 3.0);
  CHECK(eight.plan.expected_s > one.plan.expected_s);  // the GPUs' setup is partly serialized
  CHECK(eight.plan.expected_s < 7.5);
  CHECK(eight.plan.coverage == "bf16: 3.0 s of products per GPU, 8 GPUs at once");

  SECTION("standard and burnin keep their product seconds") {
    const GemmWork standard = plan_gemm_work(gemm_request(Profile::standard, 8, none));
    CHECK(standard.product_seconds == 60.0);
    CHECK(standard.plan.expected_s == Approx(eight.plan.expected_s + 57.0));
    CHECK(standard.plan.floor_s == Approx(eight.plan.floor_s));
    const GemmWork burnin = plan_gemm_work(gemm_request(Profile::burnin, 8, none));
    CHECK(burnin.plan.expected_s == Approx(eight.plan.expected_s + 597.0));
  }
}

TEST_CASE("unit: gemm plan: seconds shrink the product seconds, never below the floor") {
  const CheckOptions none;
  const GemmWork whole = plan_gemm_work(gemm_request(Profile::standard, 8, none));
  const GemmWork least = plan_gemm_work(gemm_request(Profile::standard, 8, none, 0.0));

  SECTION("time to spare: the whole work") {
    const GemmWork w = plan_gemm_work(gemm_request(Profile::standard, 8, none, 1000.0));
    CHECK_FALSE(w.plan.reduced);
    CHECK(w.plan.expected_s == Approx(whole.plan.expected_s));
  }
  SECTION("a share between floor and whole") {
    for (double s : {5.0, 10.0, 20.0, 40.0, 63.0}) {
      INFO(s);
      const GemmWork w = plan_gemm_work(gemm_request(Profile::standard, 8, none, s));
      CHECK(w.plan.reduced);
      CHECK(w.plan.expected_s <= s + kEps);
      CHECK(w.plan.expected_s >= w.plan.floor_s - kEps);
      CHECK(w.product_seconds >= 1.0);
      CHECK(w.product_seconds < 60.0);
      CHECK(w.plan.floor_s == Approx(whole.plan.floor_s));
      // Cut to the 0.1 s step: at most a step short of the seconds given.
      CHECK(w.plan.expected_s > s - 0.1 - kEps);
      CHECK_THAT(w.plan.coverage, Catch::Contains("of products per GPU (of 60.0 s)"));
    }
  }
  SECTION("below the floor: the floor's work") {
    CHECK(least.plan.reduced);
    CHECK(least.product_seconds == 1.0);
    CHECK(least.plan.expected_s == Approx(whole.plan.floor_s));
  }
  SECTION("every dtype shrinks alike") {
    const CheckOptions two = options_of({{"--gemm-dtypes", "bf16,fp16"}});
    const GemmWork w = plan_gemm_work(gemm_request(Profile::standard, 8, two, 30.0));
    CHECK(w.plan.reduced);
    CHECK(w.plan.expected_s <= 30.0 + kEps);
    REQUIRE(w.dtypes.size() == 2);
    CHECK(w.dtypes[0].seconds - w.dtypes[0].overhead_s == Approx(w.product_seconds));
    CHECK(w.dtypes[1].seconds - w.dtypes[1].overhead_s == Approx(w.product_seconds));
    CHECK(w.dtypes[0].overhead_s > w.dtypes[1].overhead_s);  // the first sets the GPUs up
    CHECK_THAT(w.plan.coverage, Catch::StartsWith("bf16, fp16: ") &&
                                    Catch::Contains("of products per GPU and dtype (of 60.0 s)"));
  }
}

TEST_CASE("unit: gemm plan: --gemm-seconds is kept as given, its floor is its whole work") {
  const CheckOptions given = options_of({{"--gemm-seconds", "10"}});
  const GemmWork whole = plan_gemm_work(gemm_request(Profile::quick, 4, given));
  CHECK(whole.fixed);
  CHECK(whole.product_seconds == 10.0);
  CHECK(whole.plan.floor_s == Approx(whole.plan.expected_s));
  const GemmWork asked = plan_gemm_work(gemm_request(Profile::quick, 4, given, 5.0));
  CHECK(asked.product_seconds == 10.0);
  CHECK_FALSE(asked.plan.reduced);
  CHECK(asked.plan.expected_s == Approx(whole.plan.expected_s));
}

TEST_CASE("unit: gemm plan: a slow dtype's full round is its least product time") {
  // Unknown SKU (no thresholds): the A100's fp32 figure, so 8 products of 16384^3 on CUDA
  // cores take several seconds, more than the floor's 1 s.
  const CheckOptions fp32 = options_of({{"--gemm-dtypes", "fp32"}});
  const GemmWork unknown = plan_gemm_work(gemm_request(Profile::quick, 1, fp32, 0.0, nullptr));
  REQUIRE(unknown.dtypes.size() == 1);
  CHECK(unknown.dtypes[0].round_s > 3.0);
  CHECK(unknown.plan.expected_s ==
        Approx(unknown.library_s + unknown.dtypes[0].overhead_s + unknown.dtypes[0].round_s));
  const GemmWork known = plan_gemm_work(gemm_request(Profile::quick, 1, fp32, 0.0));
  CHECK(known.dtypes[0].round_s < unknown.dtypes[0].round_s);
}

TEST_CASE("unit: gemm plan: no GPU CUDA can use plans nothing") {
  const CheckOptions none;
  const GemmWork w = plan_gemm_work(gemm_request(Profile::standard, 0, none));
  CHECK(w.plan.expected_s == 0.0);
  CHECK(w.plan.floor_s == 0.0);
  CHECK(w.dtypes.size() == 1);
}

TEST_CASE("unit: gemm plan: run() gives the engine the planned product seconds and records them") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const Check& check = *registry.find("gemm");
  test::FakeGemmEngine engine;
  NodeReading node = test::healthy_node(4);
  test::FakeBackend backend(node);
  backend.gemm = &engine;
  const CheckOptions none;
  FaultPlan faults;
  CheckContext ctx;
  ctx.profile = Profile::standard;
  ctx.thresholds = &h100();
  ctx.faults = &faults;
  ctx.node = &node;
  ctx.engines = backend.engines();
  ctx.options = &none;
  ctx.cancel = std::make_shared<std::atomic<bool>>(false);
  ctx.abandoned_threads = std::make_shared<std::atomic<int>>(0);
  // Room for standard's 60 s of products with its setup's headroom (the fake engine takes none).
  ctx.deadline = SteadyClock::now() + 120s;

  SECTION("reduced: the planner's seconds") {
    ctx.work.seconds = 8.0;
    const GemmWork planned = plan_gemm_work(gemm_request(Profile::standard, 4, none, 8.0));
    REQUIRE(planned.plan.reduced);
    const CheckResult r = check.run(ctx);
    const auto jobs = engine.jobs();
    REQUIRE(jobs.size() == 4);
    for (const GemmJob& j : jobs) CHECK(j.product_seconds == Approx(planned.product_seconds));
    REQUIRE(r.plan);
    CHECK(r.plan->reduced);
    CHECK(r.plan->coverage == planned.plan.coverage);
    CHECK(r.plan->expected_s == 0.0);  // the runner fills it
    CHECK_THAT(r.summary, Catch::Contains("products cut to"));
  }
  SECTION("whole: the profile's product seconds, on the GPUs CUDA can use") {
    node.gpus[3].cuda_ordinal = -1;
    const CheckResult r = check.run(ctx);
    const auto jobs = engine.jobs();
    REQUIRE(jobs.size() == 3);
    for (const GemmJob& j : jobs) CHECK(j.product_seconds == Approx(60.0));
    REQUIRE(r.plan);
    CHECK_FALSE(r.plan->reduced);
    CHECK(r.plan->coverage == "bf16: 60.0 s of products per GPU, 3 GPUs at once");
  }
}
