#pragma once
// The two ends of a transfer, and the reliable-connected (RC) queue pair between them that
// InfiniBand and RoCE devices use (EFA's SRD queue pairs: efa_connection.hpp). Both ends live in
// this process, so the queue pairs are connected to each other directly from what each end reads
// of its own port: no out-of-band exchange.
#include <infiniband/verbs.h>

#include <chrono>
#include <string>

#include "net/efa_library.hpp"
#include "net/verbs_library.hpp"
#include "net/verbs_port.hpp"
#include "net/verbs_resources.hpp"
#include "net/verbs_work_loop.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

// What the queue pairs and the registered memory of a transfer allow: the peer's RDMA writes or
// reads, and local writes (which remote write access needs, and a read's destination is). No
// more: EFA refuses to register memory with an access the device does not offer.
int verbs_access(RdmaOp op);

// "RDMA write" or "RDMA read", for messages.
const char* rdma_op_name(RdmaOp op);

struct VerbsEndpoint {
  std::string device;
  int port_num = 1;
  VerbsPort port;
  ibv_gid gid{};  // the GID at port.port.gid_index: the address of this end on Ethernet
  int max_qp_wr = 0;
  int max_cqe = 0;
  int max_rd_atomic = 1;       // RDMA reads this end may have in flight (RC)
  int max_dest_rd_atomic = 1;  // ... and serve for its peer
  bool efa = false;            // an EFA device: SRD queue pairs only (efa_connection.hpp)
  EfaCaps efa_caps;            // EFA: what efadv_query_device said (check_srd_support)
  // Destroyed in reverse order: queue pair, address handle, completion queue, protection domain,
  // device.
  VerbsContext context;
  VerbsPd pd;
  VerbsCq cq;
  VerbsAh ah;  // SRD: the initiator's address of its peer
  VerbsQp qp;
  ibv_qp_ex* qpx = nullptr;  // SRD: the extended view of qp (not owned)

  // Leaks the verbs objects (see verbs_resources.hpp).
  void abandon() {
    qpx = nullptr;
    qp.abandon();
    ah.abandon();
    cq.abandon();
    pd.abandon();
    context.abandon();
  }
};

// Opens `device` (from `list`), reads `port_num`, and allocates a protection domain. The port
// must be ACTIVE, and have a usable GID on Ethernet and EFA, a LID on InfiniBand. "" on
// success, else the failure.
std::string open_endpoint(const VerbsLibrary& library, const VerbsDeviceList& list,
                          const std::string& device, int port_num, VerbsEndpoint& end);

// A completion queue of `cq_entries` and an RC queue pair that takes `send_wr` work requests of
// one scatter-gather entry each, signalled only where asked (sq_sig_all 0).
std::string create_queue_pair(const VerbsLibrary& library, VerbsEndpoint& end, int send_wr,
                              int cq_entries);

// Takes both queue pairs RESET -> INIT -> RTR -> RTS, each connected to the other and granting
// it `access` (verbs_access). Every step is a local command; the deadline is checked between
// them (`timed_out` then set). "" on success, else "ibv_modify_qp(RTR): <strerror>" and the
// like.
std::string connect_queue_pairs(const VerbsLibrary& library, VerbsEndpoint& a, VerbsEndpoint& b,
                                int access, std::chrono::steady_clock::time_point deadline,
                                bool& timed_out);

// Posts RDMA writes or reads on an RC queue pair with ibv_post_send, chained in one call.
class RcPoster final : public VerbsWorkPoster {
 public:
  RcPoster(ibv_qp* qp, const VerbsWorkBuffers& buffers) : qp_(qp), buffers_(buffers) {}
  std::string post(const VerbsWorkRequest* requests, int count, int& posted) override;

 private:
  ibv_qp* qp_;
  VerbsWorkBuffers buffers_;
};

}  // namespace preflight
