#pragma once
// How checks declare their fault kinds (CheckInfo::fault_kinds): one builder for all of them.
#include <string>
#include <vector>

#include "preflight/faults.hpp"

namespace preflight {

// A kind aimed at one target type. A number value (FaultValue::number, optional_number) must
// lie in [min_value, max_value]; other values ignore the range.
FaultKindSpec fault_kind(std::string kind, TargetType target, std::string description,
                         std::vector<std::string> codes, FaultValue value = FaultValue::none,
                         double min_value = 0, double max_value = 0);

// A `-slow` kind: its value is FACTOR, the share of its speed or bandwidth the target keeps,
// from 0.05 to 0.99.
FaultKindSpec slow_kind(std::string kind, TargetType target, std::string description,
                        std::vector<std::string> codes);

}  // namespace preflight
