#pragma once
// What libibverbs does not tell about an RDMA device, read from sysfs: where the device sits on
// the PCI tree and how its PCIe link trained, the physical port state as text, and which GID
// entry is a RoCE v2 one with an IP address. The parsers are pure functions of the files' text.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace preflight {

// The sysfs folder of an RDMA device when libibverbs does not name it.
inline constexpr const char* kInfinibandClass = "/sys/class/infiniband";

// The first line of a sysfs file, without the newline; nullopt when it cannot be read (some
// attributes, like an empty GID entry's type, fail to read by design), is not a regular file or
// is larger than any sysfs attribute (read_bounded_file: a FIFO or a huge file planted in a
// test's or a container's sysfs cannot hang or flood the inventory).
std::optional<std::string> read_sysfs_line(const std::string& path);

// "32.0 GT/s PCIe" -> 5 (2.5 -> 1, 5 -> 2, 8 -> 3, 16 -> 4, 32 -> 5, 64 -> 6, 128 -> 7);
// nullopt for "Unknown" or any other rate.
std::optional<int> pcie_gen_from_speed(const std::string& text);
// "16" -> 16; nullopt when not a positive number.
std::optional<int> pcie_width_from_text(const std::string& text);

struct PciLocation {
  std::string sysfs_path;  // realpath of the PCI device, empty when the device has none
  std::string bus_id;      // its last component, "0000:1b:00.0"
  int numa_node = -1;
  std::optional<int> gen, width, max_gen, max_width;
};
// `ibdev_dir` is the device's folder, /sys/class/infiniband/<name>. A software device (rxe,
// siw) has no PCI device of its own: the location is then empty.
PciLocation read_pci_location(const std::string& ibdev_dir);

// "5: LinkUp" -> "LinkUp"; text without a number is returned as is, trimmed.
std::string phys_state_from_sysfs(const std::string& text);
// ibv_port_attr.phys_state -> the same names sysfs uses ("LinkUp", "Disabled", ...), for when
// sysfs cannot be read; "" for 0 (not reported).
std::string phys_state_name(int code);

using GidBytes = std::array<std::uint8_t, 16>;
// "fe80:0000:0000:0000:0202:c9ff:fe00:0001" (eight groups of hex digits) -> bytes.
std::optional<GidBytes> parse_gid(const std::string& text);
// A GID a RoCE v2 connection can use: not all zero, not link-local (fe80::/10), so an
// IPv4-mapped (::ffff:a.b.c.d) or a global IPv6 address.
bool routable_roce_gid(const GidBytes& gid);
// The first GID index of `port_dir` (/sys/class/infiniband/<dev>/ports/<n>) below `table_len`
// whose type is "RoCE v2" and whose address passes routable_roce_gid(); nullopt when none.
std::optional<int> find_roce_v2_gid(const std::string& port_dir, int table_len);

// The network interface of RoCE port `port_dir`: the interface of its first GID entry that has
// one (gid_attrs/ndevs/N: "bond0" for a bonded device such as mlx5_bond_0), else the PCI
// function's own (`ibdev_dir`/device/net/*, the first by name). "" when none can be read or the
// name is not an interface name.
std::string roce_netdev(const std::string& ibdev_dir, const std::string& port_dir);
// The interfaces bond `netdev` is made of (class/net/NETDEV/bonding/slaves, under the sysfs root
// `ibdev_dir` is in); empty when `netdev` is not a bond.
std::vector<std::string> read_bond_members(const std::string& ibdev_dir, const std::string& netdev);

}  // namespace preflight
