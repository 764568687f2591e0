#include "checks/common/pci_link.hpp"

#include <algorithm>
#include <cctype>

namespace preflight {
namespace {

// Lane rate from the transfer rate (GT/s) and the line code: each transfer carries one bit per
// lane, of which payload/total are data; 8 bits a byte.
constexpr double lane_gbps(double gigatransfers, double payload, double total) {
  return gigatransfers * payload / total / 8.0;
}

}  // namespace

double pcie_lane_gbps(int generation) {
  switch (generation) {
    case 1:
      return lane_gbps(2.5, 8, 10);
    case 2:
      return lane_gbps(5.0, 8, 10);
    case 3:
      return lane_gbps(8.0, 128, 130);
    case 4:
      return lane_gbps(16.0, 128, 130);
    case 5:
      return lane_gbps(32.0, 128, 130);
    case 6:
      // PAM4 at 32 GBaud carries 64 Gb/s a lane with no line code; the 256-byte FLIT spends 14
      // bytes on CRC and FEC, leaving 242 bytes of payload.
      return lane_gbps(64.0, 242, 256);
    default:
      return 0.0;
  }
}

double pcie_link_gbps(int generation, int width) {
  if (width <= 0) return 0.0;
  return pcie_lane_gbps(generation) * width;
}

std::string pcie_link_name(int generation, int width) {
  const std::string gen = generation > 0 ? std::to_string(generation) : "?";
  const std::string lanes = width > 0 ? std::to_string(width) : "?";
  return "Gen" + gen + " x" + lanes;
}

bool is_pci_name(const std::string& name) {
  const auto colon = name.find(':');
  if (colon == std::string::npos || colon < 4) return false;
  const std::string rest = name.substr(colon);  // ":1b:00.0"
  if (rest.size() != 8 || rest[3] != ':' || rest[6] != '.') return false;
  const auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  return std::all_of(name.begin(), name.begin() + static_cast<long>(colon), hex) && hex(rest[1]) &&
         hex(rest[2]) && hex(rest[4]) && hex(rest[5]) && hex(rest[7]);
}

std::string pci_sysfs_name(const std::string& bus_id) {
  const auto colon = bus_id.find(':');
  if (colon == std::string::npos || colon == 0) return "";
  std::string domain = bus_id.substr(0, colon);
  const auto nonzero = domain.find_first_not_of('0');
  domain = nonzero == std::string::npos ? "" : domain.substr(nonzero);
  if (domain.size() < 4) domain.insert(0, 4 - domain.size(), '0');
  std::string name = domain + bus_id.substr(colon);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return is_pci_name(name) ? name : "";
}

}  // namespace preflight
