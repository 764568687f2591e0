#include "net/rdma_sysfs.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <sstream>

#include "model/bounded_input.hpp"

namespace preflight {
namespace {

std::string trim(const std::string& text) {
  const char* space = " \t\r\n";
  const auto first = text.find_first_not_of(space);
  if (first == std::string::npos) return "";
  const auto last = text.find_last_not_of(space);
  return text.substr(first, last - first + 1);
}

// The leading decimal number of `text`, nullopt when there is none.
std::optional<double> leading_number(const std::string& text) {
  const std::string trimmed = trim(text);
  char* end = nullptr;
  const double value = std::strtod(trimmed.c_str(), &end);
  if (end == trimmed.c_str()) return std::nullopt;
  return value;
}

std::string realpath_of(const std::string& path) {
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : std::string();
}

std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A PCI function's sysfs name: "0000:1b:00.0" (domain:bus:device.function).
bool looks_like_pci_address(const std::string& name) {
  return name.size() == 12 && name[4] == ':' && name[7] == ':' && name[10] == '.';
}

// A sysfs attribute is at most a page; this leaves room for any page size.
constexpr std::size_t kMaxSysfsFile = 64 * 1024;

// An interface name as the kernel allows it (at most IFNAMSIZ - 1 characters, no slash, not a
// dot entry): what a name read from sysfs must be before it becomes part of a path.
bool valid_netdev_name(const std::string& name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    return c == '/' || std::isspace(static_cast<unsigned char>(c)) || c == '\0';
  });
}

// "/sys" for "/sys/class/infiniband/mlx5_0"; the tests' sysfs roots likewise.
std::string sysfs_root_of(const std::string& ibdev_dir) {
  const auto at = ibdev_dir.rfind("/class/infiniband/");
  return at == std::string::npos ? "/sys" : ibdev_dir.substr(0, at);
}

}  // namespace

std::optional<std::string> read_sysfs_line(const std::string& path) {
  std::string text;
  try {
    text = read_bounded_file(path, kMaxSysfsFile);
  } catch (const std::exception&) {
    return std::nullopt;  // missing, unreadable, not a regular file or too large
  }
  if (text.empty()) return std::nullopt;
  return trim(text.substr(0, text.find('\n')));
}

std::optional<int> pcie_gen_from_speed(const std::string& text) {
  const auto rate = leading_number(text);
  if (!rate) return std::nullopt;
  // GT/s per lane of each generation. Compared with a tolerance: the kernel prints "2.5", "5.0",
  // "8.0", "16.0", "32.0", "64.0".
  constexpr double kRates[] = {2.5, 5.0, 8.0, 16.0, 32.0, 64.0, 128.0};
  for (int gen = 1; gen <= 7; ++gen) {
    const double expected = kRates[gen - 1];
    if (*rate > expected * 0.95 && *rate < expected * 1.05) return gen;
  }
  return std::nullopt;
}

std::optional<int> pcie_width_from_text(const std::string& text) {
  const std::string trimmed = trim(text);
  char* end = nullptr;
  const long width = std::strtol(trimmed.c_str(), &end, 10);
  if (end == trimmed.c_str() || width <= 0 || width > 64) return std::nullopt;
  return static_cast<int>(width);
}

PciLocation read_pci_location(const std::string& ibdev_dir) {
  PciLocation location;
  const std::string pci_dir = realpath_of(ibdev_dir + "/device");
  if (pci_dir.empty() || !looks_like_pci_address(basename_of(pci_dir))) return location;
  location.sysfs_path = pci_dir;
  location.bus_id = basename_of(pci_dir);
  if (const auto numa = read_sysfs_line(pci_dir + "/numa_node")) {
    location.numa_node = std::atoi(numa->c_str());
  }
  const auto read = [&pci_dir](const char* name) { return read_sysfs_line(pci_dir + "/" + name); };
  if (const auto text = read("current_link_speed")) location.gen = pcie_gen_from_speed(*text);
  if (const auto text = read("current_link_width")) location.width = pcie_width_from_text(*text);
  if (const auto text = read("max_link_speed")) location.max_gen = pcie_gen_from_speed(*text);
  if (const auto text = read("max_link_width")) location.max_width = pcie_width_from_text(*text);
  return location;
}

std::string phys_state_from_sysfs(const std::string& text) {
  const std::string trimmed = trim(text);
  const auto colon = trimmed.find(':');
  return colon == std::string::npos ? trimmed : trim(trimmed.substr(colon + 1));
}

std::string phys_state_name(int code) {
  // The names of the kernel's phys_state attribute (drivers/infiniband/core/sysfs.c).
  switch (code) {
    case 1:
      return "Sleep";
    case 2:
      return "Polling";
    case 3:
      return "Disabled";
    case 4:
      return "PortConfigurationTraining";
    case 5:
      return "LinkUp";
    case 6:
      return "LinkErrorRecovery";
    case 7:
      return "Phy Test";
    case 0:
      return "";
    default:
      return "phys_state " + std::to_string(code);
  }
}

std::optional<GidBytes> parse_gid(const std::string& text) {
  const std::string trimmed = trim(text);
  GidBytes gid{};
  std::size_t position = 0;
  for (int group = 0; group < 8; ++group) {
    if (group > 0) {
      if (position >= trimmed.size() || trimmed[position] != ':') return std::nullopt;
      ++position;
    }
    const std::size_t start = position;
    unsigned value = 0;
    while (position < trimmed.size() && position - start < 4 &&
           std::isxdigit(static_cast<unsigned char>(trimmed[position]))) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(trimmed[position])));
      value = value * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : c - 'a' + 10);
      ++position;
    }
    if (position == start) return std::nullopt;
    gid[2 * group] = static_cast<std::uint8_t>(value >> 8);
    gid[2 * group + 1] = static_cast<std::uint8_t>(value & 0xff);
  }
  if (position != trimmed.size()) return std::nullopt;
  return gid;
}

bool routable_roce_gid(const GidBytes& gid) {
  bool any = false;
  for (const std::uint8_t byte : gid) any = any || byte != 0;
  if (!any) return false;
  // fe80::/10: an address for the link only (the GID derived from the MAC), and no IP a peer
  // behind a router could reach.
  const bool link_local = gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
  return !link_local;
}

std::optional<int> find_roce_v2_gid(const std::string& port_dir, int table_len) {
  for (int index = 0; index < table_len; ++index) {
    const std::string entry = std::to_string(index);
    // An unused entry's type does not read (EINVAL): skip it.
    const auto type = read_sysfs_line(port_dir + "/gid_attrs/types/" + entry);
    if (!type) continue;
    std::string lower;
    for (const char c : *type)
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower != "roce v2") continue;
    const auto text = read_sysfs_line(port_dir + "/gids/" + entry);
    if (!text) continue;
    const auto gid = parse_gid(*text);
    if (gid && routable_roce_gid(*gid)) return index;
  }
  return std::nullopt;
}

std::string roce_netdev(const std::string& ibdev_dir, const std::string& port_dir) {
  // The interface's own addresses come first in the GID table (mlx5's has 255 entries, most
  // of them unused): a few entries are enough.
  constexpr int kEntries = 16;
  for (int index = 0; index < kEntries; ++index) {
    const auto name = read_sysfs_line(port_dir + "/gid_attrs/ndevs/" + std::to_string(index));
    if (name && valid_netdev_name(*name)) return *name;
  }
  std::error_code error;
  std::vector<std::string> names;
  for (std::filesystem::directory_iterator it(ibdev_dir + "/device/net", error), end;
       !error && it != end; it.increment(error)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    if (valid_netdev_name(name)) return name;
  }
  return "";
}

std::vector<std::string> read_bond_members(const std::string& ibdev_dir,
                                           const std::string& netdev) {
  std::vector<std::string> members;
  if (!valid_netdev_name(netdev)) return members;
  const auto slaves =
      read_sysfs_line(sysfs_root_of(ibdev_dir) + "/class/net/" + netdev + "/bonding/slaves");
  if (!slaves) return members;
  std::istringstream words(*slaves);
  for (std::string word; words >> word;) {
    if (valid_netdev_name(word)) members.push_back(word);
  }
  return members;
}

}  // namespace preflight
