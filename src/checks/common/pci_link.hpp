#pragma once
// PCIe facts more than one check needs (pcie for the GPUs' links, rdma for the NICs'): what a
// link of a generation and width carries, how it is named in messages, and the sysfs name of a
// PCI address. Pure functions, unit-tested (tests/checks/common/test_bandwidth_math.cpp,
// tests/checks/pcie/test_pcie_readings.cpp).
#include <string>

namespace preflight {

// Raw data rate of one lane in one direction after line encoding, decimal GB/s:
// Gen1 2.5 GT/s 8b/10b = 0.25, Gen2 5 GT/s 8b/10b = 0.5, Gen3 8 GT/s 128b/130b = 0.9846,
// Gen4 16 GT/s = 1.9692, Gen5 32 GT/s = 3.9385, Gen6 64 GT/s PAM4 with 242/256 FLIT
// efficiency = 7.5625. 0 for an unknown generation.
double pcie_lane_gbps(int generation);
// One direction of a link: lane rate times width. 0 when either is unknown (<= 0).
double pcie_link_gbps(int generation, int width);
// "Gen5 x16"; "Gen? x16" for an unknown generation, "Gen5 x?" for an unknown width (<= 0).
std::string pcie_link_name(int generation, int width);

// "0000:1b:00.0": a domain of at least four hex digits, then bus:device.function in hex.
bool is_pci_name(const std::string& name);
// "00000000:1B:00.0" (NVML) -> "0000:1b:00.0" (sysfs); "" when it does not look like a PCI
// address. The domain keeps at least four hex digits ("10000:00:00.0" for a VMD domain).
std::string pci_sysfs_name(const std::string& bus_id);

}  // namespace preflight
