#pragma once
// A node's own history (`--history DIR` on run and judge, docs/baseline.md, "Node history"):
// its earlier verdicts, read with bounds, and what they say about the current one: figures that
// dropped and stayed down (FIGURE_REGRESSED), counters that should not move and rose
// (COUNTER_ROSE), a node unhealthy again and again (REPEATED_FAILURES); the codes are
// learned_findings() (include/preflight/check.hpp). History adds findings;
// it never removes one, so it never makes a failing node pass.
#include <string>
#include <vector>

#include "learned/regression.hpp"
#include "preflight/baseline.hpp"
#include "preflight/figures.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

struct HistoryOptions {
  RegressionOptions regression;
  int repeat_failures = 2;          // unhealthy runs, the current one included, ...
  double repeat_window_days = 7.0;  // ... within this many days of the current run
  int max_files = 200;              // the newest files (by name) read from DIR
};

struct HistoryRun {
  std::string file;  // its name inside DIR
  Verdict verdict;
};

struct History {
  std::string dir;
  std::vector<HistoryRun> runs;      // this host's verdicts, oldest first (started_at)
  std::vector<std::string> skipped;  // "FILE: why" for every file not used
};

// Reads DIR's *.json files: each a regular file read with load_verdict_file's bounds; a file
// that cannot be read or parsed, of another host than `host`, with injected faults, or a
// re-judged verdict is skipped with a note, never trusted. Throws InvalidInput only when DIR
// itself is not a readable directory.
History read_history(const std::string& dir, const std::string& host,
                     const HistoryOptions& options);

// What the history says of `current` (not yet in `history`; a run in history with the same
// started_at is the current one and is left out). `fleet`: the baseline group of the node, or
// nullptr, for figures with too few runs of their own. Findings come from learned_findings()
// and are marked judged; `records` gets one line per figure judged against a reference.
struct HistoryJudgement {
  std::vector<Finding> findings;
  std::vector<RegressionRecord> records;
};
HistoryJudgement judge_history(const Verdict& current, const History& history,
                               const FigureCatalogue& catalogue, const BaselineGroup* fleet,
                               const HistoryOptions& options);

}  // namespace preflight
