// Fault specs: `--inject-fault KIND[:VALUE]@TARGET[,from-pass=N]` of `preflight run` against
// every kind this binary knows (the runner's and every built-in check's), and the fleet's
// `--inject-fault` list (one spec per line) against the fleet kinds.
#include <cstddef>
#include <cstdint>

#include "fleet/logic/fleet_setup.hpp"
#include "fuzz_support.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "preflight/faults.hpp"

using namespace preflight;

namespace {

const std::vector<FaultKindSpec>& run_kinds() {
  static const std::vector<FaultKindSpec> kinds = fuzz::builtin_registry().fault_kinds();
  return kinds;
}

// A fleet of 8 ranks: node=0..7 are in it, node=8 is not.
constexpr int kWorldSize = 8;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  try {
    const InjectedFault fault = parse_fault(text, run_kinds());
    // What the checks and the verdict do with a parsed fault.
    (void)fault.target.entity();
    (void)FaultPlan({fault}).in_pass(fault.from_pass);
  } catch (const InvalidInput&) {
  }
  try {
    const auto faults = parse_fleet_faults(fuzz::split(text, "\n"), kWorldSize);
    for (int rank = 0; rank < kWorldSize; ++rank) (void)faults_for_rank(faults, rank);
  } catch (const InvalidInput&) {
  }
  return 0;
}
