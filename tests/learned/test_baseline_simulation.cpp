// The fleet simulation of docs/baseline.md: limits learned from the fleet (learn_figure) and a
// node's own history (judge_regression, judge_below_baseline), alone and together, on a generated
// fleet whose faults are known. Fixed seeds, so the figures are the same on every run and every
// machine with libstdc++ (std::normal_distribution is the library's, not the standard's); run with
// -s to see them.
//
// The fleet: a GEMM bf16 figure of about 750 TFLOP/s, 8 GPUs a node, each GPU position its own
// figure. Each node is off by N(0, 1%), shared by its GPUs, each GPU by a fixed N(0, 0.5%) more,
// and each run of each GPU varies by N(0, 1%). 1% of the nodes degrade by 5% on one GPU from a
// random run on (uniform over the 30 runs); 2% of the healthy nodes have one bad run (every GPU
// -10% in it). The baseline is learned per GPU position from a learning fleet of its own (1,000
// nodes x 5 runs, the same distribution, its own seed).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "learned/learn_stats.hpp"
#include "learned/regression.hpp"

using namespace preflight;

namespace {

constexpr int kSimGpus = 8;
constexpr double kSimMedian = 750.0;  // TFLOP/s, a GEMM bf16 figure of an H100-class GPU
constexpr int kSimNodes = 1000;
constexpr int kSimRuns = 30;
constexpr int kSimLearningRuns = 5;
// Independent fleets, each with its own learning fleet: seeds kSimFleetSeed + k and
// kSimLearningSeed + k. One fleet holds 10 degraded nodes, too few to tell 95% from 90%; the
// goals are asserted on all of them together.
constexpr int kSimFleets = 10;
constexpr std::uint64_t kSimFleetSeed = 2000;
constexpr std::uint64_t kSimLearningSeed = 1000;
constexpr int kSimWithin = 3;  // runs, the change run included

struct SimFleet {
  int nodes = 0;
  int runs = 0;
  std::vector<double> values;     // [node][run][gpu]
  std::vector<int> degraded_gpu;  // -1: a healthy node
  std::vector<int> change_run;    // the first degraded run
  std::vector<int> bad_run;       // the one bad run of a healthy node; -1: none
  double value(int node, int run, int gpu) const {
    return values[(static_cast<std::size_t>(node) * static_cast<std::size_t>(runs) +
                   static_cast<std::size_t>(run)) *
                      kSimGpus +
                  static_cast<std::size_t>(gpu)];
  }
};

SimFleet sim_make_fleet(std::uint64_t seed, int nodes, int runs) {
  SimFleet f;
  f.nodes = nodes;
  f.runs = runs;
  const auto n = static_cast<std::size_t>(nodes);
  f.values.resize(n * static_cast<std::size_t>(runs) * kSimGpus);
  f.degraded_gpu.assign(n, -1);
  f.change_run.assign(n, -1);
  f.bad_run.assign(n, -1);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> any_gpu(0, kSimGpus - 1);
  std::uniform_int_distribution<int> any_run(0, runs - 1);

  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const int degraded = nodes / 100;
  const int with_bad_run = static_cast<int>(std::lround(0.02 * (nodes - degraded)));
  for (int i = 0; i < degraded; ++i) {
    const auto node = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
    f.degraded_gpu[node] = any_gpu(rng);
    f.change_run[node] = any_run(rng);
  }
  for (int i = degraded; i < degraded + with_bad_run; ++i) {
    f.bad_run[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = any_run(rng);
  }

  std::size_t at = 0;
  for (std::size_t node = 0; node < n; ++node) {
    const double node_offset = 0.01 * normal(rng);
    std::array<double, kSimGpus> gpu_offset{};
    for (double& g : gpu_offset) g = 0.005 * normal(rng);
    for (int run = 0; run < runs; ++run) {
      for (int gpu = 0; gpu < kSimGpus; ++gpu) {
        double v = kSimMedian * (1 + node_offset) *
                   (1 + gpu_offset[static_cast<std::size_t>(gpu)]) * (1 + 0.01 * normal(rng));
        if (f.degraded_gpu[node] == gpu && run >= f.change_run[node]) v *= 0.95;
        if (f.bad_run[node] == run) v *= 0.90;
        f.values[at++] = v;
      }
    }
  }
  return f;
}

struct SimBaseline {
  LearnedFigure figure;
  FleetReference reference;  // the fleet's median and its spread of one run about it
};

// learn_figure per GPU position over the learning fleet.
std::array<SimBaseline, kSimGpus> sim_learn(const SimFleet& learning) {
  std::array<SimBaseline, kSimGpus> baselines{};
  std::vector<NodeRuns> nodes(static_cast<std::size_t>(learning.nodes));
  for (int gpu = 0; gpu < kSimGpus; ++gpu) {
    for (int node = 0; node < learning.nodes; ++node) {
      NodeRuns& runs = nodes[static_cast<std::size_t>(node)];
      runs.node = "node" + std::to_string(node);
      runs.values.clear();
      for (int run = 0; run < learning.runs; ++run) {
        runs.values.push_back(learning.value(node, run, gpu));
      }
    }
    SimBaseline& b = baselines[static_cast<std::size_t>(gpu)];
    b.figure = learn_figure(nodes, LearnOptions{});
    b.reference =
        FleetReference{b.figure.median, std::hypot(b.figure.node_spread, b.figure.run_spread)};
  }
  return baselines;
}

enum class SimMode { fleet_limit, own_history, own_and_fleet, together };

// The runs at which `node` is flagged: (a) a GPU's run below its position's limit, as `run`
// with a baseline and no history fails it; (b), (c) judge_regression of each GPU at each run
// with a full window, (c) with the fleet baseline as the reference of a young history; (d) what
// `run` does with a baseline and a history: (c), and a GPU below its limit in a majority of
// the window (judge_below_baseline, FIGURE_BELOW_BASELINE), one bad run not counting. A node's
// earlier runs count as healthy unless they were in a window judged regressed (an operator would
// not take a drop as the node's new normal), so a degraded GPU keeps being compared with its runs
// before the drop.
void sim_flag_node(const SimFleet& f, int node, SimMode mode,
                   const std::array<SimBaseline, kSimGpus>& baselines,
                   const RegressionOptions& options, std::vector<char>& flagged,
                   std::vector<double>& earlier, std::vector<double>& window) {
  flagged.assign(static_cast<std::size_t>(f.runs), 0);
  for (int gpu = 0; gpu < kSimGpus; ++gpu) {
    const SimBaseline& b = baselines[static_cast<std::size_t>(gpu)];
    if (mode == SimMode::fleet_limit) {
      for (int run = 0; run < f.runs; ++run) {
        if (f.value(node, run, gpu) < b.figure.limit) flagged[static_cast<std::size_t>(run)] = 1;
      }
      continue;
    }
    if (mode == SimMode::together) {
      for (int run = 0; run < f.runs; ++run) {
        const double v = f.value(node, run, gpu);
        if (!(v < b.figure.limit)) continue;
        earlier.clear();
        for (int before = std::max(0, run - options.window + 1); before < run; ++before) {
          earlier.push_back(f.value(node, before, gpu));
        }
        if (judge_below_baseline(earlier, v, b.figure.limit, options.window).persistent) {
          flagged[static_cast<std::size_t>(run)] = 1;
        }
      }
    }
    std::optional<FleetReference> fleet;
    if (mode != SimMode::own_history) fleet = b.reference;
    std::vector<char> in_regressed_window(static_cast<std::size_t>(f.runs), 0);
    for (int now = options.window - 1; now < f.runs; ++now) {
      const int first = now - options.window + 1;
      earlier.clear();
      for (int run = 0; run < first; ++run) {
        if (!in_regressed_window[static_cast<std::size_t>(run)]) {
          earlier.push_back(f.value(node, run, gpu));
        }
      }
      window.clear();
      for (int run = first; run <= now; ++run) window.push_back(f.value(node, run, gpu));
      if (judge_regression(earlier, window, fleet, options).outcome ==
          RegressionResult::Outcome::regressed) {
        flagged[static_cast<std::size_t>(now)] = 1;
        for (int run = first; run <= now; ++run) {
          in_regressed_window[static_cast<std::size_t>(run)] = 1;
        }
      }
    }
  }
}

struct SimTally {
  int degraded = 0;
  int degraded_catchable = 0;  // the change leaves 3 runs to catch it in
  int caught_within = 0;       // flagged at the change run or the two after it
  int caught_ever = 0;         // flagged at the change run or later
  int healthy = 0;
  int healthy_flagged = 0;  // flagged at any run
  int bad_run = 0;          // healthy nodes with one bad run
  int bad_run_flagged = 0;

  void add(const SimTally& o) {
    degraded += o.degraded;
    degraded_catchable += o.degraded_catchable;
    caught_within += o.caught_within;
    caught_ever += o.caught_ever;
    healthy += o.healthy;
    healthy_flagged += o.healthy_flagged;
    bad_run += o.bad_run;
    bad_run_flagged += o.bad_run_flagged;
  }
  double within() const { return static_cast<double>(caught_within) / degraded_catchable; }
  double ever() const { return static_cast<double>(caught_ever) / degraded; }
  double healthy_rate() const { return static_cast<double>(healthy_flagged) / healthy; }
};

SimTally sim_tally(const SimFleet& f, SimMode mode,
                   const std::array<SimBaseline, kSimGpus>& baselines,
                   const RegressionOptions& options) {
  SimTally t;
  std::vector<char> flagged;
  std::vector<double> earlier;
  std::vector<double> window;
  earlier.reserve(static_cast<std::size_t>(f.runs));
  window.reserve(static_cast<std::size_t>(options.window));
  for (int node = 0; node < f.nodes; ++node) {
    sim_flag_node(f, node, mode, baselines, options, flagged, earlier, window);
    const auto n = static_cast<std::size_t>(node);
    if (f.degraded_gpu[n] >= 0) {
      const int change = f.change_run[n];
      bool within = false;
      bool ever = false;
      for (int run = change; run < f.runs; ++run) {
        if (!flagged[static_cast<std::size_t>(run)]) continue;
        ever = true;
        if (run < change + kSimWithin) within = true;
      }
      ++t.degraded;
      t.caught_ever += ever ? 1 : 0;
      if (change + kSimWithin <= f.runs) {
        ++t.degraded_catchable;
        t.caught_within += within ? 1 : 0;
      }
    } else {
      const bool any = std::any_of(flagged.begin(), flagged.end(), [](char c) { return c != 0; });
      ++t.healthy;
      t.healthy_flagged += any ? 1 : 0;
      if (f.bad_run[n] >= 0) {
        ++t.bad_run;
        t.bad_run_flagged += any ? 1 : 0;
      }
    }
  }
  return t;
}

// One line of the table, under 80 columns (Catch wraps longer ones).
std::string sim_row(const char* name, const SimTally& t) {
  char line[160];
  std::snprintf(line, sizeof line,
                "  %-15s %3d/%-3d %5.1f%% %4d/%-4d %5.1f%% %4d/%-5d %4.2f%% %3d/%-3d\n", name,
                t.caught_within, t.degraded_catchable, 100 * t.within(), t.caught_ever, t.degraded,
                100 * t.ever(), t.healthy_flagged, t.healthy, 100 * t.healthy_rate(),
                t.bad_run_flagged, t.bad_run);
  return line;
}

}  // namespace

TEST_CASE("baseline simulation: fleet limits and own history, alone and together", "[learned]") {
  const auto started = std::chrono::steady_clock::now();
  const RegressionOptions options;
  const std::array<const char*, 4> names{"(a) fleet limit", "(b) own history", "(c) own + fleet",
                                         "(d) together"};
  const std::array<SimMode, 4> modes{SimMode::fleet_limit, SimMode::own_history,
                                     SimMode::own_and_fleet, SimMode::together};
  std::array<SimTally, 4> pooled{};
  bool all_learned = true;
  std::string table =
      "Fleets of 1,000 nodes x 30 runs x 8 GPUs, GEMM bf16 ~750 TFLOP/s. Degraded\n"
      "nodes caught within 3 runs of the change (of those with 3 runs left) and\n"
      "ever; healthy nodes ever flagged; those of them with one bad run.\n"
      "                  in 3 runs       caught ever      healthy flagged  bad run\n";
  for (int k = 0; k < kSimFleets; ++k) {
    const auto fleet_seed = kSimFleetSeed + static_cast<std::uint64_t>(k);
    const auto learning_seed = kSimLearningSeed + static_cast<std::uint64_t>(k);
    const auto baselines = sim_learn(sim_make_fleet(learning_seed, kSimNodes, kSimLearningRuns));
    for (const SimBaseline& b : baselines) all_learned = all_learned && b.figure.learned;
    const SimFleet fleet = sim_make_fleet(fleet_seed, kSimNodes, kSimRuns);
    char heading[120];
    std::snprintf(heading, sizeof heading,
                  "seed %llu (learning %llu): GPU 0 median %.1f, limit %.1f, spread %.2f%%\n",
                  static_cast<unsigned long long>(fleet_seed),
                  static_cast<unsigned long long>(learning_seed), baselines[0].figure.median,
                  baselines[0].figure.limit, 100 * baselines[0].reference.spread);
    table += heading;
    for (std::size_t m = 0; m < modes.size(); ++m) {
      const SimTally t = sim_tally(fleet, modes[m], baselines, options);
      table += sim_row(names[m], t);
      pooled[m].add(t);
    }
  }
  table += "all " + std::to_string(kSimFleets) + " fleets\n";
  for (std::size_t m = 0; m < modes.size(); ++m) table += sim_row(names[m], pooled[m]);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  char timing[80];
  std::snprintf(timing, sizeof timing, "wall time %.2f s\n", seconds);
  table += timing;

  REQUIRE(all_learned);
  const SimTally& together = pooled[3];
  {
    // The goals of the issue, for the two together as `run` applies them; the table comes with
    // the result (-s).
    INFO(table);
    CHECK((together.within() >= 0.95 && together.healthy_rate() <= 0.005));
  }
  CHECK(together.within() >= 0.95);
  CHECK(together.healthy_rate() <= 0.005);
  // Together beats each alone where it matters: more degraded nodes caught in time than the
  // fleet limit, which also flags the nodes with one bad run, and than history alone, which
  // cannot see a node that degraded before it had a history.
  CHECK(together.within() > pooled[0].within());
  CHECK(together.within() > pooled[1].within());
  CHECK(together.healthy_rate() < pooled[0].healthy_rate());
  CHECK(together.bad_run_flagged * 10 <= together.bad_run);
  // The baseline's fail adds few false alarms to (c) once one bad run no longer counts.
  CHECK(together.healthy_flagged - pooled[2].healthy_flagged <= pooled[2].healthy_flagged);
}

TEST_CASE(
    "baseline simulation: a 6% slow node invisible to the datasheet limits is below the "
    "learned limit",
    "[learned]") {
  // 50 healthy nodes: node offsets N(0, 0.7%), runs N(0, 0.3%), 10 runs each.
  std::mt19937_64 rng(4242);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<NodeRuns> nodes;
  for (int node = 0; node < 50; ++node) {
    NodeRuns runs{"node" + std::to_string(node), {}};
    const double level = kSimMedian * (1 + 0.007 * normal(rng));
    for (int run = 0; run < 10; ++run) runs.values.push_back(level * (1 + 0.003 * normal(rng)));
    nodes.push_back(std::move(runs));
  }
  const LearnedFigure figure = learn_figure(nodes, LearnOptions{});
  REQUIRE(figure.learned);
  CHECK(figure.removed.empty());

  int healthy_runs = 0;
  int healthy_below = 0;
  for (const NodeRuns& n : nodes) {
    for (const double v : n.values) {
      ++healthy_runs;
      healthy_below += v < figure.limit ? 1 : 0;
    }
  }
  // The slow node: 6% down, runs N(0, 0.3%). The datasheet limits pass it: it is far above
  // gemm.warn_fraction_of_peak (0.6 x 989 TFLOP/s for bf16) and less than the straggler
  // warning (8%) below its siblings.
  int slow_below = 0;
  constexpr int kSlowRuns = 20;
  for (int run = 0; run < kSlowRuns; ++run) {
    const double v = kSimMedian * 0.94 * (1 + 0.003 * normal(rng));
    CHECK(v > 0.6 * 989);
    CHECK(v > figure.median * 0.92);
    slow_below += v < figure.limit ? 1 : 0;
  }
  INFO("limit " << figure.limit << ", median " << figure.median << ", node spread "
                << figure.node_spread << ", run spread " << figure.run_spread << "; slow node "
                << slow_below << "/" << kSlowRuns << " runs below, healthy " << healthy_below << "/"
                << healthy_runs);
  CHECK(slow_below * 10 >= kSlowRuns * 9);
  CHECK(healthy_below * 100 < healthy_runs);
}
