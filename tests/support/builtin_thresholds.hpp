#pragma once
// The threshold keys of the checks built into the binary, as the commands hand them to
// Thresholds::for_sku (CheckRegistry::threshold_specs()), and thresholds made from them.
#include <memory>
#include <string>

#include "preflight/check.hpp"

namespace preflight::test {

// Made once per process (a fuzzer calls it for every input).
inline std::shared_ptr<const ThresholdSpecs> builtin_threshold_specs() {
  static const std::shared_ptr<const ThresholdSpecs> specs = [] {
    CheckRegistry registry;
    register_builtin_checks(registry);
    return registry.threshold_specs();
  }();
  return specs;
}

// What a run on a node of `sku` starts from (nullptr: a GPU of unknown model).
inline Thresholds builtin_thresholds(const SkuSpec* sku, std::string detected_by) {
  return Thresholds::for_sku(builtin_threshold_specs(), sku, std::move(detected_by));
}

}  // namespace preflight::test
