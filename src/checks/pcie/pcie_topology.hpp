#pragma once
// Where each GPU sits on the PCIe tree, read from sysfs: the root port above it, the bridges
// between them, its NUMA node, and the "uplink": the link from the device directly below the
// root port up to the CPU, which every GPU below that root port shares. Two GPUs behind one
// PCIe switch (DGX/HGX A100) share its uplink; a GPU with a switch of its own (DGX H100) or
// directly on a root port has an uplink to itself. docs/checks/pcie.md, "How topology
// enters".
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checks/common/pci_link.hpp"

namespace preflight {

// A link as sysfs reports it (current_link_speed "32.0 GT/s PCIe", current_link_width "16",
// max_link_speed, max_link_width); nullopt where a file is missing or unreadable.
struct PcieLinkState {
  std::optional<int> gen_current;
  std::optional<int> width_current;
  std::optional<int> gen_max;
  std::optional<int> width_max;
};

struct PcieGpuLocation {
  std::string bdf;  // sysfs name, "0000:1b:00.0"
  std::optional<int> numa_node;
  // The root port above the GPU, "" when the GPU sits on a root bus with no bridge above it
  // (some virtual machines). `bridges` runs from the root port down to the GPU's parent.
  std::string root_port;
  std::vector<std::string> bridges;
  // The lowest link capability (max_link_speed / max_link_width) of the GPU and every bridge
  // up to the root port: what the path can carry by design (a Gen4 switch above a Gen5 GPU).
  std::optional<int> path_gen_max;
  std::optional<int> path_width_max;
};

struct PcieUplink {
  std::string id;      // the root port's bdf; the GPU's own bdf when it has no root port
  std::string device;  // the device directly below the root port, whose link this is
  // The most the link can train to is the lower of its two ends' maxima: gen_max and width_max
  // are that; the current values are those of `device`.
  PcieLinkState link;
  std::vector<int> gpus;  // NVML indices, ascending
};

struct PcieTopology {
  std::vector<std::pair<int, PcieGpuLocation>> gpus;  // the GPUs found, by NVML index
  std::vector<PcieUplink> uplinks;                    // ordered by id
};

// pci_sysfs_name, the sysfs name of a GPU's bus id: checks/common/pci_link.hpp.

// Generation from a sysfs link speed ("16.0 GT/s PCIe", "2.5 GT/s"): 2.5/5/8/16/32/64 GT/s ->
// Gen1..6; nullopt for anything else ("Unknown", "").
std::optional<int> pcie_gen_from_sysfs_speed(const std::string& text);

// The GPU at `bdf` under `sysfs_root` ("/sys"): nullopt when /sys/bus/pci/devices/<bdf> does
// not exist or is not an NVIDIA device (vendor 0x10de), e.g. made-up bus ids in tests.
std::optional<PcieGpuLocation> locate_pcie_gpu(const std::string& sysfs_root,
                                               const std::string& bdf);

// Every GPU of `gpus` (NVML index, NVML bus id) that sysfs knows, grouped by uplink. A GPU
// not found is left out: the caller treats it as having an uplink of its own.
PcieTopology read_pcie_topology(const std::string& sysfs_root,
                                const std::vector<std::pair<int, std::string>>& gpus);

}  // namespace preflight
