#pragma once
// A node's figure against its own history (docs/baseline.md, "Regression"): a persistent drop,
// not one bad run. Pure: the history reader (history.hpp) and the simulation
// (tests/learned/test_baseline_simulation.cpp) call it with numbers.
#include <optional>
#include <string>
#include <vector>

namespace preflight {

// The rule (regression.cpp has it in full): each window run's drop below the reference,
// d = 1 - v / reference, against a threshold T = max(drop / 2, multiple x noise), widened by
// sqrt(1 + pi / (2n)) for a reference of n own runs; regressed when a majority of the window's
// runs are down by T and every one by every_run x T. One bad run is never a regression.
// The defaults were tuned on the fleet simulation (tests/learned/test_baseline_simulation.cpp,
// docs/baseline.md "The simulation"): GEMM-like figures with 1% node offsets and 1% run noise,
// a 5% drop caught within 3 runs, and few healthy nodes flagged.
struct RegressionOptions {
  double drop = 0.05;  // the size of drop the rule is built to catch (SuperBench's 5%)
  int window = 3;      // the last runs, the current one included, judged together (>= 2)
  // Earlier healthy runs needed for the node's own reference: 2, as the threshold widens for
  // a young history; fewer and the fleet baseline stands in.
  int min_reference_runs = 2;
  int max_reference_runs = 20;  // the newest earlier healthy runs used
  double noise_multiple = 2.0;  // T is at least this many of the node's own noises
  // T is at least this many of the fleet's spreads against the fleet baseline: the spread
  // counts how far healthy nodes sit from the median, and that offset is the same in every
  // run of the window, so taking several runs does not thin it out as it thins run noise.
  double fleet_noise_multiple = 2.75;
  double min_noise = 0.005;  // floor of a node's run-to-run noise (relative)
  // Every window run is down by at least this fraction of T (and a majority by all of it);
  // 1: every run down by T.
  double every_run = 0.85;
};

// Where a node has too few runs of its own: the fleet baseline's median and the relative
// spread of one run about it (node and run spreads together).
struct FleetReference {
  double median = 0;
  double spread = 0;
};

struct RegressionResult {
  enum class Outcome { not_judged, steady, regressed };
  Outcome outcome = Outcome::not_judged;
  std::string reason;  // not_judged: why ("1 earlier healthy run, 2 needed, and no fleet ...")
  std::string reference_by;  // "own history" or "fleet baseline"
  double reference = 0;      // the value the window is compared with
  double noise = 0;          // relative run-to-run noise used (the fleet's: its spread)
  double drop = 0;           // the window's median relative drop below the reference
  // The relative drop T a run must reach to count as down (a run at reference x (1 - T) or
  // below); regressed: a majority of the window at or below it, every run at or below
  // reference x (1 - every_run x T). 0 when not judged.
  double threshold = 0;
  double current = 0;      // the newest value
  int reference_runs = 0;  // earlier runs the reference was taken from (0: the fleet's)
};

// `earlier`: the node's healthy runs before the window, oldest first; `window`: the last
// RegressionOptions::window runs, the current run last (another count: not judged). Values
// that are not finite or not above 0 are skipped in `earlier`; one in `window`: not judged.
// Throws std::invalid_argument for options out of range (window < 2, min_reference_runs < 1
// or above max_reference_runs, drop outside (0, 0.9], a negative multiple or min_noise,
// every_run outside (0, 1]).
RegressionResult judge_regression(const std::vector<double>& earlier,
                                  const std::vector<double>& window,
                                  const std::optional<FleetReference>& fleet,
                                  const RegressionOptions& options);

// A figure below its fleet limit (FIGURE_BELOW_BASELINE) when the node's history is known: is
// it the node, or one bad run? `before`: the figure's values in the node's runs before the
// current one, oldest first (any health: a run failed for this very figure counts); the last
// `window` - 1 of them and the current value are judged. The node stays below when the current
// value is below the limit and so is a majority of the window (2 of 3 with the default), runs
// not recorded counting as above. A first run below the limit, with the runs before it above or
// none recorded, is one bad run. `window` < 2: std::invalid_argument.
struct BelowBaseline {
  int below = 0;  // runs below the limit among those judged, the current one included
  int runs = 0;   // runs judged: the current one and up to window - 1 before it
  bool persistent = false;
};
BelowBaseline judge_below_baseline(const std::vector<double>& before, double current, double limit,
                                   int window);

}  // namespace preflight
