#pragma once
// What the pcie check measured and the topology its limits depend on: per GPU its links as
// read, its copy figures alone and with every GPU copying at once, and the uplinks GPUs share
// up to the CPU. Nothing from the thresholds: judge_pcie (pcie_check.hpp) computes the
// expectations from these readings and the thresholds. The JSON form is in
// docs/checks/pcie.md ("Readings"); the corpus (tests/data/nodes/) is written with it by
// tests/corpus/writer/.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace preflight {

// The figures of one measurement, decimal GB/s.
struct PcieStats {
  double median_gbps = 0.0;
  double min_gbps = 0.0;
  int count = 0;  // samples
};

struct PcieDirections {
  std::optional<PcieStats> h2d;
  std::optional<PcieStats> d2h;
  std::optional<PcieStats> bidir;  // one GPU alone only: both directions at once, summed
};

// The GPU's link as NVML reports it (GpuReading::pcie_*): what PcieExpectation is made from
// together with the SKU's expected generation and width. nullopt: not read.
struct PcieGpuLink {
  std::optional<int> gen_current;   // at idle a link trains down: not judged
  std::optional<int> gen_max_link;  // the most GPU and slot can train to together
  std::optional<int> gen_max_gpu;   // the most the GPU itself can do
  std::optional<int> width_current;
  std::optional<int> width_max;
};

struct PcieGpuReadings {
  int index = 0;                      // NVML index; the entity is gpu<index>
  std::string bus_id;                 // NVML's, "00000000:1B:00.0"
  std::optional<int> numa_node;       // of the GPU, from sysfs
  std::optional<int> host_numa_node;  // where the copies' pinned host buffers were placed
  std::string root_port;              // sysfs bdf; "" when unknown or none
  std::vector<std::string> bridges;   // from the root port down to the GPU's parent
  // What the path up to the root port can carry by design (PcieGpuLocation::path_*).
  std::optional<int> path_gen_max;
  std::optional<int> path_width_max;
  PcieGpuLink link;
  PcieDirections alone;        // measured one GPU at a time
  PcieDirections all_at_once;  // every GPU copying at once (h2d, d2h)
};

// A link up to the CPU that several GPUs may share (pcie_topology.hpp, PcieUplink).
struct PcieUplinkReadings {
  std::string id;      // root port bdf, "0000:00:01.1" (the entity of an uplink finding)
  std::string device;  // the device directly below the root port, whose link this is
  std::optional<int> gen_current;
  std::optional<int> width_current;
  std::optional<int> gen_max;  // the most the link trains to: the lower of both ends' maxima
  std::optional<int> width_max;
  std::vector<std::string> gpus;  // entities, "gpu0"
};

struct PcieReadings {
  // "sysfs": every GPU was found in sysfs; "partial": some were; "unknown": none (a container
  // without the PCI tree, made-up bus ids). A GPU in no uplink has a link of its own.
  std::string topology = "unknown";
  std::vector<PcieGpuReadings> gpus;
  std::vector<PcieUplinkReadings> uplinks;
};

void to_json(nlohmann::ordered_json& j, const PcieReadings& r);
// Throws InvalidInput naming the field ("gpus[1].alone.h2d.median_gbps: ...") for bad input:
// wrong types, a GPU index twice, an uplink naming a GPU the readings lack or a GPU in two
// uplinks.
void from_json(const nlohmann::ordered_json& j, PcieReadings& r);

}  // namespace preflight
