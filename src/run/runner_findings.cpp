// The runner's own finding codes: deadlines, signals, errors inside preflight, drills that
// tested nothing, whatever check runs. docs/findings.md, "Runner", lists the same
// codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable: admins grep for
// them and drain reasons carry them.
#include "preflight/check.hpp"

namespace preflight {

const FindingTable& runner_findings() {
  static const FindingTable table{
      "runner",
      "docs/findings.md",
      {
          {"CHECK_TIMEOUT", Severity::fail, Action::reboot,
           "The check did not finish within its deadline (a GPU or driver call that does not "
           "return looks like this).",
           "Look for Xid errors in the kernel log (dmesg) and a GPU that nvidia-smi cannot "
           "query; drain the node and reboot it: a GPU whose driver call never returned can "
           "rarely be reset."},
          {"CHECK_INTERRUPTED", Severity::fail, Action::none,
           "The run was stopped by SIGTERM or SIGINT while this check ran; it was not completed.",
           "Rerun preflight with enough time (Slurm PrologEpilogTimeout, --timeout)."},
          {"CHECK_ERROR", Severity::fail, Action::none,
           "The check stopped on an unexpected error inside preflight; the node was not judged by "
           "it.",
           "Report the message to the preflight maintainers; rerun to see whether it repeats."},
          {"RUN_INCOMPLETE", Severity::fail, Action::none,
           "Checks were not run (the --timeout was reached, discovery failed, or an earlier check "
           "hung), so the node was not fully judged.",
           "Fix the cause named in the message (a longer --timeout, or the hung GPU, whose own "
           "finding says what to do); an incomplete run is never a healthy verdict."},
          {"RUN_INTERRUPTED", Severity::fail, Action::none,
           "The run was stopped by SIGTERM or SIGINT before every check finished.",
           "Rerun preflight with enough time (Slurm PrologEpilogTimeout, --timeout)."},
          {"DISCOVERY_TIMEOUT", Severity::fail, Action::reboot,
           "Listing the GPUs through NVML and CUDA did not finish within its deadline.",
           "The driver is not answering: check nvidia-smi and dmesg for Xid errors; reboot the "
           "node (a GPU reset needs a driver that answers)."},
          {"INJECTED_FAULT_NOT_EXERCISED", Severity::warn, Action::none,
           "An --inject-fault drill tested nothing: the check its fault acts in was skipped or "
           "not run (a GPU check on a node without GPUs), or the pass it starts in never came.",
           "Run the drill where the check runs (a GPU node), or drill a check that runs here "
           "(inventory); a from-pass=N fault needs a burn-in that reaches pass N."},
      }};
  return table;
}

}  // namespace preflight
