#pragma once
// PCI bus ids as the different sources spell them: NVML "00000000:1B:00.0" (32-bit domain,
// upper case), CUDA "0000:1b:00.0", lspci "1b:00.0" (no domain). GPUs seen by NVML and by CUDA
// are matched by comparing the canonical form.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace preflight {

struct PciAddress {
  std::uint32_t domain = 0;
  std::uint8_t bus = 0;
  std::uint8_t device = 0;    // 0x00..0x1f
  std::uint8_t function = 0;  // 0..7
};

// Parses "[domain:]bus:device.function" (hexadecimal, either case). std::nullopt for anything
// else, including out-of-range device or function numbers and surrounding whitespace.
std::optional<PciAddress> parse_pci_address(std::string_view text);

// The canonical form: "0000:1b:00.0" (lower case, domain at least four digits).
std::string format_pci_address(const PciAddress& address);

// parse_pci_address() followed by format_pci_address().
std::optional<std::string> normalize_pci_bus_id(std::string_view text);

}  // namespace preflight
