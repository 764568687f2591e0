#include "checks/common/fault_kinds.hpp"

#include <utility>

namespace preflight {

FaultKindSpec fault_kind(std::string kind, TargetType target, std::string description,
                         std::vector<std::string> codes, FaultValue value, double min_value,
                         double max_value) {
  FaultKindSpec k;
  k.kind = std::move(kind);
  k.targets = {target};
  k.value = value;
  k.min_value = min_value;
  k.max_value = max_value;
  k.description = std::move(description);
  k.codes = std::move(codes);
  return k;
}

FaultKindSpec slow_kind(std::string kind, TargetType target, std::string description,
                        std::vector<std::string> codes) {
  return fault_kind(std::move(kind), target, std::move(description), std::move(codes),
                    FaultValue::number, 0.05, 0.99);
}

}  // namespace preflight
