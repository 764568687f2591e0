#pragma once
// The parts of the node history (history.hpp) that its files share: the reader (history.cpp),
// the judgement (history_judge.cpp) and the counters that should not move
// (history_counters.cpp). Not an interface of its own.
#include <optional>
#include <string>
#include <vector>

#include "learned/history.hpp"
#include "preflight/verdict.hpp"

namespace preflight::history_detail {

// Seconds since the epoch of a UTC ISO-8601 time as the tool writes started_at:
// "2026-11-22T03:04:05Z", optionally with a fraction ("...05.123456789Z"). Anything else,
// another zone or an impossible date included, is nullopt: a run whose time cannot be placed
// cannot be placed in a window either.
std::optional<double> parse_utc_time(const std::string& text);

// A run of the history before the current one, with its parsed start.
struct EarlierRun {
  const Verdict* verdict = nullptr;
  double started = 0;  // seconds since the epoch
};

// The runs of the history before `current`, oldest first: a run with the current one's start is
// the current one already saved, and a later one (judge of an old verdict) is not its history.
// Runs whose start cannot be placed are left out (read_history noted them).
std::vector<EarlierRun> earlier_runs(const Verdict& current, const History& history);

// Whether the run was unhealthy for what the node showed in it (exit code 1 for a warn or
// fail finding of its own), not for what the history added to it (FIGURE_REGRESSED,
// COUNTER_ROSE, REPEATED_FAILURES). Without this a node once judged REPEATED_FAILURES would
// fail every later run for that finding alone, and each of those runs would count again.
bool unhealthy_of_its_own(const Verdict& run);

// A run whose figures may serve as the node's own reference: healthy, or unhealthy only for
// what the history added.
bool healthy_of_its_own(const Verdict& run);

// Whether a finding of the check named `check` came from an injected fault: what the drill
// slowed or raised is the drill's.
bool check_drilled(const Verdict& verdict, const std::string& check);

// The run's start as recorded, for a message.
std::string shown_time(const Verdict& run);

// COUNTER_ROSE findings: the counters of `current` that should not move (history_counters.cpp)
// against the newest earlier run holding each one for the same GPU. `earlier`: oldest first.
std::vector<Finding> counter_findings(const Verdict& current,
                                      const std::vector<EarlierRun>& earlier);

}  // namespace preflight::history_detail
