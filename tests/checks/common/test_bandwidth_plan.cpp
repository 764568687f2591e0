// The bandwidth checks' time models (src/checks/common/bandwidth_plan.hpp): the profile's
// whole work for 1 and 8 GPUs, the work shrunk to the seconds it is given (never below the
// floor), the NVLink pairs rotating over runs, and run() recording what it covered, with the
// pairs of other steps left unmeasured and unjudged.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "checks/common/bandwidth_common.hpp"
#include "checks/common/bandwidth_plan.hpp"
#include "checks/common/entities.hpp"
#include "checks/hbm/hbm_check.hpp"
#include "checks/nvlink/nvlink_check.hpp"
#include "checks/nvlink/nvlink_readings.hpp"
#include "checks/pcie/pcie_check.hpp"
#include "model/byte_units.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"

using namespace preflight;
using preflight::test::h100;
using namespace std::chrono_literals;

namespace {

WorkRequest bandwidth_request(Profile profile, int gpus,
                              std::optional<double> seconds = std::nullopt,
                              std::uint64_t rotation = 0, const Thresholds* t = &h100()) {
  static const CheckOptions options;
  WorkRequest r;
  r.profile = profile;
  r.shape.gpus = gpus;
  r.options = &options;
  r.thresholds = t;
  r.seconds = seconds;
  r.rotation = rotation;
  return r;
}

HbmWork hbm_for(const WorkRequest& r) {
  return plan_hbm(r, hbm_model_memory_bytes(r.thresholds));
}

bool same_shape(const MeasurementShape& a, const MeasurementShape& b) {
  return a.bytes == b.bytes && a.copies_per_sample == b.copies_per_sample && a.samples == b.samples;
}

// A check run by hand on a fake node, with the planner's request in ctx.work.
struct HandRun {
  explicit HandRun(NodeReading reading) : node(std::move(reading)), backend(node) {
    backend.bandwidth = &engine;
  }
  CheckResult run(const Check& check, Profile profile, std::optional<double> seconds,
                  std::uint64_t rotation = 0, SteadyClock::duration deadline = 60s) {
    ctx.profile = profile;
    ctx.thresholds = &h100();
    ctx.faults = &faults;
    ctx.node = &node;
    ctx.engines = backend.engines();
    ctx.options = &options;
    ctx.cancel = std::make_shared<std::atomic<bool>>(false);
    ctx.deadline = SteadyClock::now() + deadline;
    ctx.work.seconds = seconds;
    ctx.work.rotation = rotation;
    return check.run(ctx);
  }
  test::FakeBandwidthEngine engine;
  NodeReading node;
  test::FakeBackend backend;
  FaultPlan faults;
  CheckOptions options;
  CheckContext ctx;
};

}  // namespace

TEST_CASE("pcie plan: the whole work for 1 and 8 H100 GPUs") {
  const PcieWork one = plan_pcie(bandwidth_request(Profile::quick, 1));
  CHECK(one.plan.expected_s == Approx(0.45).margin(0.01));
  CHECK(one.plan.floor_s < one.plan.expected_s);
  CHECK_FALSE(one.plan.reduced);
  CHECK(one.plan.rotation_steps == 1);
  CHECK(one.plan.coverage == "1 GPU alone (h2d, d2h, bidir); 64 MiB x 4 copies x 3 samples");

  const PcieWork eight = plan_pcie(bandwidth_request(Profile::quick, 8));
  CHECK(eight.plan.expected_s == Approx(3.64).margin(0.01));  // issue 16's quick budget: ~3.5
  CHECK(eight.plan.coverage ==
        "8 GPUs alone (h2d, d2h, bidir) and all at once; 64 MiB x 4 copies x 3 samples");

  // Standard and burn-in keep today's sizes.
  const PcieWork standard = plan_pcie(bandwidth_request(Profile::standard, 8));
  CHECK(same_shape(standard.shape, {256 * kMiB, 4, 5}));
  CHECK(standard.plan.expected_s == Approx(11.0).margin(0.05));
  CHECK(same_shape(plan_pcie(bandwidth_request(Profile::burnin, 8)).shape, {256 * kMiB, 8, 10}));
  // Without thresholds (a unit test, an unknown SKU) the slower fallback link: longer.
  CHECK(plan_pcie(bandwidth_request(Profile::quick, 8, std::nullopt, 0, nullptr)).plan.expected_s >
        eight.plan.expected_s);
  CHECK(plan_pcie(bandwidth_request(Profile::quick, 0)).plan.expected_s == 0.0);
}

TEST_CASE("pcie plan: fewer samples and smaller copies fit the seconds, down to the floor") {
  const PcieWork whole = plan_pcie(bandwidth_request(Profile::standard, 8));
  for (double s : {9.0, 6.0, 4.0}) {
    INFO(s);
    const PcieWork w = plan_pcie(bandwidth_request(Profile::standard, 8, s));
    CHECK(w.plan.expected_s <= s);
    CHECK(w.plan.reduced);
    CHECK(w.plan.floor_s == Approx(whole.plan.floor_s));
    CHECK(w.shape.samples >= 2);
  }
  // Below the floor (the planner never asks it): the floor, 64 MiB x 4 x 2.
  const PcieWork least = plan_pcie(bandwidth_request(Profile::standard, 8, 0.1));
  CHECK(same_shape(least.shape, {64 * kMiB, 4, 2}));
  CHECK(least.plan.expected_s == Approx(whole.plan.floor_s));
  CHECK(least.plan.coverage ==
        "8 GPUs alone (h2d, d2h, bidir) and all at once; 64 MiB x 4 copies x 2 samples");
  // Enough seconds: the whole work, not reduced.
  const PcieWork roomy = plan_pcie(bandwidth_request(Profile::standard, 8, 100.0));
  CHECK_FALSE(roomy.plan.reduced);
  CHECK(same_shape(roomy.shape, whole.shape));
}

TEST_CASE("nvlink plan: quick covers every pair on 2 to 4 GPUs, rotates on 8") {
  for (int n : {2, 3, 4}) {
    INFO(n << " GPUs");
    const NvlinkWork w = plan_nvlink(bandwidth_request(Profile::quick, n));
    CHECK(w.rotation.complete());
    CHECK(w.plan.rotation_steps == 1);
    CHECK(w.plan.covered.empty());
    CHECK(w.rotation.ordered_pairs().size() == static_cast<std::size_t>(n * (n - 1)));
    CHECK(w.plan.expected_s < 4.0);
  }
  // 8 x H100: as many shifts as fit ~4 s, two runs for every pair.
  const NvlinkWork eight = plan_nvlink(bandwidth_request(Profile::quick, 8));
  CHECK(eight.plan.expected_s <= 4.0);
  CHECK(eight.plan.expected_s == Approx(3.75).margin(0.01));
  CHECK_FALSE(eight.plan.reduced);  // the quick profile's whole work is itself rotated
  CHECK(eight.plan.rotation_steps == 2);
  CHECK(eight.plan.rotation_step == 0);
  CHECK(eight.plan.coverage ==
        "40 of 56 ordered pairs (step 1 of 2); 64 MiB x 4 copies x 3 samples");
  CHECK(eight.plan.covered.size() == 24);
  CHECK(eight.plan.covered.front() == "gpu0-gpu1");
  const NvlinkWork second = plan_nvlink(bandwidth_request(Profile::quick, 8, std::nullopt, 1));
  CHECK(second.plan.coverage ==
        "16 of 56 ordered pairs (step 2 of 2); 64 MiB x 4 copies x 3 samples");
  CHECK(second.plan.expected_s < eight.plan.expected_s);
  // Standard: every pair, today's sizes.
  const NvlinkWork standard = plan_nvlink(bandwidth_request(Profile::standard, 8));
  CHECK(standard.rotation.complete());
  CHECK(standard.plan.coverage == "56 of 56 ordered pairs; 256 MiB x 4 copies x 5 samples");
  CHECK(standard.plan.expected_s == Approx(5.96).margin(0.01));
  // One GPU: nothing (the check skips).
  CHECK(plan_nvlink(bandwidth_request(Profile::quick, 1)).plan.expected_s == 0.0);
}

TEST_CASE("nvlink plan: samples shrink before pairs, and the floor is one shift") {
  const NvlinkWork whole = plan_nvlink(bandwidth_request(Profile::standard, 8));
  // A little less time: every pair, fewer samples.
  const NvlinkWork less = plan_nvlink(bandwidth_request(Profile::standard, 8, 5.0));
  CHECK(less.rotation.complete());
  CHECK(less.plan.reduced);
  CHECK(less.plan.expected_s <= 5.0);
  CHECK_FALSE(same_shape(less.shape, whole.shape));
  // Much less: rotated, as many shifts as fit.
  const NvlinkWork rotated = plan_nvlink(bandwidth_request(Profile::standard, 8, 2.0));
  CHECK_FALSE(rotated.rotation.complete());
  CHECK(rotated.plan.expected_s <= 2.0);
  CHECK(rotated.plan.rotation_steps > 1);
  CHECK_THAT(rotated.plan.coverage, Catch::Contains("(step 1 of "));
  // Below the floor: one shift of the least shape, 8 of 56 ordered pairs in 7 steps.
  const NvlinkWork least = plan_nvlink(bandwidth_request(Profile::standard, 8, 0.1));
  CHECK(least.plan.rotation_steps == 7);
  CHECK(same_shape(least.shape, {64 * kMiB, 4, 2}));
  CHECK(least.plan.expected_s <= whole.plan.floor_s + 1e-9);
  CHECK(least.plan.coverage ==
        "8 of 56 ordered pairs (step 1 of 7); 64 MiB x 4 copies x 2 samples");
}

TEST_CASE("nvlink plan: rotation covers every pair over rotation_steps runs") {
  for (int n : {3, 5, 8}) {
    for (double seconds : {0.1, 1.5, 2.5, 3.5}) {
      INFO(n << " GPUs, " << seconds << " s");
      const int steps =
          plan_nvlink(bandwidth_request(Profile::standard, n, seconds)).plan.rotation_steps;
      std::set<std::pair<int, int>> ordered;
      std::set<std::pair<int, int>> unordered;
      std::set<std::string> covered;
      for (int run = 0; run < steps; ++run) {
        const NvlinkWork w = plan_nvlink(
            bandwidth_request(Profile::standard, n, seconds, static_cast<std::uint64_t>(run)));
        CHECK(w.plan.rotation_steps == steps);  // every run cuts the pairs the same way
        CHECK(w.plan.rotation_step == run);
        for (const auto& p : w.rotation.ordered_pairs()) ordered.insert(p);
        for (const auto& p : w.rotation.unordered_pairs()) unordered.insert(p);
        covered.insert(w.plan.covered.begin(), w.plan.covered.end());
      }
      CHECK(ordered.size() == static_cast<std::size_t>(n * (n - 1)));
      CHECK(unordered.size() == static_cast<std::size_t>(n * (n - 1) / 2));
      if (steps > 1) CHECK(covered.size() == static_cast<std::size_t>(n * (n - 1) / 2));
    }
  }
}

TEST_CASE("hbm plan: the whole work for 1 and 8 H100 GPUs") {
  const HbmWork one = hbm_for(bandwidth_request(Profile::quick, 1));
  CHECK(one.plan.expected_s == Approx(0.20).margin(0.01));
  CHECK(one.plan.coverage ==
        "copies 512 MiB x 8 copies x 3 samples; patterns address, inverse-address, random over "
        "2048 MiB per GPU");
  const HbmWork eight = hbm_for(bandwidth_request(Profile::quick, 8));
  CHECK(eight.plan.expected_s == Approx(0.89).margin(0.01));  // issue 16's quick budget: ~1.5
  CHECK(eight.plan.floor_s < eight.plan.expected_s);
  const HbmWork standard = hbm_for(bandwidth_request(Profile::standard, 8));
  CHECK(standard.patterns.size() == 6);
  CHECK(same_shape(standard.copy, {1024 * kMiB, 8, 5}));
  CHECK(hbm_pattern_bytes(standard, 80 * kGiB) > 70 * kGiB);
  CHECK(standard.plan.expected_s == Approx(5.74).margin(0.01));
  const HbmWork burnin = hbm_for(bandwidth_request(Profile::burnin, 8));
  // Burn-in stresses the memory as long as gemm's burn-in products: as many passes as fit 600 s.
  CHECK(burnin.passes > 100);
  CHECK(burnin.plan.expected_s == Approx(600.0).margin(5.0));
  CHECK_THAT(burnin.plan.coverage, Catch::EndsWith(" passes, more while time lasts"));
  // The memory the model assumes: the SKU id's size, else 80 GiB.
  CHECK(hbm_model_memory_bytes(nullptr) == 80 * kGiB);
  const Thresholds h200 = preflight::test::builtin_thresholds(find_sku("h200-sxm-141gb"), "test");
  CHECK(hbm_model_memory_bytes(&h200) == 141 * kGiB);
  const Thresholds generic = preflight::test::builtin_thresholds(nullptr, "test");
  CHECK(hbm_model_memory_bytes(&generic) == 80 * kGiB);
}

TEST_CASE("hbm plan: copies, passes, patterns, then the slice shrink, and address stays") {
  const HbmWork whole = hbm_for(bandwidth_request(Profile::burnin, 8));
  double last = whole.plan.expected_s;
  for (double s : {9.0, 6.0, 4.0, 3.0, 2.0, 1.5, 1.2, 1.0, 0.8}) {
    INFO(s);
    const HbmWork w = hbm_for(bandwidth_request(Profile::burnin, 8, s));
    CHECK(w.plan.reduced);
    CHECK(w.plan.expected_s <= std::max(s, w.plan.floor_s) + 1e-9);
    CHECK(w.plan.expected_s <= last + 1e-9);
    CHECK(std::find(w.patterns.begin(), w.patterns.end(), MemoryPattern::address) !=
          w.patterns.end());
    last = w.plan.expected_s;
  }
  // The floor: address-in-address alone over 1 GiB, the copies' least.
  const HbmWork least = hbm_for(bandwidth_request(Profile::burnin, 8, 0.1));
  CHECK(least.patterns == std::vector<MemoryPattern>{MemoryPattern::address});
  CHECK(hbm_pattern_bytes(least, 80 * kGiB) == kGiB);
  CHECK(least.passes == 1);
  CHECK(same_shape(least.copy, {512 * kMiB, 8, 2}));
  CHECK(least.plan.expected_s == Approx(whole.plan.floor_s));
  CHECK(least.plan.coverage ==
        "copies 512 MiB x 8 copies x 2 samples; patterns address over 1024 MiB per GPU, more while "
        "time lasts");
}

TEST_CASE("nvlink plan: run() measures its step's pairs, the others stay null and unjudged") {
  HandRun hand(test::healthy_node(8));
  // A slow pair and a pair without peer access, both outside step 2 of 2 (shifts 5 and 4).
  hand.faults = FaultPlan({parse_fault("nvlink-slow:0.3@pair=0-1", nvlink_fault_kinds())});
  hand.engine.no_peer_access = {{0, 1}};
  NvlinkCheck check;
  const CheckResult r = hand.run(check, Profile::quick, std::nullopt, 1);
  REQUIRE(r.plan.has_value());
  CHECK(r.plan->rotation_step == 1);
  CHECK(r.plan->rotation_steps == 2);
  CHECK_FALSE(r.plan->reduced);
  CHECK(r.plan->coverage == "16 of 56 ordered pairs (step 2 of 2); 64 MiB x 4 copies x 3 samples");
  CHECK(r.plan->covered.size() == 12);  // shift 5 (8 pairs), shift 4 (4 pairs)
  CHECK(r.plan->expected_s == 0.0);     // the runner fills it
  CHECK_THAT(r.summary,
             Catch::StartsWith("16 of 56 ordered pairs measured (pairs rotate: step 2 of 2)"));
  // Peer access is queried for every pair every run: the lost one is found whatever the step.
  std::set<std::string> codes;
  for (const auto& f : r.findings) codes.insert(f.code + "@" + f.entity);
  CHECK(codes == std::set<std::string>{"NVLINK_NO_PEER_ACCESS@gpu0-gpu1"});
  const Matrix& unidir = r.matrices.at(1);
  CHECK_FALSE(unidir.values[0][1].has_value());  // shift 1: not this step
  CHECK_FALSE(unidir.values[1][0].has_value());  // shift 7
  CHECK(unidir.values[0][5].has_value());        // shift 5
  CHECK(unidir.values[0][4].has_value());        // shift 4
  CHECK(r.matrices.at(2).values[0][4].has_value());
  CHECK_FALSE(r.matrices.at(2).values[0][3].has_value());
  // The recorded readings judged again (preflight judge) find no more than the run did.
  const auto again = check.judge(r.readings, h100());
  REQUIRE(again.has_value());
  CHECK(again->size() == 1);
  CHECK(hand.engine.measurements.size() == 16 + 4);
}

TEST_CASE("nvlink plan: run() names covered pairs by the GPUs' own indices") {
  NodeReading node = test::healthy_node(4);
  node.gpus[1].cuda_ordinal = -1;  // CUDA sees gpu0, gpu2, gpu3
  HandRun hand(node);
  NvlinkCheck check;
  const CheckResult r = hand.run(check, Profile::standard, 0.1, 0);
  REQUIRE(r.plan.has_value());
  CHECK(r.plan->reduced);
  REQUIRE(r.plan->rotation_steps == 2);
  CHECK(r.plan->covered ==
        std::vector<std::string>{"gpu0-gpu2", "gpu0-gpu3", "gpu2-gpu3"});  // shift 1 of 3
  CHECK_THAT(r.summary,
             Catch::Contains("3 of 6 ordered pairs measured (pairs rotate: step 1 of 2)"));
  CHECK_THAT(r.summary,
             Catch::EndsWith("; reduced to fit its time: 64 MiB x 4 copies x 2 samples"));
}

TEST_CASE("pcie plan: run() sizes its copies by the plan and records it") {
  HandRun hand(test::healthy_node(2));
  PcieCheck check("/nonexistent");
  const CheckResult whole = hand.run(check, Profile::standard, std::nullopt);
  REQUIRE(whole.plan.has_value());
  CHECK_FALSE(whole.plan->reduced);
  CHECK(whole.plan->coverage ==
        "2 GPUs alone (h2d, d2h, bidir) and all at once; 256 MiB x 4 copies x 5 samples");
  CHECK(hand.engine.measurements.front().samples == 5);
  hand.engine.measurements.clear();
  const CheckResult least = hand.run(check, Profile::standard, 0.1);
  REQUIRE(least.plan.has_value());
  CHECK(least.plan->reduced);
  CHECK(hand.engine.measurements.size() == 2 * 3 + 2);  // every GPU and direction still
  for (const auto& m : hand.engine.measurements) {
    CHECK(m.samples == 2);
    CHECK(m.bytes == 64 * kMiB);
  }
  CHECK_THAT(least.summary,
             Catch::EndsWith("; reduced to fit its time: 64 MiB x 4 copies x 2 samples"));
  CHECK(least.findings.empty());
}

TEST_CASE("hbm plan: run() tests the planned patterns and slice") {
  HandRun hand(test::healthy_node(1));
  HbmCheck check;
  const CheckResult least = hand.run(check, Profile::standard, 0.1);
  REQUIRE(least.plan.has_value());
  CHECK(least.plan->reduced);
  REQUIRE(hand.engine.pattern_jobs.size() == 1);
  CHECK(hand.engine.pattern_jobs[0].patterns == std::vector<MemoryPattern>{MemoryPattern::address});
  CHECK(hand.engine.pattern_jobs[0].bytes == kGiB);
  CHECK(hand.engine.measurements.at(0).samples == 2);
  CHECK_THAT(least.summary, Catch::Contains("; reduced to fit its time: copies 512 MiB"));
  // Burn-in's planned passes run while they fit its deadline, at least two.
  hand.engine.pattern_jobs.clear();
  const CheckResult burnin = hand.run(check, Profile::burnin, std::nullopt, 0, 1200ms);
  CHECK(hand.engine.pattern_jobs.size() >= 2);
  CHECK(burnin.findings.empty());
}

TEST_CASE("nvlink plan: through the runner, quick on 8 GPUs records its rotation") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {"nvlink"});
  FaultPlan faults;
  test::FakeBandwidthEngine engine;
  test::FakeBackend backend(test::healthy_node(8));
  backend.bandwidth = &engine;
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.profile = Profile::quick;
  settings.deadline = SteadyClock::now() + 120s;
  settings.rotation = 3;  // odd: step 2 of 2
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  const CheckResult* nvlink = nullptr;
  for (const auto& c : out.verdict.checks) {
    if (c.name == "nvlink") nvlink = &c;
  }
  REQUIRE(nvlink != nullptr);
  REQUIRE(nvlink->plan.has_value());
  CHECK(nvlink->status == Status::pass);
  CHECK(nvlink->plan->rotation_step == 1);
  CHECK(nvlink->plan->rotation_steps == 2);
  CHECK(nvlink->plan->expected_s > 0.0);
  CHECK(nvlink->plan->deadline_s > nvlink->plan->expected_s);
  CHECK_THAT(nvlink->summary, Catch::Contains("(pairs rotate: step 2 of 2)"));
}
