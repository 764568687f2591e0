#pragma once
// EFA transfers: SRD (Scalable Reliable Datagram) queue pairs, the only kind with RDMA on EFA.
// An SRD queue pair is not connected to one peer: each work request names its destination (an
// address handle to the peer's GID, the peer's queue pair number and qkey), and is posted through
// the extended queue-pair API (ibv_wr_start ... ibv_wr_complete), as EFA takes RDMA reads and
// writes no other way. Completions arrive in any order, and every request must ask for one.
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "net/efa_library.hpp"
#include "net/verbs_connection.hpp"
#include "net/verbs_library.hpp"
#include "net/verbs_work_loop.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

// The qkey of every SRD queue pair here: any value will do, as long as both ends use it.
inline constexpr std::uint32_t kSrdQkey = 0x11111111;

// Whether a transfer of `op` can run between two EFA endpoints: libefa loaded, libibverbs with
// the extended queue-pair API, and both devices offering the operation (the initiator issues
// it, the peer's memory must be registered for it). Fills each end's efa_caps. "" when it can,
// else why not ("libefa.so.1 not loadable: ...", "rdmap0s6 does not offer RDMA write (EFA device
// caps 0x1: RDMA read only)").
std::string check_srd_support(const VerbsLibrary& library, const EfaLibrary& efa, RdmaOp op,
                              VerbsEndpoint& initiator, VerbsEndpoint& peer);

// A completion queue of `cq_entries` and an SRD queue pair (efadv_create_qp_ex) taking `send_wr`
// requests of `op`, with its extended view in end.qpx.
std::string create_srd_queue_pair(const VerbsLibrary& library, const EfaLibrary& efa,
                                  VerbsEndpoint& end, RdmaOp op, int send_wr, int cq_entries);

// Takes both queue pairs RESET -> INIT -> RTR -> RTS (SRD's transitions: no peer, a qkey and a
// send PSN), then creates the initiator's address handle of the peer's GID. The deadline is
// checked between the steps (`timed_out` then set). "" on success, else the failed call.
std::string connect_srd_queue_pairs(const VerbsLibrary& library, VerbsEndpoint& initiator,
                                    VerbsEndpoint& peer,
                                    std::chrono::steady_clock::time_point deadline,
                                    bool& timed_out);

// Posts RDMA writes or reads on an SRD queue pair, a batch per ibv_wr_start/ibv_wr_complete.
class SrdPoster final : public VerbsWorkPoster {
 public:
  // `initiator` is connected (connect_srd_queue_pairs); `peer_qp_num` is the peer's queue pair.
  SrdPoster(const VerbsEndpoint& initiator, std::uint32_t peer_qp_num,
            const VerbsWorkBuffers& buffers)
      : qpx_(initiator.qpx),
        ah_(initiator.ah.get()),
        peer_qp_num_(peer_qp_num),
        buffers_(buffers) {}
  std::string post(const VerbsWorkRequest* requests, int count, int& posted) override;

 private:
  ibv_qp_ex* qpx_;
  ibv_ah* ah_;
  std::uint32_t peer_qp_num_;
  VerbsWorkBuffers buffers_;
};

}  // namespace preflight
