// `preflight judge VERDICT`: a saved node verdict read as load_verdict_file reads it (the nesting
// bound, then nlohmann's parser, then verdict_from_json; the file itself is the input), then
// judged again as judge_command does (thresholds recorded or of the recorded SKU, rejudge) and
// written as the new verdict and its table. The new verdict must read back: `preflight judge`
// and `preflight report` take it as input in turn.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "json_mutator.hpp"
#include "model/bounded_input.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "preflight/thresholds.hpp"
#include "report/report.hpp"
#include "report/verdict_reader.hpp"
#include "run/rejudge.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;

namespace {

using Json = nlohmann::ordered_json;

// load_verdict_file's bound (src/report/verdict_reader.cpp): checked before the parser recurses.
constexpr int kMaxVerdictNesting = 64;

// load_verdict_file without the file. Throws InvalidInput as it does.
Verdict read_verdict(std::string_view text, const std::string& origin) {
  if (json_nesting_depth(text, kMaxVerdictNesting) > kMaxVerdictNesting) {
    throw InvalidInput(origin + ": nesting deeper than 64 levels");
  }
  Json document;
  try {
    document = Json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw InvalidInput(origin + ": not a verdict");
  }
  return verdict_from_json(document, origin);
}

// judge_command's choice without --sku and --thresholds: the recorded values when they read
// (--recorded-thresholds), else today's values for the recorded SKU or the first GPU's name.
Thresholds thresholds_for(const Verdict& recorded) {
  if (recorded.thresholds) {
    std::vector<std::string> unknown;
    try {
      return thresholds_from_record(preflight::test::builtin_threshold_specs(),
                                    *recorded.thresholds, "fuzz", unknown);
    } catch (const InvalidInput&) {
    }
    if (const SkuSpec* sku = find_sku(recorded.thresholds->sku)) {
      return preflight::test::builtin_thresholds(sku, recorded.thresholds->detected_by);
    }
  }
  const SkuSpec* sku = nullptr;
  for (const GpuIdentity& g : recorded.system.gpus) {
    if (!g.name.empty()) {
      sku = detect_sku(0, g.name);
      break;
    }
  }
  return preflight::test::builtin_thresholds(sku, "recorded GPU name");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Verdict judged;
  try {
    const Verdict recorded = read_verdict(fuzz::as_text(data, size), "fuzz");
    const Thresholds thresholds = thresholds_for(recorded);
    RejudgeSettings settings;
    settings.thresholds = &thresholds;
    settings.thresholds_by = "fuzz";
    settings.source = "fuzz";
    settings.judged_at = "2025-01-01T00:00:00Z";
    settings.fault_kinds = fuzz::builtin_registry().fault_kinds();
    judged = rejudge(recorded, fuzz::builtin_registry(), settings);
  } catch (const InvalidInput&) {
    return 0;
  }
  const std::string written = verdict_to_json_text(judged);
  (void)verdict_to_text(judged, TextStyle{});
  try {
    (void)read_verdict(written, "written");
  } catch (const InvalidInput& e) {
    std::fprintf(stderr, "%s\n", e.what());
    fuzz::violated("a verdict written by judge does not read back");
  }
  return 0;
}

// Structure-aware mutations (json_mutator.hpp).
extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size,
                                               std::size_t max_size, unsigned int seed) {
  return preflight::fuzz::mutate_json(data, size, max_size, seed);
}
