#pragma once
// What the nvlink check measured, apart from what it concluded: the GPUs with their NVLink
// topology as NVML read it, the peer-access matrix and the copy matrices (NvlinkReadings, in the
// verdict as the check's "readings", docs/checks/nvlink.md), and the pure judgement of them
// against the thresholds (judge_nvlink). `preflight judge` runs the same judgement on recorded
// readings, so it needs nothing but these.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/common/bandwidth_math.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// One GPU of the matrices (their rows and columns follow the order of NvlinkReadings::gpus).
struct NvlinkGpu {
  int index = 0;           // NVML index; "gpu3" in JSON, as findings name it
  std::string pci_bus_id;  // "00000000:1B:00.0", what the peers' links name
  std::optional<int> nvlink_active;
  std::optional<int> nvlink_supported;
  // For each active link that ends at another GPU, that GPU's bus id (a pair joined by 6 links
  // appears 6 times); links to NVSwitches are counted in nvlink_switch_links. nullopt there:
  // the topology was not read (the pair is then held to the SKU's full link set).
  std::vector<std::string> nvlink_peer_bus_ids;
  std::optional<int> nvlink_switch_links;
};

struct NvlinkReadings {
  std::vector<NvlinkGpu> gpus;
  // peer_access[i][j]: gpus[i] can access gpus[j]'s memory (false on the diagonal). In JSON a
  // matrix of true/false with null on the diagonal; absent: every pair has access.
  std::vector<std::vector<bool>> peer_access;
  // Median GB/s of the gpus[i] -> gpus[j] copies; nullopt on the diagonal and where not
  // measured (JSON null).
  BandwidthMatrix unidirectional_gbps;
  // Both directions of the pair at once, the two directions together (symmetric); absent in
  // JSON or all null: not measured.
  BandwidthMatrix bidirectional_gbps;
  // Pairs an nvlink-slow fault slowed in this run ("gpu1-gpu2"): their findings are marked
  // injected. Empty on a run without injected faults.
  std::vector<std::string> injected_slow_pairs;
};

// JSON (nlohmann's to_json/from_json, so `Readings j = readings` and `j.get<NvlinkReadings>()`
// work). from_json throws InvalidInput naming the field for values it cannot use (a matrix of the
// wrong shape, a GPU not named "gpuN"); nlohmann's own errors for a missing field or a wrong type.
void to_json(nlohmann::ordered_json& j, const NvlinkReadings& r);
void from_json(const nlohmann::ordered_json& j, NvlinkReadings& r);

// The judgement of the readings: NVLINK_NO_PEER_ACCESS where NVLink joins a pair that cannot
// access the other's memory, NVLINK_BANDWIDTH_LOW / _MARGINAL for a pair below
// nvlink.fail_fraction / warn_fraction of what its links carry (nvlink_pair_expectation:
// nvlink.expected_gbps x direct links / inventory.expected_nvlink_links, or all of it through
// NVSwitches); bidirectional figures against twice that. One finding per unordered pair and
// code. Pure: the same readings and thresholds give the same findings.
std::vector<Finding> judge_nvlink(const NvlinkReadings& readings, const Thresholds& thresholds);

}  // namespace preflight
