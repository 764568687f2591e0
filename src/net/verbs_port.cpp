#include "net/verbs_port.hpp"

#include <cstring>
#include <type_traits>
#include <utility>

#include "net/rdma_sysfs.hpp"

namespace preflight {
namespace {

// rdma-core 47 added active_speed_ex (XDR and later do not fit the 8-bit active_speed); the
// verbs.h this is built against may predate it.
template <class T, class = void>
struct HasActiveSpeedEx : std::false_type {};
template <class T>
struct HasActiveSpeedEx<T, std::void_t<decltype(std::declval<T&>().active_speed_ex)>>
    : std::true_type {};

template <class Attr>
int active_speed_of(const Attr& attr) {
  if constexpr (HasActiveSpeedEx<Attr>::value) {
    // Zero where the library or the kernel does not report it: the 8-bit field then holds it.
    if (attr.active_speed_ex != 0) return static_cast<int>(attr.active_speed_ex);
  }
  return attr.active_speed;
}

}  // namespace

std::string ibdev_dir(ibv_device* device, const std::string& name) {
  if (device != nullptr) {
    const std::size_t length = strnlen(device->ibdev_path, sizeof(device->ibdev_path));
    if (length > 0) return std::string(device->ibdev_path, length);
  }
  return std::string(kInfinibandClass) + "/" + name;
}

int mtu_bytes(int mtu) {
  return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

VerbsPort read_port(const VerbsLibrary& library, ibv_context* context, const std::string& ibdev,
                    int port_num) {
  VerbsPort result;
  result.port.port_num = port_num;
  ibv_port_attr attr{};
  const int code = library.query_port(context, static_cast<std::uint8_t>(port_num), &attr);
  if (code != 0) {
    result.error = verbs_failure("ibv_query_port", "port " + std::to_string(port_num), code);
    return result;
  }
  RdmaPort& port = result.port;
  port.state = library.port_state_name(attr.state);
  const std::string port_dir = ibdev + "/ports/" + std::to_string(port_num);
  const auto phys = read_sysfs_line(port_dir + "/phys_state");
  port.phys_state = phys ? phys_state_from_sysfs(*phys) : phys_state_name(attr.phys_state);
  port.active_speed = active_speed_of(attr);
  port.active_width = attr.active_width;
  port.active_mtu = mtu_bytes(attr.active_mtu);
  result.ethernet = attr.link_layer == IBV_LINK_LAYER_ETHERNET;
  // Unspecified is what EFA reports, and what old kernels reported for InfiniBand: recorded as
  // read. The device's transport tells them apart (is_efa_device, efa_library.hpp); RC
  // connections address such a port by LID, as InfiniBand.
  port.link_layer = result.ethernet                                ? "Ethernet"
                    : attr.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
                                                                   : "Unspecified";
  result.lid = attr.lid;
  result.mtu = attr.active_mtu;
  result.max_message = attr.max_msg_sz;

  if (result.ethernet) {
    // RoCE v2 (routable, UDP) with an IP address: what a connection between two ports uses. The
    // GID type is in sysfs only (ibv_query_gid_ex is newer than some rdma-core releases).
    if (const auto index = find_roce_v2_gid(port_dir, attr.gid_tbl_len)) {
      port.usable_gid = true;
      port.gid_index = *index;
    }
  } else {
    // GID 0 is the port's own: the subnet prefix and the port GUID (on EFA, the device's
    // address). A zero GUID (interface id) means the port has none yet.
    ibv_gid gid{};
    if (verbs_status(
            library.api().query_gid(context, static_cast<std::uint8_t>(port_num), 0, &gid)) == 0) {
      bool guid = false;
      for (int i = 8; i < 16; ++i) guid = guid || gid.raw[i] != 0;
      port.usable_gid = guid;
      port.gid_index = guid ? 0 : -1;
    }
  }
  return result;
}

}  // namespace preflight
