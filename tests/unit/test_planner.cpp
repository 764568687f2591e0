// The planner (docs/plan.md): how a run's time is divided among modelled checks, the floor and
// the refusal below it, the default deadline; the pair rotation; the node a plan is made for.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include "app/plan_view.hpp"
#include "app/rotation_counter.hpp"
#include "model/pair_rotation.hpp"
#include "preflight/errors.hpp"
#include "run/planner.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;

namespace {

// A check whose model is `whole` seconds of work, reducible down to `floor` seconds.
class FlooredModelledCheck final : public Check {
 public:
  FlooredModelledCheck(std::string name, double whole, double floor, bool needs_gpu = false)
      : whole_(whole), floor_(floor) {
    info_.name = std::move(name);
    info_.description = "modelled";
    info_.needs_gpu = needs_gpu;
    info_.budget = {std::chrono::seconds(1), std::chrono::seconds(1), std::chrono::seconds(1)};
  }
  const CheckInfo& info() const override { return info_; }
  WorkPlan plan_work(const WorkRequest& request) const override {
    WorkPlan plan;
    plan.floor_s = floor_;
    plan.expected_s =
        request.seconds ? std::max(floor_, std::min(whole_, *request.seconds)) : whole_;
    plan.reduced = plan.expected_s < whole_;
    plan.coverage = std::to_string(plan.expected_s);
    return plan;
  }
  CheckResult run(CheckContext&) const override { return {}; }

 private:
  CheckInfo info_;
  double whole_;
  double floor_;
};

struct Planned {
  CheckRegistry registry;
  CheckOptions options;
  Thresholds thresholds = preflight::test::builtin_thresholds(nullptr, "test");
  std::vector<PlannedCheck> checks() const { return plan_checks(registry, Profile::quick, {}); }
  WorkRequest base(int gpus = 1) const {
    WorkRequest r;
    r.profile = Profile::quick;
    r.shape.gpus = gpus;
    r.thresholds = &thresholds;
    r.options = &options;
    return r;
  }
};

double sum_deadlines(const RunPlan& plan) {
  double total = 0;
  for (const auto& a : plan.checks) total += a.deadline_s;
  return total;
}

}  // namespace

TEST_CASE("unit: planner: with time to spare every check does its whole work, deadlines widen") {
  Planned p;
  p.registry.add(std::make_unique<FlooredModelledCheck>("a", 4.0, 1.0));
  p.registry.add(std::make_unique<FlooredModelledCheck>("b", 2.0, 2.0));
  const RunPlan plan = plan_run(p.checks(), p.base(), 60.0);
  REQUIRE(plan.checks.size() == 2);
  CHECK_FALSE(plan.reduced);
  CHECK(plan.checks[0].work.expected_s == 4.0);
  CHECK(plan.checks[0].deadline_s > 1.5 * 4.0 + 0.5);
  // Every second but discovery's and the verdict margin goes to the checks, in proportion.
  const double discovery = 1.5 * discovery_work(1).expected_s + 0.5;
  CHECK(sum_deadlines(plan) == Approx(60.0 - 1.0 - discovery));
  CHECK(plan.checks[0].deadline_s / plan.checks[1].deadline_s == Approx(6.5 / 3.5));
  CHECK(plan.expected_s == Approx(discovery_work(1).expected_s + 6.0));
}

TEST_CASE("unit: planner: a tight --timeout shrinks every reducible check toward its floor") {
  Planned p;
  p.registry.add(std::make_unique<FlooredModelledCheck>("a", 10.0, 2.0));
  p.registry.add(std::make_unique<FlooredModelledCheck>("b", 2.0, 2.0));
  const RunPlan plan = plan_run(p.checks(), p.base(), 14.0);
  CHECK(plan.reduced);
  const auto& a = plan.checks[0];
  CHECK(a.work.reduced);
  REQUIRE(a.work_s);
  CHECK(a.work.expected_s <= *a.work_s + 1e-9);
  CHECK(a.work.expected_s >= 2.0);
  CHECK_FALSE(plan.checks[1].work.reduced);
  // Every check's deadline holds its work with the headroom, and all of them fit the timeout.
  for (const auto& c : plan.checks) CHECK(c.deadline_s >= 1.5 * c.work.expected_s + 0.5 - 1e-9);
  const double discovery = 1.5 * discovery_work(1).expected_s + 0.5;
  CHECK(sum_deadlines(plan) + discovery + 1.0 <= 14.0 + 1e-9);
}

TEST_CASE("unit: planner: a --timeout below the floor is refused, naming the floor") {
  Planned p;
  p.registry.add(std::make_unique<FlooredModelledCheck>("a", 10.0, 2.0));
  const RunPlan whole = plan_run(p.checks(), p.base(), std::nullopt);
  // discovery 0.4 s -> 1.1 s, a's floor 2 s -> 3.5 s, the margin 1 s: 5.6 s, rounded up.
  CHECK(whole.floor_s == 6.0);
  try {
    plan_run(p.checks(), p.base(), 5.0);
    FAIL("not refused");
  } catch (const InvalidInput& e) {
    CHECK_THAT(e.what(), Catch::Contains("--timeout 5.0 s is below the 6.0 s"));
    CHECK_THAT(e.what(), Catch::Contains("1 GPU, 0 NICs"));
  }
  CHECK_NOTHROW(plan_run(p.checks(), p.base(), 6.0));
}

TEST_CASE("unit: planner: without --timeout the default holds discovery's cap and headroom") {
  Planned p;
  p.registry.add(std::make_unique<FlooredModelledCheck>("a", 10.0, 2.0));
  const RunPlan plan = plan_run(p.checks(), p.base(), std::nullopt);
  CHECK_FALSE(plan.timeout_given);
  CHECK(plan.timeout_s == std::ceil(20.0 + 2.0 * 10.0 + 3.0 + 1.0));
  CHECK(plan.discovery_deadline_s == 20.0);
  CHECK_FALSE(plan.reduced);
}

TEST_CASE("unit: planner: GPU checks plan nothing on a node without GPUs") {
  Planned p;
  p.registry.add(std::make_unique<FlooredModelledCheck>("host", 0.05, 0.05));
  p.registry.add(std::make_unique<FlooredModelledCheck>("gpu", 30.0, 5.0, true));
  const RunPlan plan = plan_run(p.checks(), p.base(0), std::nullopt);
  CHECK(plan.checks[1].work.expected_s == 0.0);
  CHECK(whole_work_s(plan) == std::ceil(1.5 * 0.3 + 0.5 + 1.5 * 0.05 + 0.5 + 1.0));
  CHECK(whole_work_s(plan) <= 3.0);
}

TEST_CASE("unit: pair rotation: consecutive runs cover every ordered and unordered pair once") {
  for (int n = 2; n <= 9; ++n) {
    for (int per_step = 1; per_step < n; ++per_step) {
      const int steps = rotate_pairs(n, per_step, 0).steps;
      std::multiset<std::pair<int, int>> ordered;
      std::multiset<std::pair<int, int>> unordered;
      for (int run = 0; run < steps; ++run) {
        const PairRotation r = rotate_pairs(n, per_step, static_cast<std::uint64_t>(run));
        CHECK(r.step == run);
        for (const auto& pr : r.ordered_pairs()) ordered.insert(pr);
        for (const auto& pr : r.unordered_pairs()) unordered.insert(pr);
      }
      INFO("n " << n << ", shifts per step " << per_step);
      CHECK(ordered.size() == static_cast<std::size_t>(n * (n - 1)));
      CHECK(std::set<std::pair<int, int>>(ordered.begin(), ordered.end()).size() == ordered.size());
      CHECK(unordered.size() == static_cast<std::size_t>(n * (n - 1) / 2));
      CHECK(std::set<std::pair<int, int>>(unordered.begin(), unordered.end()).size() ==
            unordered.size());
      // Run `steps` covers step 0 again.
      CHECK(rotate_pairs(n, per_step, static_cast<std::uint64_t>(steps)).step == 0);
    }
  }
  const PairRotation one = rotate_pairs(1, 1, 5);
  CHECK(one.steps == 1);
  CHECK(one.ordered_pairs().empty());
  // Shifts k and n-k travel together: a step of two shifts on 8 GPUs tests pairs both ways.
  const PairRotation first = rotate_pairs(8, 2, 0);
  CHECK(first.steps == 4);
  CHECK(first.shifts == std::vector<int>{1, 7});
}

TEST_CASE("unit: plan: --node descriptions and their errors") {
  const DescribedNode node = parse_node_description("gpus=8,sku=h100-sxm5-80gb,nics=8");
  CHECK(node.shape.gpus == 8);
  CHECK(node.shape.nics == 8);
  REQUIRE(node.sku != nullptr);
  CHECK(node.sku->id == "h100-sxm5-80gb");
  CHECK(parse_node_description("gpus=1").sku == nullptr);
  CHECK_THROWS_WITH(parse_node_description("gpus=x"), Catch::Contains("gpus=x is not a count"));
  CHECK_THROWS_WITH(parse_node_description("gpus=2000"), Catch::Contains("0..1024"));
  CHECK_THROWS_WITH(parse_node_description("cpus=2"), Catch::Contains("unknown key 'cpus'"));
  CHECK_THROWS_WITH(parse_node_description("sku=z100"), Catch::Contains("unknown sku 'z100'"));
  CHECK_THROWS_WITH(parse_node_description("gpus"), Catch::Contains("not KEY=VALUE"));
}

TEST_CASE("unit: rotation counter: given, kept in the state folder, and refused when bad") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("preflight-rotation-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  CHECK(take_rotation(7, "").value == 7);
  CHECK(take_rotation(7, "").from == "--rotation");
  CHECK(take_rotation(std::nullopt, "").from == "none");
  // No file yet: run 0, and the next run is 1, then 2.
  CHECK(take_rotation(std::nullopt, dir.string()).value == 0);
  CHECK(take_rotation(std::nullopt, dir.string()).value == 1);
  const RotationCounter third = take_rotation(std::nullopt, dir.string());
  CHECK(third.value == 2);
  CHECK_THAT(third.from, Catch::Contains("--state-dir"));
  std::ofstream(dir / "rotation") << "twelve\n";
  CHECK_THROWS_WITH(take_rotation(std::nullopt, dir.string()),
                    Catch::Contains("expected one whole number"));
  std::filesystem::remove(dir / "rotation");
  REQUIRE(::mkfifo((dir / "rotation").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(take_rotation(std::nullopt, dir.string()),
                    Catch::Contains("not a regular file"));
  std::filesystem::remove_all(dir);
}
