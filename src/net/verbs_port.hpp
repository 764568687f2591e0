#pragma once
// One port of an open device, as inventory() reports it and as transfer() needs it to connect a
// queue pair: ibv_query_port, sysfs for the physical state, and the GID a connection uses.
#include <infiniband/verbs.h>

#include <cstdint>
#include <string>

#include "net/verbs_library.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

struct VerbsPort {
  RdmaPort port;                  // what inventory() reports
  std::uint16_t lid = 0;          // InfiniBand: the destination of a connection to this port
  ibv_mtu mtu = IBV_MTU_1024;     // active MTU, as the QP's path MTU takes it
  std::uint32_t max_message = 0;  // the largest message the port takes (max_msg_sz)
  bool ethernet = false;
  std::string error;  // ibv_query_port failed: nothing else is valid
};

// The device's sysfs folder: libibverbs' ibdev_path, else /sys/class/infiniband/<name>.
std::string ibdev_dir(ibv_device* device, const std::string& name);

// Reads port `port_num` of `context`. `ibdev` is ibdev_dir() of the device. Never throws.
VerbsPort read_port(const VerbsLibrary& library, ibv_context* context, const std::string& ibdev,
                    int port_num);

// IBV_MTU_256 (1) -> 256 ... IBV_MTU_4096 (5) -> 4096; 0 for anything else.
int mtu_bytes(int mtu);

}  // namespace preflight
