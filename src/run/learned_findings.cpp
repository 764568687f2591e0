// The codes of the limits learned from the fleet and from a node's history, which src/learned/
// applies after the checks have judged (docs/baseline.md). Here, beside the runner's, because
// the registry assembles the catalogue. docs/findings.md, "Learned limits", lists the same codes
// (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable.
#include "preflight/check.hpp"

namespace preflight {

const FindingTable& learned_findings() {
  static const FindingTable table{
      "learned",
      "docs/findings.md",
      {
          {"FIGURE_BELOW_BASELINE", Severity::fail, Action::service,
           "A figure is below the limit the site's baseline learned from its fleet of nodes of "
           "the same shape (preflight baseline): the node is slower than its siblings by more "
           "than their spread allows, though the datasheet limits may pass it. With --history, "
           "below it in most of the node's last runs, not in one alone.",
           "Compare the entity with the same one on a sibling node (preflight judge on both "
           "verdicts); reseat or replace the part named, or send the node for service. If the "
           "whole fleet reads low, learn the baseline again (docs/baseline.md)."},
          {"FIGURE_BELOW_BASELINE_ONCE", Severity::info, Action::none,
           "A figure is below the site baseline's limit in this run, but not in most of the "
           "node's last runs (--history): one bad run, not yet a slow node. Below the limit "
           "again within the next runs, it fails as FIGURE_BELOW_BASELINE.",
           "Nothing now; if it repeats on the same entity, the next runs fail it. Look at what "
           "else ran on the node at the time."},
          {"FIGURE_REGRESSED", Severity::warn, Action::none,
           "A figure dropped below the node's own earlier runs and stayed down for several "
           "consecutive runs, beyond its run-to-run noise: the node was fine before and is not "
           "now.",
           "Look at what changed on the node (firmware, driver, cooling, a reseated part) "
           "between the runs the finding names; watch the next runs; send the node for service "
           "if it keeps falling."},
          {"COUNTER_ROSE", Severity::warn, Action::none,
           "A counter that should not move between runs (an aggregate ECC count, retired pages, "
           "remapped rows) is higher than in the node's previous run.",
           "Read the counter with nvidia-smi -q; a count that keeps rising on one GPU is a "
           "memory part wearing out: plan its replacement."},
          {"REPEATED_FAILURES", Severity::fail, Action::service,
           "The node was unhealthy in several of its recent runs within a short window: a node "
           "that keeps failing is sent for service even when one run passes.",
           "Send the node for service with the runs the finding names; return it to the fleet "
           "after a repair, when its history restarts (a new state directory, or the runs "
           "outside the window)."},
          {"HISTORY_FILE_SKIPPED", Severity::info, Action::none,
           "A file in the --history directory was not used: unreadable, not a verdict, another "
           "host's, a drill's, or re-judged. History is never trusted blindly.",
           "Nothing, if the file is not this node's; else remove or repair it."},
      }};
  return table;
}

}  // namespace preflight
