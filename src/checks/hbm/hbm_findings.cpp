// The hbm check's finding codes. docs/checks/hbm.md, "Finding codes", lists the same
// codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable: admins grep for
// them and drain reasons carry them.
#include "checks/hbm/hbm_findings.hpp"

namespace preflight {

const FindingTable& hbm_findings() {
  static const FindingTable table{
      "hbm",
      "docs/checks/hbm.md",
      {
          {"HBM_BANDWIDTH_LOW", Severity::fail, Action::service,
           "The GPU's device-local copy bandwidth (memory traffic, read plus write) is below the "
           "failure share of the SKU's memory bandwidth.",
           "Check clocks and slowdown reasons (`nvidia-smi -q -d PERFORMANCE,CLOCK`): a memory "
           "clock held low points to thermal or power limits; drain and RMA the GPU if it "
           "repeats on an idle, cool GPU."},
          {"HBM_BANDWIDTH_MARGINAL", Severity::warn, Action::none,
           "The GPU's device-local copy bandwidth is below the warning share of the SKU's memory "
           "bandwidth.",
           "Check clocks and slowdown reasons (`nvidia-smi -q -d PERFORMANCE,CLOCK`) and rerun "
           "`preflight run --checks hbm`."},
          {"HBM_PATTERN_MISMATCH", Severity::fail, Action::reset_gpu,
           "GPU memory did not hold the words written to it: the pattern test read back bad "
           "words; the message gives their count and address ranges.",
           "Drain the node; check ECC counters and row remapping (`nvidia-smi -q -d "
           "ECC,ROW_REMAPPER`); reset the GPU to let pending remaps apply and rerun `preflight "
           "run --checks hbm --profile standard`; RMA the GPU if bad words remain."},
      }};
  return table;
}

}  // namespace preflight
