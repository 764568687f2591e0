#pragma once
// The readings each check would record on a healthy node of the corpus, filled into the checks'
// own typed readings (src/checks/<check>/<check>_readings.hpp) from the node's facts: their
// to_json writes the verdict's "readings", so the corpus has the format the checks write and
// `preflight judge` reads, from the one place it is defined.
#include <optional>
#include <utility>
#include <vector>

#include "checks/gemm/gemm_readings.hpp"
#include "checks/hbm/hbm_readings.hpp"
#include "checks/inventory/inventory_readings.hpp"
#include "checks/nccl/nccl_readings.hpp"
#include "checks/nvlink/nvlink_readings.hpp"
#include "checks/pcie/pcie_readings.hpp"
#include "checks/rdma/rdma_readings.hpp"
#include "corpus/writer/corpus_node.hpp"

namespace preflight::corpus {

// Per-GPU placeholders: no source publishes them for these machines; values of an idle,
// healthy GPU, listed in every file's corpus.assumed.
inline constexpr int kIdleTemperatureC = 33;
inline constexpr double kProbeMs = 40.0;
// The software stack of the lent GPU machines, not the sources'.
inline constexpr const char* kDriverVersion = "580.65.06";
inline constexpr int kCudaVersion = 13000;  // "13.0"

// Every reading holds the one figure the sources give per machine, for each GPU, link or pair.
InventoryReadings inventory_readings(const NodeFacts& node);
GemmReadings gemm_readings(const NodeFacts& node, double tflops);
// all_at_once: (h2d, d2h) per GPU position, or empty when not measured.
PcieReadings pcie_readings(const NodeFacts& node, double h2d_gbps, double d2h_gbps,
                           const std::vector<std::pair<double, double>>& all_at_once);
NvlinkReadings nvlink_readings(const NodeFacts& node, double pair_gbps);
HbmReadings hbm_readings(const NodeFacts& node, double traffic_gbps);
NcclReadings nccl_readings(const NodeFacts& node, std::optional<double> allgather_busbw_gbps,
                           std::optional<double> allreduce_busbw_gbps);
// The devices with a name and at least one port whose state is published.
RdmaReadings rdma_readings(const NodeFacts& node);

}  // namespace preflight::corpus
