#pragma once
// What the rdma check read and measured, as it records it in the verdict
// (CheckResult::readings) and as `preflight judge` and the corpus (tests/data/nodes/) hand it
// back: every RDMA device with its PCI place, its nearest GPU and how close that GPU is, and its
// ports; the expectations given as options (--expect-rnics, --rdma-devices); and every transfer
// run. judge_rdma() (rdma_judge.hpp) judges them; failed transfers and corrupted data are
// observations the check reports itself. docs/checks/rdma.md, "Readings".
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checks/common/entities.hpp"  // gpu_entity: "gpu3", as readings name GPUs
#include "checks/rdma/rdma_math.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

// One device as read. Of RdmaDevice the readings keep what the judgement uses: name, PCI bus id,
// sysfs path, NUMA node, PCIe link, firmware, error, nearest GPU, and per port its number,
// state, physical state, rate, link layer and whether it has a usable GID (the encodings only
// where the rate could not be decoded). The injected rdma-down fault is already applied.
struct RdmaNicReading {
  RdmaDevice device;
  GpuAffinity gpu_affinity = GpuAffinity::unknown;  // to device.nearest_gpu
  // What the run took the NIC for ("compute", "storage", "management", "unknown") and why
  // (select_compute_nics, rdma_judge.hpp): recorded for the reader; `judge` works the roles out
  // again from the rest of the readings and the node shape in effect.
  std::string role;
  std::string role_reason;
};

// One transfer run (or started and abandoned: result.timed_out).
struct RdmaTransferReading {
  PlannedTransfer planned;  // entity, kind, from/to and ports, memory, GPU, expected rate
  RdmaTransferResult result;
  // rdma-slow: the share of its bandwidth the sender was told to deliver; its findings are
  // injected.
  std::optional<double> injected_slow_factor;
};

struct RdmaReadings {
  std::vector<RdmaNicReading> devices;  // in the order libibverbs lists them
  std::optional<int> expect_rnics;      // --expect-rnics
  std::optional<int> gpus;  // the node's GPUs, for what each GPU reaches; nullopt: not recorded
  std::vector<std::string> rdma_devices;       // --rdma-devices; empty: not given
  std::vector<RdmaTransferReading> transfers;  // in the order run
  std::size_t transfers_not_run = 0;           // planned, but the check's time ran out first
};

// "ib", "roce" or "efa": the engine's word (RdmaDevice::transport), else the link layer of the
// first port that has one (InfiniBand: ib, Ethernet: roce); "" when neither tells.
std::string rdma_transport(const RdmaDevice& device);

void to_json(nlohmann::ordered_json& j, const RdmaReadings& readings);
// Throws InvalidInput naming the field ("devices[2].ports[0].rate_gbps: expected a number, ...").
void from_json(const nlohmann::ordered_json& j, RdmaReadings& readings);

}  // namespace preflight
