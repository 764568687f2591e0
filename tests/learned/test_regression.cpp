// judge_regression (src/learned/regression.hpp): a persistent drop of a node's figure below its
// own history, or below the fleet baseline while the node has too few runs of its own. The
// thresholds quoted follow from the default options: T = max(2.5%, 2 x noise) x
// sqrt(1 + pi / 2n) against n own runs, max(2.5%, 2.75 x spread) against the fleet; regressed
// when a majority of the window is down by T and every run by 0.85 T.
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

#include "learned/regression.hpp"

using namespace preflight;

namespace {

using RegrOutcome = RegressionResult::Outcome;

std::vector<double> regr_flat(int runs, double value) {
  return std::vector<double>(static_cast<std::size_t>(runs), value);
}

// `runs` values alternating level - deviation and level + deviation: median `level`, and every
// deviation from it `deviation`, so the noise is 1.4826 x deviation / level.
std::vector<double> regr_alternating(int runs, double level, double deviation) {
  std::vector<double> values;
  for (int i = 0; i < runs; ++i)
    values.push_back(i % 2 == 0 ? level - deviation : level + deviation);
  return values;
}

RegressionResult regr_judge(const std::vector<double>& earlier, const std::vector<double>& window,
                            std::optional<FleetReference> fleet = std::nullopt,
                            const RegressionOptions& options = RegressionOptions{}) {
  return judge_regression(earlier, window, fleet, options);
}

}  // namespace

TEST_CASE("judge_regression: a steady node is not flagged", "[learned]") {
  const RegressionResult r = regr_judge(regr_alternating(10, 100, 0.5), {99.7, 100.2, 99.9});
  CHECK(r.outcome == RegrOutcome::steady);
  CHECK(r.reason.empty());
  CHECK(r.reference_by == "own history");
  CHECK(r.reference_runs == 10);
  CHECK(r.reference == Approx(100));
  CHECK(r.noise == Approx(1.4826 * 0.5 / 100));
  CHECK(r.drop == Approx(0.001));  // the median of 0.3%, -0.2% and 0.1%
  CHECK(r.current == 99.9);
}

TEST_CASE("judge_regression: one bad run is never a regression", "[learned]") {
  const FleetReference fleet{100, 0.016};
  for (const double bad : {90.0, 50.0, 10.0}) {
    for (std::size_t at = 0; at < 3; ++at) {
      std::vector<double> window = regr_flat(3, 100);
      window[at] = bad;
      CAPTURE(bad, at);
      CHECK(regr_judge(regr_flat(20, 100), window).outcome == RegrOutcome::steady);
      CHECK(regr_judge({}, window, fleet).outcome == RegrOutcome::steady);
      // The others a little low, but not down.
      std::vector<double> slightly = regr_flat(3, 99);
      slightly[at] = bad;
      CHECK(regr_judge(regr_flat(20, 100), slightly).outcome == RegrOutcome::steady);
    }
  }
}

TEST_CASE("judge_regression: a 5% drop held over the window is a regression", "[learned]") {
  // Noise 0.74%: T = max(2.5%, 1.48%) x sqrt(1 + pi / 40) = 2.60%.
  const std::vector<double> earlier = regr_alternating(20, 100, 0.5);
  const RegressionResult r = regr_judge(earlier, {95.0, 95.3, 94.8});
  CHECK(r.outcome == RegrOutcome::regressed);
  CHECK(r.reference_by == "own history");
  CHECK(r.reference_runs == 20);
  CHECK(r.drop == Approx(0.05));
  CHECK(r.current == 94.8);
  CHECK(r.threshold == Approx(0.025 * std::sqrt(1 + 3.14159265 / 40)));

  // A majority down by T and the other run by at least 0.85 T (2.21%): regressed.
  CHECK(regr_judge(earlier, {95.0, 97.6, 94.8}).outcome == RegrOutcome::regressed);
  // A run back near the reference: steady.
  CHECK(regr_judge(earlier, {95.0, 99.0, 94.8}).outcome == RegrOutcome::steady);
  // Down for two runs only, the window's first still up: not yet.
  CHECK(regr_judge(earlier, {100.0, 95.0, 95.0}).outcome == RegrOutcome::steady);

  // every_run 1 is "every run down by T".
  RegressionOptions every;
  every.every_run = 1;
  CHECK(regr_judge(earlier, {95.0, 97.6, 94.8}, std::nullopt, every).outcome ==
        RegrOutcome::steady);
  CHECK(regr_judge(earlier, {95.0, 95.3, 94.8}, std::nullopt, every).outcome ==
        RegrOutcome::regressed);
}

TEST_CASE("judge_regression: a young history has a wider threshold", "[learned]") {
  // Two runs: T = 2.5% x sqrt(1 + pi / 4) = 3.34%; twenty: 2.60%.
  CHECK(regr_judge(regr_flat(2, 100), {97, 97, 97}).outcome == RegrOutcome::steady);
  CHECK(regr_judge(regr_flat(20, 100), {97, 97, 97}).outcome == RegrOutcome::regressed);
  CHECK(regr_judge(regr_flat(2, 100), {96, 96, 96}).outcome == RegrOutcome::regressed);
}

TEST_CASE("judge_regression: the newest earlier runs make the reference", "[learned]") {
  std::vector<double> earlier = regr_flat(10, 120);
  for (const double v : regr_flat(20, 100)) earlier.push_back(v);
  const RegressionResult r = regr_judge(earlier, {100, 100, 100});
  CHECK(r.reference == Approx(100));
  CHECK(r.reference_runs == 20);
  CHECK(r.outcome == RegrOutcome::steady);

  // Values that are no measurement are skipped, not counted.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const RegressionResult skipped = regr_judge({100, nan, 0.0, -1.0, 100, 100}, {100, 100, 100});
  CHECK(skipped.reference_runs == 3);
}

TEST_CASE("judge_regression: too few runs of its own, the fleet baseline is the reference",
          "[learned]") {
  // T = max(2.5%, 2.75 x 1.6%) = 4.4% below the fleet median.
  const FleetReference fleet{750, 0.016};
  const RegressionResult r = regr_judge({745}, {700, 705, 702}, fleet);
  CHECK(r.outcome == RegrOutcome::regressed);
  CHECK(r.reference_by == "fleet baseline");
  CHECK(r.reference == 750);
  CHECK(r.reference_runs == 0);
  CHECK(r.noise == 0.016);
  CHECK(r.drop == Approx(1 - 702.0 / 750));
  CHECK(r.threshold == Approx(2.75 * 0.016));
  // A node that merely sits low in the fleet is not flagged.
  CHECK(regr_judge({}, {730, 735, 728}, fleet).outcome == RegrOutcome::steady);
  // With two runs of its own, its own history is the reference.
  CHECK(regr_judge({745, 746}, {700, 705, 702}, fleet).reference_by == "own history");
}

TEST_CASE("judge_regression: with no reference the figure is not judged, with the reason",
          "[learned]") {
  const RegressionResult none = regr_judge({100}, {90, 90, 90});
  CHECK(none.outcome == RegrOutcome::not_judged);
  CHECK(none.reason == "1 earlier healthy run, 2 needed, and no fleet baseline");
  CHECK(regr_judge({}, {90, 90, 90}).reason ==
        "0 earlier healthy runs, 2 needed, and no fleet baseline");

  const RegressionResult short_window = regr_judge(regr_flat(20, 100), {90, 90});
  CHECK(short_window.outcome == RegrOutcome::not_judged);
  CHECK(short_window.reason == "2 runs, 3 needed");

  const double nan = std::numeric_limits<double>::quiet_NaN();
  const RegressionResult failed_run = regr_judge(regr_flat(20, 100), {90, nan, 90});
  CHECK(failed_run.outcome == RegrOutcome::not_judged);
  CHECK(failed_run.reason == "a run of the window has no value");
}

TEST_CASE("judge_regression: the noise floor is respected", "[learned]") {
  const RegressionResult quiet = regr_judge(regr_flat(20, 100), {100, 100, 100});
  CHECK(quiet.noise == 0.005);  // runs that agree exactly: the floor, not 0
  CHECK(regr_judge({}, {100, 100, 100}, FleetReference{100, 0.001}).noise == 0.005);

  // A floor of 2%: T = max(2.5%, 4%) x 1.039 = 4.2%, so a 4% drop is not enough.
  RegressionOptions floor;
  floor.min_noise = 0.02;
  CHECK(regr_judge(regr_flat(20, 100), {96, 96, 96}).outcome == RegrOutcome::regressed);
  const RegressionResult floored =
      regr_judge(regr_flat(20, 100), {96, 96, 96}, std::nullopt, floor);
  CHECK(floored.noise == 0.02);
  CHECK(floored.outcome == RegrOutcome::steady);
}

TEST_CASE("judge_regression: a noisy node's 5% drop is within its noise", "[learned]") {
  // Runs 2% either side of 100: noise 3.0%, T = max(2.5%, 6%) x 1.039 = 6.2%.
  const std::vector<double> earlier = regr_alternating(20, 100, 2.0235);
  const RegressionResult r = regr_judge(earlier, {95.0, 94.8, 95.2});
  CHECK(r.noise == Approx(0.03).epsilon(0.01));
  CHECK(r.outcome == RegrOutcome::steady);
  // It is not blind: 10% down is a regression.
  CHECK(regr_judge(earlier, {90, 90, 90}).outcome == RegrOutcome::regressed);
}

TEST_CASE("judge_regression: options out of range are refused", "[learned]") {
  const auto with = [](auto change) {
    RegressionOptions o;
    change(o);
    return o;
  };
  const std::vector<double> earlier = regr_flat(5, 100);
  const std::vector<double> window = regr_flat(3, 100);
  const auto judge = [&](const RegressionOptions& o) {
    return judge_regression(earlier, window, std::nullopt, o);
  };
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.window = 1; })), std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.min_reference_runs = 0; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.max_reference_runs = 1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.drop = 0; })), std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.drop = 0.95; })), std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.noise_multiple = -1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.fleet_noise_multiple = -1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.min_noise = -0.1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.every_run = 0; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(judge(with([](RegressionOptions& o) { o.every_run = 1.5; })),
                  std::invalid_argument);
  CHECK_NOTHROW(judge(with([](RegressionOptions& o) { o.window = 3; })));
}

TEST_CASE("judge_below_baseline: a majority of the window below the limit, one bad run not",
          "[learned]") {
  const double limit = 700;
  // One bad run after runs above the limit, or with no run before it: not yet the node.
  BelowBaseline once = judge_below_baseline({740, 735, 738}, 650, limit, 3);
  CHECK_FALSE(once.persistent);
  CHECK(once.below == 1);
  CHECK(once.runs == 3);
  once = judge_below_baseline({}, 650, limit, 3);
  CHECK_FALSE(once.persistent);
  CHECK(once.runs == 1);
  // Below it twice in the last three runs (the current one among them): the node.
  BelowBaseline twice = judge_below_baseline({740, 690, 720}, 680, limit, 3);
  CHECK(twice.persistent);
  CHECK(twice.below == 2);
  twice = judge_below_baseline({690}, 680, limit, 3);
  CHECK(twice.persistent);
  CHECK(twice.runs == 2);
  // Only the last window - 1 runs count: a slow spell long ago is not this one.
  CHECK_FALSE(judge_below_baseline({650, 650, 650, 740, 740}, 680, limit, 3).persistent);
  // The current run above the limit is never persistent, whatever came before.
  CHECK_FALSE(judge_below_baseline({650, 650}, 710, limit, 3).persistent);
  // A longer window asks for a larger majority: 3 of 4.
  CHECK_FALSE(judge_below_baseline({740, 690, 720}, 680, limit, 4).persistent);
  CHECK(judge_below_baseline({740, 690, 690}, 680, limit, 4).persistent);
  CHECK_THROWS_AS(judge_below_baseline({}, 680, limit, 1), std::invalid_argument);
}
