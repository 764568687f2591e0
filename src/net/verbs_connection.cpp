#include "net/verbs_connection.hpp"

#include <algorithm>
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

int to_init(const VerbsLibrary& library, VerbsEndpoint& end) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = static_cast<std::uint8_t>(end.port_num);
  attr.qp_access_flags = kVerbsAccess;
  return modify(library, end, attr,
                IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int to_rtr(const VerbsLibrary& library, VerbsEndpoint& end, const VerbsEndpoint& remote) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = std::min(end.port.mtu, remote.port.mtu);
  attr.dest_qp_num = remote.qp.get()->qp_num;
  attr.rq_psn = packet_sequence(remote);
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;  // 0.64 ms; no receives are ever posted, RDMA writes need none
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
  attr.rnr_retry = 7;  // 7: retry forever on "receiver not ready" (never sent for writes)
  attr.sq_psn = packet_sequence(end);
  attr.max_rd_atomic = 1;
  return modify(library, end, attr,
                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

}  // namespace

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

  end.port = read_port(library, end.context.get(), ibdev_dir(found, device), port_num);
  if (!end.port.error.empty()) return end.port.error;
  if (end.port.port.state != "ACTIVE") {
    return port_name(end) + " is not active (" + end.port.port.state + ")";
  }
  if (end.port.ethernet && !end.port.port.usable_gid) {
    return port_name(end) + " has no RoCE v2 GID with an IP address";
  }
  if (!end.port.ethernet && end.port.lid == 0) {
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
                                std::chrono::steady_clock::time_point deadline, bool& timed_out) {
  const auto past_deadline = [&] {
    timed_out = std::chrono::steady_clock::now() >= deadline;
    return timed_out;
  };
  for (VerbsEndpoint* end : {&a, &b}) {
    if (past_deadline()) return "";
    if (const int code = to_init(library, *end)) {
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

}  // namespace preflight
