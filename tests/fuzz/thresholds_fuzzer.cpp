// A --thresholds file: Thresholds::apply_overrides on the generic values. Two promises of
// include/preflight/thresholds.hpp are checked too: a rejected document changes nothing, and the
// effective thresholds' document (to_json_text, what `preflight thresholds` prints) is taken
// back unchanged.
#include <cstddef>
#include <cstdint>

#include "fuzz_support.hpp"
#include "json_mutator.hpp"
#include "preflight/errors.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Thresholds thresholds = preflight::test::builtin_thresholds(nullptr, "fuzz");
  const auto before = thresholds.values();
  try {
    thresholds.apply_overrides(fuzz::as_text(data, size), "fuzz");
  } catch (const InvalidInput&) {
    if (thresholds.values() != before || !thresholds.overridden().empty()) {
      fuzz::violated("a rejected thresholds document changed the thresholds");
    }
    return 0;
  }
  const std::string printed = thresholds.to_json_text();
  Thresholds again = preflight::test::builtin_thresholds(nullptr, "fuzz");
  try {
    again.apply_overrides(printed, "printed");
  } catch (const InvalidInput& e) {
    std::fprintf(stderr, "%s\n", e.what());
    fuzz::violated("to_json_text printed a document apply_overrides rejects");
  }
  if (again.values() != thresholds.values()) {
    fuzz::violated("to_json_text does not read back as the same thresholds");
  }
  return 0;
}

// Structure-aware mutations (json_mutator.hpp).
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  return preflight::fuzz::mutate_json(data, size, max_size, seed);
}
