// inventory(): every RDMA device libibverbs lists, with its PCI location from sysfs and every
// port.
#include <cerrno>
#include <cstring>
#include <new>
#include <string>

#include "net/rdma_sysfs.hpp"
#include "net/verbs_engine.hpp"
#include "net/verbs_port.hpp"
#include "net/verbs_resources.hpp"

namespace preflight {
namespace {

RdmaDevice read_device(const VerbsLibrary& library, const VerbsDeviceList& list, int index) {
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
  return device;
}

}  // namespace

RdmaInventory read_rdma_inventory(const VerbsLibrary& library) {
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
      inventory.devices.push_back(read_device(library, list, i));
  } catch (const std::bad_alloc&) {
    inventory.error = "out of memory while reading RDMA devices";
  }
  return inventory;
}

}  // namespace preflight
