#include "gpu/pci_address.hpp"

#include <cstdio>

namespace preflight {
namespace {

// Parses 1..max_digits hex digits making up all of `text`.
std::optional<std::uint32_t> parse_hex(std::string_view text, std::size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  std::uint32_t value = 0;
  for (const char c : text) {
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    value = value * 16 + digit;
  }
  return value;
}

}  // namespace

std::optional<PciAddress> parse_pci_address(std::string_view text) {
  const std::size_t dot = text.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const auto function = parse_hex(text.substr(dot + 1), 1);
  if (!function || *function > 7) return std::nullopt;

  // What is left is "domain:bus:device" or "bus:device".
  const std::string_view head = text.substr(0, dot);
  const std::size_t last_colon = head.rfind(':');
  if (last_colon == std::string_view::npos) return std::nullopt;
  const auto device = parse_hex(head.substr(last_colon + 1), 2);
  if (!device || *device > 0x1f) return std::nullopt;

  const std::string_view domain_bus = head.substr(0, last_colon);
  const std::size_t first_colon = domain_bus.find(':');
  std::optional<std::uint32_t> domain = 0;
  std::string_view bus_text = domain_bus;
  if (first_colon != std::string_view::npos) {
    domain = parse_hex(domain_bus.substr(0, first_colon), 8);
    bus_text = domain_bus.substr(first_colon + 1);
  }
  const auto bus = parse_hex(bus_text, 2);
  if (!domain || !bus) return std::nullopt;

  PciAddress address;
  address.domain = *domain;
  address.bus = static_cast<std::uint8_t>(*bus);
  address.device = static_cast<std::uint8_t>(*device);
  address.function = static_cast<std::uint8_t>(*function);
  return address;
}

std::string format_pci_address(const PciAddress& address) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", static_cast<unsigned>(address.domain),
                static_cast<unsigned>(address.bus), static_cast<unsigned>(address.device),
                static_cast<unsigned>(address.function));
  return text;
}

std::optional<std::string> normalize_pci_bus_id(std::string_view text) {
  const auto address = parse_pci_address(text);
  if (!address) return std::nullopt;
  return format_pci_address(*address);
}

}  // namespace preflight
