#pragma once
// The two ends of an RDMA-write transfer and the reliable-connected queue pair between them. Both
// ends live in this process, so the queue pairs are connected to each other directly from what
// each end reads of its own port: no out-of-band exchange.
#include <infiniband/verbs.h>

#include <chrono>
#include <string>

#include "net/verbs_library.hpp"
#include "net/verbs_port.hpp"
#include "net/verbs_resources.hpp"

namespace preflight {

// What an end's queue pair and its registered memory allow: the peer's RDMA writes, and local
// writes, which remote write access needs. Both must grant the same, so one constant.
inline constexpr int kVerbsAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

struct VerbsEndpoint {
  std::string device;
  int port_num = 1;
  VerbsPort port;
  ibv_gid gid{};  // the GID at port.port.gid_index: the address of this end on Ethernet
  int max_qp_wr = 0;
  int max_cqe = 0;
  // Destroyed in reverse order: queue pair, completion queue, protection domain, device.
  VerbsContext context;
  VerbsPd pd;
  VerbsCq cq;
  VerbsQp qp;

  // Leaks the verbs objects (see verbs_resources.hpp).
  void abandon() {
    qp.abandon();
    cq.abandon();
    pd.abandon();
    context.abandon();
  }
};

// Opens `device` (from `list`), reads `port_num`, and allocates a protection domain. The port
// must be ACTIVE, and have a usable GID on Ethernet. "" on success, else the failure.
std::string open_endpoint(const VerbsLibrary& library, const VerbsDeviceList& list,
                          const std::string& device, int port_num, VerbsEndpoint& end);

// A completion queue of `cq_entries` and an RC queue pair that takes `send_wr` work requests of
// one scatter-gather entry each, signalled only where asked (sq_sig_all 0).
std::string create_queue_pair(const VerbsLibrary& library, VerbsEndpoint& end, int send_wr,
                              int cq_entries);

// Takes both queue pairs RESET -> INIT -> RTR -> RTS, each connected to the other. Every step is
// a local command; the deadline is checked between them (`timed_out` then set). "" on success,
// else "ibv_modify_qp(RTR): <strerror>" and the like.
std::string connect_queue_pairs(const VerbsLibrary& library, VerbsEndpoint& a, VerbsEndpoint& b,
                                std::chrono::steady_clock::time_point deadline, bool& timed_out);

}  // namespace preflight
