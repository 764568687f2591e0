#include "net/verbs_connection.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace preflight {
namespace {

std::string port_name(const VerbsEndpoint& end) {
  return end.device + " port " + std::to_string(end.port_num);
}

// Any 24-bit value will do; the queue pair number differs between the ends.
std::uint32_t packet_sequence(const VerbsEndpoint& end) {
  return end.qp.get()->qp_num & 0xffffff;
}

int modify(const VerbsLibrary& library, VerbsEndpoint& end, ibv_qp_attr& attr, int mask) {
  return verbs_status(library.api().modify_qp(end.qp.get(), &attr, mask));
}

// Reads in flight are capped at both ends (the initiator's and the responder's limit); 16 is
// what mlx5 offers and more than a transfer of large messages needs.
int read_depth(int device_limit) {
  return std::clamp(device_limit, 1, 16);
}

int to_init(const VerbsLibrary& library, VerbsEndpoint& end, int access) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<std::uint8_t>(end.port_num);
  attr.qp_access_flags = static_cast<unsigned>(access);
  return modify(library, end, attr,
                IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int to_rtr(const VerbsLibrary& library, VerbsEndpoint& end, const VerbsEndpoint& remote) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = std::min(end.port.mtu, remote.port.mtu);
  attr.dest_qp_num = remote.qp.get()->qp_num;
  attr.rq_psn = packet_sequence(remote);
  attr.max_dest_rd_atomic = static_cast<std::uint8_t>(read_depth(end.max_dest_rd_atomic));
  attr.min_rnr_timer = 12;  // 0.64 ms; no receives are ever posted, RDMA operations need none
  attr.ah_attr.port_num = static_cast<std::uint8_t>(end.port_num);
  attr.ah_attr.sl = 0;
  attr.ah_attr.src_path_bits = 0;
  if (end.port.ethernet) {
    // RoCE: addressed by GID. The hop limit lets a connection between two NICs of this node on
    // different IP subnets cross a router (rc_pingpong's 1 would not); NCCL uses 255 as well.
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = remote.gid;
    attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(end.port.port.gid_index);
    attr.ah_attr.grh.hop_limit = 255;
    attr.ah_attr.grh.traffic_class = 0;
    attr.ah_attr.grh.flow_label = 0;
  } else {
    // InfiniBand within the subnet: addressed by LID.
    attr.ah_attr.is_global = 0;
    attr.ah_attr.dlid = remote.port.lid;
  }
  return modify(library, end, attr,
                IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

int to_rts(const VerbsLibrary& library, VerbsEndpoint& end) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;   // 4.096 us * 2^14 = 67 ms per try
  attr.retry_cnt = 7;  // then IBV_WC_RETRY_EXC_ERR: about half a second without an answer
  attr.rnr_retry = 7;  // 7: retry forever on "receiver not ready" (never sent for RDMA)
  attr.sq_psn = packet_sequence(end);
  attr.max_rd_atomic = static_cast<std::uint8_t>(read_depth(end.max_rd_atomic));
  return modify(library, end, attr,
                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

}  // namespace

int verbs_access(RdmaOp op) {
  return IBV_ACCESS_LOCAL_WRITE |
         (op == RdmaOp::read ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE);
}

const char* rdma_op_name(RdmaOp op) {
  return op == RdmaOp::read ? "RDMA read" : "RDMA write";
}

std::string open_endpoint(const VerbsLibrary& library, const VerbsDeviceList& list,
                          const std::string& device, int port_num, VerbsEndpoint& end) {
  const VerbsLibrary::Api& api = library.api();
  end.device = device;
  end.port_num = port_num;
  ibv_device* found = list.find(device);
  if (found == nullptr) return "no RDMA device named " + device;

  errno = 0;
  end.context = VerbsContext(api.open_device(found), api.close_device, "ibv_close_device");
  if (!end.context) return verbs_failure("ibv_open_device", device, errno);
  ibv_device_attr attr{};
  if (const int code = verbs_status(api.query_device(end.context.get(), &attr)); code != 0) {
    return verbs_failure("ibv_query_device", device, code);
  }
  if (port_num < 1 || port_num > attr.phys_port_cnt) {
    return device + " has no port " + std::to_string(port_num);
  }
  end.max_qp_wr = attr.max_qp_wr;
  end.max_cqe = attr.max_cqe;
  end.max_rd_atomic = attr.max_qp_init_rd_atom;
  end.max_dest_rd_atomic = attr.max_qp_rd_atom;
  end.efa = is_efa_device(*found, attr);

  end.port = read_port(library, end.context.get(), ibdev_dir(found, device), port_num);
  if (!end.port.error.empty()) return end.port.error;
  if (end.port.port.state != "ACTIVE") {
    return port_name(end) + " is not active (" + end.port.port.state + ")";
  }
  if (end.port.ethernet && !end.port.port.usable_gid) {
    return port_name(end) + " has no RoCE v2 GID with an IP address";
  }
  // EFA has no LID: its queue pairs are addressed by GID alone.
  if (end.efa && !end.port.port.usable_gid) return port_name(end) + " has no GID";
  if (!end.efa && !end.port.ethernet && end.port.lid == 0) {
    return port_name(end) + " has no LID (no subnet manager?)";
  }
  if (end.port.port.gid_index >= 0) {
    const int code = verbs_status(api.query_gid(
        end.context.get(), static_cast<std::uint8_t>(port_num), end.port.port.gid_index, &end.gid));
    if (code != 0) {
      return verbs_failure("ibv_query_gid",
                           port_name(end) + " index " + std::to_string(end.port.port.gid_index),
                           code);
    }
  }

  errno = 0;
  end.pd = VerbsPd(api.alloc_pd(end.context.get()), api.dealloc_pd, "ibv_dealloc_pd");
  if (!end.pd) return verbs_failure("ibv_alloc_pd", device, errno);
  return "";
}

std::string create_queue_pair(const VerbsLibrary& library, VerbsEndpoint& end, int send_wr,
                              int cq_entries) {
  const VerbsLibrary::Api& api = library.api();
  errno = 0;
  end.cq = VerbsCq(api.create_cq(end.context.get(), cq_entries, nullptr, nullptr, 0),
                   api.destroy_cq, "ibv_destroy_cq");
  if (!end.cq) return verbs_failure("ibv_create_cq", end.device, errno);

  ibv_qp_init_attr init{};
  init.send_cq = end.cq.get();
  init.recv_cq = end.cq.get();
  init.qp_type = IBV_QPT_RC;
  init.sq_sig_all = 0;
  init.cap.max_send_wr = static_cast<std::uint32_t>(send_wr);
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 0;
  errno = 0;
  end.qp = VerbsQp(api.create_qp(end.pd.get(), &init), api.destroy_qp, "ibv_destroy_qp");
  if (!end.qp) return verbs_failure("ibv_create_qp", end.device, errno);
  return "";
}

std::string connect_queue_pairs(const VerbsLibrary& library, VerbsEndpoint& a, VerbsEndpoint& b,
                                int access, std::chrono::steady_clock::time_point deadline,
                                bool& timed_out) {
  const auto past_deadline = [&] {
    timed_out = std::chrono::steady_clock::now() >= deadline;
    return timed_out;
  };
  for (VerbsEndpoint* end : {&a, &b}) {
    if (past_deadline()) return "";
    if (const int code = to_init(library, *end, access)) {
      return verbs_failure("ibv_modify_qp", "INIT", code);
    }
  }
  for (auto [end, remote] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
    if (past_deadline()) return "";
    if (const int code = to_rtr(library, *end, *remote)) {
      return verbs_failure("ibv_modify_qp", "RTR", code);
    }
  }
  for (VerbsEndpoint* end : {&a, &b}) {
    if (past_deadline()) return "";
    if (const int code = to_rts(library, *end)) {
      return verbs_failure("ibv_modify_qp", "RTS", code);
    }
  }
  return "";
}

std::string RcPoster::post(const VerbsWorkRequest* requests, int count, int& posted) {
  posted = 0;
  std::array<ibv_send_wr, 16> chain{};
  std::array<ibv_sge, 16> entries{};
  const int batch = std::min(count, static_cast<int>(chain.size()));
  for (int i = 0; i < batch; ++i) {
    const VerbsWorkRequest& request = requests[i];
    ibv_sge& entry = entries[static_cast<std::size_t>(i)];
    entry.addr = buffers_.local_address + request.offset;
    entry.length = static_cast<std::uint32_t>(buffers_.message);
    entry.lkey = buffers_.lkey;
    ibv_send_wr& wr = chain[static_cast<std::size_t>(i)];
    wr.wr_id = request.id;
    wr.sg_list = &entry;
    wr.num_sge = 1;
    wr.opcode = buffers_.op == RdmaOp::read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
    wr.send_flags = request.signalled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = buffers_.remote_address + request.offset;
    wr.wr.rdma.rkey = buffers_.rkey;
    wr.next = i + 1 < batch ? &chain[static_cast<std::size_t>(i) + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  // An inline of verbs.h that calls the provider through the context: no linked symbol.
  const int status = ibv_post_send(qp_, chain.data(), &bad);
  if (status != 0) {
    // The requests before the rejected one were posted.
    if (bad != nullptr) posted = static_cast<int>(bad - chain.data());
    return verbs_failure("ibv_post_send", rdma_op_name(buffers_.op), verbs_status(status));
  }
  posted = batch;
  if (batch < count) {
    int rest = 0;
    const std::string error = post(requests + batch, count - batch, rest);
    posted += rest;
    return error;
  }
  return "";
}

}  // namespace preflight
