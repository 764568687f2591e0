// inventory(): every RDMA device libibverbs lists, with its PCI location from sysfs, every
// port, its transport (InfiniBand, RoCE or EFA), the RDMA operations an EFA device offers and
// the members of a bonded RoCE device.
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "net/efa_library.hpp"
#include "net/rdma_sysfs.hpp"
#include "net/verbs_engine.hpp"
#include "net/verbs_port.hpp"
#include "net/verbs_resources.hpp"

namespace preflight {
namespace {

// "roce" when a port is Ethernet, else "ib" (InfiniBand, or the unspecified link layer of old
// kernels); "" without a port to tell.
std::string transport_from_ports(const RdmaDevice& device) {
  if (device.ports.empty()) return "";
  for (const RdmaPort& port : device.ports) {
    if (port.link_layer == "Ethernet") return "roce";
  }
  return "ib";
}

// An EFA device's operations. Without libefa they stay unknown (the defaults): the device is
// still listed and judged, and a transfer on it says that libefa could not be loaded, which on
// an EFA node is a fault of its own (NCCL's EFA transport needs the library too).
void read_efa_operations(const LazyEfaLibrary& efa, ibv_context* context, RdmaDevice& device) {
  const EfaLibrary& library = efa.get();
  if (!library.ok()) return;
  EfaCaps caps;
  const std::string error = query_efa_caps(library, context, device.name, caps);
  if (!error.empty()) {
    device.error += (device.error.empty() ? "" : "; ") + error;
    return;
  }
  device.rdma_read = caps.rdma_read;
  device.rdma_write = caps.rdma_write;
}

// A bonded RoCE device (mlx5_bond_0) shows its bond as the interface of its port's GIDs.
void read_bond(const std::string& ibdev, RdmaDevice& device) {
  for (const RdmaPort& port : device.ports) {
    if (port.link_layer != "Ethernet") continue;
    const std::string port_dir = ibdev + "/ports/" + std::to_string(port.port_num);
    const std::string netdev = roce_netdev(ibdev, port_dir);
    if (!netdev.empty()) device.bond_members = read_bond_members(ibdev, netdev);
    return;
  }
}

RdmaDevice read_device(const VerbsLibrary& library, const LazyEfaLibrary& efa,
                       const VerbsDeviceList& list, int index) {
  RdmaDevice device;
  device.name = list.name(index);
  const std::string ibdev = ibdev_dir(list[index], device.name);
  PciLocation location = read_pci_location(ibdev);
  device.pci_bus_id = location.bus_id;
  device.sysfs_path = location.sysfs_path;
  device.numa_node = location.numa_node;
  device.pcie_gen = location.gen;
  device.pcie_width = location.width;
  device.pcie_max_gen = location.max_gen;
  device.pcie_max_width = location.max_width;

  const VerbsLibrary::Api& api = library.api();
  errno = 0;
  VerbsContext context(api.open_device(list[index]), api.close_device, "ibv_close_device");
  if (!context) {
    device.error = verbs_failure("ibv_open_device", device.name, errno);
    return device;
  }
  ibv_device_attr attr{};
  if (const int code = verbs_status(api.query_device(context.get(), &attr)); code != 0) {
    device.error = verbs_failure("ibv_query_device", device.name, code);
    return device;
  }
  device.firmware = std::string(attr.fw_ver, strnlen(attr.fw_ver, sizeof(attr.fw_ver)));
  for (int port_num = 1; port_num <= attr.phys_port_cnt; ++port_num) {
    VerbsPort port = read_port(library, context.get(), ibdev, port_num);
    if (!port.error.empty()) {
      // The other ports are still worth reporting; the device carries the failure.
      device.error += (device.error.empty() ? "" : "; ") + port.error;
      continue;
    }
    device.ports.push_back(std::move(port.port));
  }
  if (is_efa_device(*list[index], attr)) {
    device.transport = "efa";
    read_efa_operations(efa, context.get(), device);
  } else {
    device.transport = transport_from_ports(device);
    if (device.transport == "roce") read_bond(ibdev, device);
  }
  return device;
}

}  // namespace

RdmaInventory read_rdma_inventory(const VerbsLibrary& library, const LazyEfaLibrary& efa) {
  RdmaInventory inventory;
  if (!library.ok()) {
    inventory.error = library.error();
    return inventory;
  }
  inventory.library_loaded = true;
  try {
    const VerbsDeviceList list(library);
    // ENOSYS: the kernel has no RDMA stack loaded, which on a node without RDMA hardware is the
    // same answer as an empty list.
    if (list.error() != 0 && list.error() != ENOSYS) {
      inventory.error = verbs_failure("ibv_get_device_list", "devices", list.error());
      return inventory;
    }
    for (int i = 0; i < list.size(); ++i)
      inventory.devices.push_back(read_device(library, efa, list, i));
  } catch (const std::bad_alloc&) {
    inventory.error = "out of memory while reading RDMA devices";
  }
  return inventory;
}

}  // namespace preflight
