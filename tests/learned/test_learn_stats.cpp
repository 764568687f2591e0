// learn_figure (src/learned/learn_stats.hpp): a site limit from many nodes' runs of one figure.
// The fleets here are written out by hand, so each expected figure follows from the formula
// in a line or two; the simulation of a whole fleet is test_baseline_simulation.cpp.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "learned/learn_stats.hpp"

using namespace preflight;

namespace {

constexpr double kStatsMadToSigma = 1.4826;

// Nodes "n0", "n1", ... each with the runs given.
std::vector<NodeRuns> stats_fleet(const std::vector<std::vector<double>>& runs) {
  std::vector<NodeRuns> nodes;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    nodes.push_back(NodeRuns{"n" + std::to_string(i), runs[i]});
  }
  return nodes;
}

// 11 nodes with medians 100 + 0.5 j (j = -5..5), two equal runs each: median 100, the
// deviations 0, 0.5, 0.5, 1, 1, ..., 2.5, 2.5 have the median 1.5, and the runs spread 0.
std::vector<NodeRuns> stats_even_fleet() {
  std::vector<std::vector<double>> runs;
  for (int j = -5; j <= 5; ++j) {
    const double m = 100.0 + 0.5 * j;
    runs.push_back({m, m});
  }
  return stats_fleet(runs);
}

}  // namespace

TEST_CASE("learn_figure: the limit is the median less noise_multiple spreads", "[learned]") {
  const LearnedFigure f = learn_figure(stats_even_fleet(), LearnOptions{});
  REQUIRE(f.learned);
  CHECK(f.refusal.empty());
  CHECK(f.median == Approx(100.0));
  const double node_spread = kStatsMadToSigma * 1.5 / 100.0;
  CHECK(f.node_spread == Approx(node_spread));
  CHECK(f.run_spread == 0.0);
  // 4 x 2.22% = 8.9% is more than the 5% drop: the spread sets the limit.
  CHECK(f.limit == Approx(100.0 * (1.0 - 4.0 * node_spread)));
  CHECK(f.nodes == 11);
  CHECK(f.runs == 22);
  CHECK(f.removed.empty());
}

TEST_CASE("learn_figure: the limit is never closer to the median than the drop", "[learned]") {
  std::vector<std::vector<double>> runs;
  for (int j = -5; j <= 5; ++j) runs.push_back({1000.0 + 0.1 * j, 1000.0 - 0.1 * j});
  const LearnedFigure f = learn_figure(stats_fleet(runs), LearnOptions{});
  REQUIRE(f.learned);
  CHECK(4.0 * std::hypot(f.node_spread, f.run_spread) < 0.05);
  CHECK(f.limit == Approx(1000.0 * 0.95));

  LearnOptions no_floor;
  no_floor.drop = 0;
  const LearnedFigure tight = learn_figure(stats_fleet(runs), no_floor);
  CHECK(tight.limit ==
        Approx(1000.0 * (1.0 - 4.0 * std::hypot(tight.node_spread, tight.run_spread))));
  CHECK(tight.limit > f.limit);
}

TEST_CASE("learn_figure: the run spread comes from the runs of each node", "[learned]") {
  // Every node alternates 100 and 102 about its own level: each difference of successive runs
  // is 2 in 101, and one run spreads 1 / sqrt(2) of such a difference.
  std::vector<std::vector<double>> runs;
  for (int j = 0; j < 12; ++j) {
    const double level = 1.0 + 0.001 * j;
    runs.push_back({100 * level, 102 * level, 100 * level, 102 * level, 100 * level});
  }
  // A node with one run says nothing of the noise, and counts for the median only.
  runs.push_back({101.0});
  const LearnedFigure f = learn_figure(stats_fleet(runs), LearnOptions{});
  REQUIRE(f.learned);
  CHECK(f.run_spread == Approx(kStatsMadToSigma / std::sqrt(2.0) * 2.0 / 100.0));
  CHECK(f.runs == 12 * 5 + 1);
  CHECK(f.limit ==
        Approx(f.median * (1.0 - std::max(0.05, 4.0 * std::hypot(f.node_spread, f.run_spread)))));
}

TEST_CASE("learn_figure: faulty slow nodes are removed and do not drag the median down",
          "[learned]") {
  // 90 healthy nodes about 100 (within +-0.9%) and 10 faulty ones at 80..84, one in every ten.
  std::vector<std::vector<double>> runs;
  std::vector<std::string> faulty;
  for (int i = 0; i < 100; ++i) {
    if (i % 10 == 7) {
      const double slow = 80.0 + 0.4 * (i / 10);
      runs.push_back({slow, slow + 0.2, slow - 0.1});
      faulty.push_back("n" + std::to_string(i));
    } else {
      const double level = 100.0 + 0.3 * ((i % 7) - 3);
      runs.push_back({level, level * 1.004, level * 0.997});
    }
  }
  const LearnedFigure f = learn_figure(stats_fleet(runs), LearnOptions{});
  REQUIRE(f.learned);
  CHECK(f.removed == faulty);  // every faulty node, in the order given
  CHECK(f.nodes == 90);
  CHECK(f.runs == 270);
  CHECK(f.median == Approx(100.0).margin(0.3));
  CHECK(f.node_spread < 0.01);
  CHECK(f.limit > 90.0);  // the faulty nodes fail it
}

TEST_CASE("learn_figure: too few nodes are refused", "[learned]") {
  std::vector<std::vector<double>> runs;
  for (int i = 0; i < 8; ++i) runs.push_back({100.0 + i * 0.1, 100.0});
  const LearnedFigure f = learn_figure(stats_fleet(runs), LearnOptions{});
  CHECK_FALSE(f.learned);
  CHECK(f.refusal == "8 nodes, 10 needed");
  CHECK(f.limit == 0.0);

  // Enough nodes given, but too few once the outliers are gone.
  for (int i = 0; i < 3; ++i) runs.push_back({50.0, 50.0});
  const LearnedFigure after_removal = learn_figure(stats_fleet(runs), LearnOptions{});
  CHECK_FALSE(after_removal.learned);
  CHECK(after_removal.refusal == "8 nodes, 10 needed");
  CHECK(after_removal.removed == std::vector<std::string>{"n8", "n9", "n10"});

  LearnOptions fewer;
  fewer.min_nodes = 8;
  CHECK(learn_figure(stats_fleet(runs), fewer).learned);
}

TEST_CASE("learn_figure: values that are not measurements are left out", "[learned]") {
  std::vector<NodeRuns> nodes = stats_even_fleet();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  nodes[0].values.push_back(nan);
  nodes[1].values.push_back(0.0);
  nodes[2].values.push_back(-5.0);
  nodes[3].values.push_back(inf);
  nodes.push_back(NodeRuns{"never-measured", {nan, 0.0}});
  const LearnedFigure f = learn_figure(nodes, LearnOptions{});
  const LearnedFigure clean = learn_figure(stats_even_fleet(), LearnOptions{});
  REQUIRE(f.learned);
  CHECK(f.nodes == 11);  // the node without a value is ignored, not removed
  CHECK(f.runs == 22);
  CHECK(f.removed.empty());
  CHECK(f.median == clean.median);
  CHECK(f.limit == clean.limit);
}

TEST_CASE("learn_figure: options out of range are refused", "[learned]") {
  const std::vector<NodeRuns> nodes = stats_even_fleet();
  const auto with = [](auto change) {
    LearnOptions o;
    change(o);
    return o;
  };
  CHECK_THROWS_AS(learn_figure(nodes, with([](LearnOptions& o) { o.min_nodes = 2; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(learn_figure(nodes, with([](LearnOptions& o) { o.drop = -0.01; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(learn_figure(nodes, with([](LearnOptions& o) { o.drop = 0.91; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(learn_figure(nodes, with([](LearnOptions& o) {
                                 o.drop = std::numeric_limits<double>::quiet_NaN();
                               })),
                  std::invalid_argument);
  CHECK_THROWS_AS(learn_figure(nodes, with([](LearnOptions& o) { o.noise_multiple = 0; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(learn_figure(nodes, with([](LearnOptions& o) { o.outlier_multiple = -1; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(learn_figure(nodes, with([](LearnOptions& o) { o.max_iterations = 0; })),
                  std::invalid_argument);
  CHECK_NOTHROW(learn_figure(nodes, with([](LearnOptions& o) {
                               o.min_nodes = 3;
                               o.drop = 0.9;
                             })));
  CHECK_NOTHROW(learn_figure(nodes, with([](LearnOptions& o) { o.drop = 0; })));
}
