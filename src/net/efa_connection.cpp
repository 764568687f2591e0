#include "net/efa_connection.hpp"

#include <cerrno>
#include <cstdio>
#include <initializer_list>

namespace preflight {
namespace {

std::string srd_port_name(const VerbsEndpoint& end) {
  return end.device + " port " + std::to_string(end.port_num);
}

std::string caps_text(std::uint32_t caps) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%x", caps);
  return text;
}

bool offers(const EfaCaps& caps, RdmaOp op) {
  return op == RdmaOp::read ? caps.rdma_read : caps.rdma_write;
}

// EFA's transitions are UD's (the kernel checks them as such): the port and qkey at INIT,
// nothing at RTR, a send PSN at RTS.
int srd_modify(const VerbsLibrary& library, VerbsEndpoint& end, ibv_qp_state state) {
  ibv_qp_attr attr{};
  attr.qp_state = state;
  int mask = IBV_QP_STATE;
  if (state == IBV_QPS_INIT) {
    attr.pkey_index = 0;
    attr.port_num = static_cast<std::uint8_t>(end.port_num);
    attr.qkey = kSrdQkey;
    mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  } else if (state == IBV_QPS_RTS) {
    attr.sq_psn = end.qp.get()->qp_num & 0xffffff;  // any 24-bit value
    mask |= IBV_QP_SQ_PSN;
  }
  return verbs_status(library.api().modify_qp(end.qp.get(), &attr, mask));
}

const char* srd_state_name(ibv_qp_state state) {
  return state == IBV_QPS_INIT ? "INIT" : state == IBV_QPS_RTR ? "RTR" : "RTS";
}

}  // namespace

std::string check_srd_support(const VerbsLibrary& library, const EfaLibrary& efa, RdmaOp op,
                              VerbsEndpoint& initiator, VerbsEndpoint& peer) {
  if (!efa.ok()) return efa.error();
  const VerbsLibrary::Api& api = library.api();
  if (api.create_ah == nullptr || api.destroy_ah == nullptr || api.qp_to_qp_ex == nullptr) {
    return "libibverbs lacks ibv_create_ah, ibv_destroy_ah or ibv_qp_to_qp_ex (EFA needs "
           "rdma-core 24 or later)";
  }
  for (VerbsEndpoint* end : {&initiator, &peer}) {
    if (!end->efa) continue;
    std::string error = query_efa_caps(efa, end->context.get(), end->device, end->efa_caps);
    if (!error.empty()) return error;
    if (!offers(end->efa_caps, op)) {
      return end->device + " does not offer " + rdma_op_name(op) + " (efadv_query_device caps " +
             caps_text(end->efa_caps.device_caps) + ")";
    }
  }
  return "";
}

std::string create_srd_queue_pair(const VerbsLibrary& library, const EfaLibrary& efa,
                                  VerbsEndpoint& end, RdmaOp op, int send_wr, int cq_entries) {
  const VerbsLibrary::Api& api = library.api();
  errno = 0;
  end.cq = VerbsCq(api.create_cq(end.context.get(), cq_entries, nullptr, nullptr, 0),
                   api.destroy_cq, "ibv_destroy_cq");
  if (!end.cq) return verbs_failure("ibv_create_cq", end.device, errno);

  ibv_qp_init_attr_ex init{};
  init.qp_type = IBV_QPT_DRIVER;
  init.send_cq = end.cq.get();
  init.recv_cq = end.cq.get();
  init.sq_sig_all = 0;  // every request asks for its completion itself
  init.cap.max_send_wr = static_cast<std::uint32_t>(send_wr);
  init.cap.max_recv_wr = 1;
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  init.cap.max_inline_data = 0;
  init.pd = end.pd.get();
  init.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  // Only the operation the transfer uses: EFA refuses one the device does not offer.
  init.send_ops_flags = op == RdmaOp::read ? IBV_QP_EX_WITH_RDMA_READ : IBV_QP_EX_WITH_RDMA_WRITE;
  efadv_qp_init_attr driver{};
  driver.driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD;
  errno = 0;
  ibv_qp* qp = efa.api().create_qp_ex(end.context.get(), &init, &driver,
                                      static_cast<std::uint32_t>(sizeof(driver)));
  if (qp == nullptr) return verbs_failure("efadv_create_qp_ex", end.device, errno);
  end.qp = VerbsQp(qp, api.destroy_qp, "ibv_destroy_qp");

  end.qpx = api.qp_to_qp_ex(qp);
  // A provider sets the functions of the operations asked for; calling a missing one would
  // crash, so their absence is an error here.
  const bool has_op =
      end.qpx != nullptr &&
      (op == RdmaOp::read ? end.qpx->wr_rdma_read != nullptr : end.qpx->wr_rdma_write != nullptr);
  if (!has_op || end.qpx->wr_start == nullptr || end.qpx->wr_complete == nullptr ||
      end.qpx->wr_set_ud_addr == nullptr || end.qpx->wr_set_sge == nullptr) {
    end.qpx = nullptr;
    return "ibv_qp_to_qp_ex(" + end.device + "): no extended queue pair with " + rdma_op_name(op);
  }
  return "";
}

std::string connect_srd_queue_pairs(const VerbsLibrary& library, VerbsEndpoint& initiator,
                                    VerbsEndpoint& peer,
                                    std::chrono::steady_clock::time_point deadline,
                                    bool& timed_out) {
  const auto past_deadline = [&] {
    timed_out = std::chrono::steady_clock::now() >= deadline;
    return timed_out;
  };
  for (const ibv_qp_state state : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    for (VerbsEndpoint* end : {&initiator, &peer}) {
      if (past_deadline()) return "";
      if (const int code = srd_modify(library, *end, state)) {
        return verbs_failure("ibv_modify_qp", srd_state_name(state), code);
      }
    }
  }
  if (past_deadline()) return "";
  // EFA routes by GID only: the address handle must carry a GRH.
  ibv_ah_attr address{};
  address.is_global = 1;
  address.grh.dgid = peer.gid;
  address.grh.sgid_index = static_cast<std::uint8_t>(initiator.port.port.gid_index);
  address.grh.hop_limit = 255;
  address.port_num = static_cast<std::uint8_t>(initiator.port_num);
  const VerbsLibrary::Api& api = library.api();
  errno = 0;
  initiator.ah =
      VerbsAh(api.create_ah(initiator.pd.get(), &address), api.destroy_ah, "ibv_destroy_ah");
  if (!initiator.ah) {
    return verbs_failure("ibv_create_ah", srd_port_name(initiator) + " to " + peer.device, errno);
  }
  return "";
}

std::string SrdPoster::post(const VerbsWorkRequest* requests, int count, int& posted) {
  posted = 0;
  // Inlines of verbs.h that call the provider through the queue pair's function pointers.
  ibv_wr_start(qpx_);
  for (int i = 0; i < count; ++i) {
    const VerbsWorkRequest& request = requests[i];
    qpx_->wr_id = request.id;
    // EFA refuses unsignalled requests; the loop signals every one (signal_every 1).
    qpx_->wr_flags = IBV_SEND_SIGNALED;
    const std::uint64_t remote = buffers_.remote_address + request.offset;
    if (buffers_.op == RdmaOp::read) {
      ibv_wr_rdma_read(qpx_, buffers_.rkey, remote);
    } else {
      ibv_wr_rdma_write(qpx_, buffers_.rkey, remote);
    }
    ibv_wr_set_ud_addr(qpx_, ah_, peer_qp_num_, kSrdQkey);
    ibv_wr_set_sge(qpx_, buffers_.lkey, buffers_.local_address + request.offset,
                   static_cast<std::uint32_t>(buffers_.message));
  }
  // All or nothing: a refused batch is rolled back whole.
  if (const int code = ibv_wr_complete(qpx_); code != 0) {
    return verbs_failure("ibv_wr_complete", rdma_op_name(buffers_.op), verbs_status(code));
  }
  posted = count;
  return "";
}

}  // namespace preflight
