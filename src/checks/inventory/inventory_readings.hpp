#pragma once
// What the inventory check read, as it records it in the verdict (CheckResult::readings) and
// as `preflight judge` and the corpus (tests/data/nodes/) hand it back: the node's discovery
// and health readings after injected faults, and the GPU count expected (--expect-gpus).
// judge_inventory() is a pure function of these and the thresholds. docs/checks/inventory.md,
// "Readings", describes the JSON.
#include <nlohmann/json.hpp>

#include "preflight/check.hpp"
#include "preflight/engine/node_backend.hpp"

namespace preflight {

struct InventoryReadings {
  NodeReading node;
  NodeExpectations expect;
};

// Stable key order; fields not read (nullopt, empty) are left out.
void to_json(nlohmann::ordered_json& j, const InventoryReadings& readings);
// Absent optional fields are "not read". Throws InvalidInput naming the field ("gpus[2].
// pcie_gen_max_link: ...") for a field of the wrong type or out of range.
void from_json(const nlohmann::ordered_json& j, InventoryReadings& readings);

// NVML's clocks-event reasons by name ("hw_slowdown", as nvidia-smi's clocks_event_reasons.*
// fields are named), so the readings carry no bit mask. Bits without a name are written as hex.
std::vector<std::string> clock_event_names(std::uint64_t mask);
// Throws InvalidInput for a name it does not know.
std::uint64_t clock_event_mask(const std::vector<std::string>& names);

}  // namespace preflight
