#pragma once
// Repeated runs for burn-in (`preflight run --repeat N`, `--duration D`): when to start another
// pass, how the passes become one verdict, and the time estimates the progress display shows.
// Host-only and pure, so every rule is unit-tested without running a pass (docs/burnin.md).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/verdict.hpp"

namespace preflight {

inline constexpr int kMaxRepeat = 1000000;
inline constexpr double kMaxDurationS = 30.0 * 24 * 3600;

struct BurninRequest {
  std::optional<int> repeat;         // --repeat N: at most N passes
  std::optional<double> duration_s;  // --duration: start passes until this much time has passed
  bool stop_on_fail = false;         // --stop-on-fail: end after the first unhealthy pass
  bool repeated() const { return repeat.has_value() || duration_s.has_value(); }
};

// "90", "90s", "45m", "2h", "1d" (also "1.5h") to seconds, in (0, 30 days]. Throws InvalidInput
// naming the flag.
double parse_duration(std::string_view text, std::string_view flag);

// How the pass that just ended left the run.
struct PassEnd {
  int passes_done = 0;
  double elapsed_s = 0;  // since the first pass started
  bool unhealthy = false;
  bool signalled = false;  // SIGINT/SIGTERM stopped it
  bool stuck = false;      // a check had to be abandoned: its GPU is stuck for later passes too
};

// Why the run stops after this pass ("signal", "stuck", "failure", "repeat", "duration"), or
// nullopt to start another pass. With neither --repeat nor --duration there is one pass.
std::optional<std::string> burnin_stop(const BurninRequest& request, const PassEnd& end);

// The verdict of a repeated run: the reported pass's findings and checks at the top level (the
// first failing pass, else the first warning pass, else the last), every pass in `passes`,
// `first_failed_pass` (the first pass with a non-zero exit code), the burnin block, and the
// aggregated verdict, whose reason names the pass. started_at is the first pass's, duration_s
// the whole run's. `passes` must not be empty. A burn-in stopped by a signal (`signal`:
// "SIGTERM") never passes, even between two passes: it gets a run-level RUN_INTERRUPTED.
Verdict combine_passes(const std::vector<Verdict>& passes, const BurninRequest& request,
                       const std::string& stopped_by, double total_s, bool strict,
                       const std::string& signal = "");

// Seconds left until a repeated run ends, for the progress display: from the mean of finished
// passes, or before the first has finished from the plan's budgets (an upper bound).
struct EtaInput {
  int pass = 1;  // the pass under way, from 1
  double elapsed_s = 0;
  double pass_elapsed_s = 0;
  std::optional<double> mean_pass_s;
  double pass_budget_s = 0;  // the planned checks' budgets: what one pass may take at most
  std::optional<int> repeat;
  std::optional<double> duration_s;
};
double remaining_seconds(const EtaInput& in);

// "0:05:07", "12:00:00", "3d 4:05:06".
std::string format_clock(double seconds);

}  // namespace preflight
