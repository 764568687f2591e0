/* EFA mode of the fake libibverbs (FAKE_IBV_EFA=1; fake_ibverbs.c's header says what it
 * models): libefa's efadv_query_device and efadv_create_qp_ex, exported here so that
 * PREFLIGHT_EFADV_LIBRARY can name this same library, address handles, and SRD queue pairs with
 * the extended queue-pair API (ibv_qp_to_qp_ex, then wr_start, wr_rdma_write or wr_rdma_read,
 * wr_set_ud_addr, wr_set_sge, wr_complete or wr_abort). Each request is checked as EFA checks it
 * (a queue pair in RTS, signalled, addressed, room in the send queue; all or nothing at
 * wr_complete), then performed as an RDMA write or read is in fake_ibverbs.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/efadv.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_ibverbs_internal.h"

/* efadv_device_attr.device_caps bits (rdma-core's providers/efa/efadv.h). RDMA write came with
 * rdma-core 46, after the header of Debian 12, so it is spelled out. */
#define FAKE_EFA_CAP_RDMA_READ (1u << 0)
#define FAKE_EFA_CAP_RNR_RETRY (1u << 1)
#define FAKE_EFA_CAP_RDMA_WRITE (1u << 3)

/* ---- efadv ------------------------------------------------------------------------------ */

int efadv_query_device(struct ibv_context* context, struct efadv_device_attr* attr,
                       uint32_t inlen) {
  (void)context;
  if (!efa_mode()) return EOPNOTSUPP; /* libefa on a device of another provider */
  if (inlen < offsetof(struct efadv_device_attr, max_rq_wr)) return EINVAL;
  struct efadv_device_attr full;
  memset(&full, 0, sizeof full);
  const int ops = efa_ops();
  full.max_sq_wr = (uint32_t)max_qp_wr();
  full.max_rq_wr = (uint32_t)max_qp_wr();
  full.max_sq_sge = MAX_SEND_SGE;
  full.max_rq_sge = MAX_SEND_SGE;
  full.inline_buf_size = 32;
  full.device_caps = FAKE_EFA_CAP_RNR_RETRY | (ops & FAKE_EFA_READ ? FAKE_EFA_CAP_RDMA_READ : 0) |
                     (ops & FAKE_EFA_WRITE ? FAKE_EFA_CAP_RDMA_WRITE : 0);
  full.max_rdma_size = MAX_MESSAGE;
  /* What the caller's struct has room for, the rest zero-filled (a newer header). */
  memset(attr, 0, inlen);
  memcpy(attr, &full, inlen < sizeof full ? inlen : sizeof full);
  return 0;
}

static void srd_wr_start(struct ibv_qp_ex* qpx);
static int srd_wr_complete(struct ibv_qp_ex* qpx);
static void srd_wr_abort(struct ibv_qp_ex* qpx);
static void srd_wr_rdma_write(struct ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr);
static void srd_wr_rdma_read(struct ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr);
static void srd_wr_set_ud_addr(struct ibv_qp_ex* qpx, struct ibv_ah* ah, uint32_t remote_qpn,
                               uint32_t remote_qkey);
static void srd_wr_set_sge(struct ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length);

/* The checks of EFA's efa_check_qp_attr and the kernel's limits; 0 or an errno value. */
static int srd_attr_error(struct ibv_context* context, const struct ibv_qp_init_attr_ex* attr,
                          const struct efadv_qp_init_attr* driver, uint32_t inlen) {
  if (inlen < offsetof(struct efadv_qp_init_attr, reserved)) return EINVAL;
  if (attr->qp_type != IBV_QPT_DRIVER || driver->driver_qp_type != EFADV_QP_DRIVER_TYPE_SRD) {
    return EOPNOTSUPP; /* the fake models SRD only */
  }
  if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
    return EOPNOTSUPP;
  }
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL) return EINVAL;
  if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    const int ops = efa_ops();
    const uint64_t offered = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                             (ops & FAKE_EFA_READ ? IBV_QP_EX_WITH_RDMA_READ : 0) |
                             (ops & FAKE_EFA_WRITE ? IBV_QP_EX_WITH_RDMA_WRITE : 0);
    if (attr->send_ops_flags & ~offered) return EOPNOTSUPP;
  }
  const uint32_t max_wr = (uint32_t)max_qp_wr();
  const struct ibv_qp_cap* cap = &attr->cap;
  if (attr->send_cq == NULL || attr->recv_cq == NULL || attr->srq != NULL ||
      attr->pd->context != context || attr->send_cq->context != context ||
      attr->recv_cq->context != context || cap->max_send_wr < 1 || cap->max_send_wr > max_wr ||
      cap->max_recv_wr > max_wr || cap->max_send_sge > MAX_SEND_SGE ||
      cap->max_recv_sge > MAX_SEND_SGE) {
    return EINVAL;
  }
  return 0;
}

struct ibv_qp* efadv_create_qp_ex(struct ibv_context* context, struct ibv_qp_init_attr_ex* attr,
                                  struct efadv_qp_init_attr* driver, uint32_t inlen) {
  if (!efa_mode()) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  const int code = srd_attr_error(context, attr, driver, inlen);
  if (code != 0) {
    errno = code;
    return NULL;
  }
  struct fake_srd_wr* pending = calloc(attr->cap.max_send_wr, sizeof *pending);
  if (pending == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  struct fake_qp* fake = new_qp(attr->pd, attr->send_cq, attr->recv_cq, attr->qp_context,
                                IBV_QPT_DRIVER, attr->cap.max_send_wr);
  if (fake == NULL) {
    free(pending);
    return NULL;
  }
  fake->srd = 1;
  fake->pending = pending;
  /* As EFA does: the functions of the operations asked for, and those every queue pair has. */
  struct ibv_qp_ex* qpx = &fake->qpx;
  const uint64_t ops = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS ? attr->send_ops_flags : 0;
  if (ops & IBV_QP_EX_WITH_RDMA_WRITE) qpx->wr_rdma_write = srd_wr_rdma_write;
  if (ops & IBV_QP_EX_WITH_RDMA_READ) qpx->wr_rdma_read = srd_wr_rdma_read;
  qpx->wr_set_ud_addr = srd_wr_set_ud_addr;
  qpx->wr_set_sge = srd_wr_set_sge;
  qpx->wr_start = srd_wr_start;
  qpx->wr_complete = srd_wr_complete;
  qpx->wr_abort = srd_wr_abort;
  return &fake->qp;
}

/* libibverbs' own: the extended view of a queue pair made by an extended create (here, only
 * SRD ones), null for the others. */
struct ibv_qp_ex* ibv_qp_to_qp_ex(struct ibv_qp* qp) {
  struct fake_qp* fake = (struct fake_qp*)qp;
  return fake->srd ? &fake->qpx : NULL;
}

/* ---- Address handles -------------------------------------------------------------------- */

struct fake_ah {
  struct ibv_ah ah;
  struct ibv_ah_attr attr;
};

struct ibv_ah* ibv_create_ah(struct ibv_pd* pd, struct ibv_ah_attr* attr) {
  union ibv_gid source;
  memset(&source, 0, sizeof source);
  if (pd == NULL || !valid_port(attr->port_num)) {
    errno = EINVAL;
    return NULL;
  }
  if (attr->is_global) gid_of(fake_context_of(pd->context)->device, attr->port_num, 0, &source);
  /* EFA routes by GID alone: its kernel driver refuses an address without a GRH. */
  if (efa_mode() && (!attr->is_global || gid_is_zero(&attr->grh.dgid) ||
                     attr->grh.sgid_index >= gid_table_len() || gid_is_zero(&source))) {
    errno = EINVAL;
    return NULL;
  }
  struct fake_ah* fake = calloc(1, sizeof *fake);
  if (fake == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  fake->ah.context = pd->context;
  fake->ah.pd = pd;
  fake->attr = *attr;
  pthread_mutex_lock(&g_lock);
  fake->ah.handle = g_next_handle++;
  ++((struct fake_pd*)pd)->children;
  ++g_ahs;
  pthread_mutex_unlock(&g_lock);
  return &fake->ah;
}

int ibv_destroy_ah(struct ibv_ah* ah) {
  pthread_mutex_lock(&g_lock);
  --((struct fake_pd*)ah->pd)->children;
  --g_ahs;
  pthread_mutex_unlock(&g_lock);
  free((struct fake_ah*)ah);
  return 0;
}

/* ---- SRD queue pairs -------------------------------------------------------------------- */

int srd_modify(struct fake_qp* qp, const struct ibv_qp_attr* attr, int mask) {
  /* EFA's kernel driver takes these attributes only, and checks the transitions as UD's. */
  const int supported = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY |
                        IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_SQ_PSN |
                        IBV_QP_RNR_RETRY;
  if (mask & ~supported) return EINVAL;
  const enum ibv_qp_state from = qp->qp.state;
  const enum ibv_qp_state to = attr->qp_state;
  int required = -1;
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) required = IBV_QP_STATE;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    required = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) required = IBV_QP_STATE;
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) required = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (required < 0 || (mask & required) != required) return EINVAL;
  if (to == IBV_QPS_INIT) {
    if (!valid_port(attr->port_num) || attr->pkey_index != 0) return EINVAL;
    qp->port = attr->port_num;
    qp->qkey = attr->qkey;
  }
  qp->qp.state = to;
  if (to == IBV_QPS_RESET) qp->posted = qp->retired = 0;
  return 0;
}

static struct fake_qp* srd_qp_of(struct ibv_qp_ex* qpx) {
  return (struct fake_qp*)qpx; /* the extended view is the queue pair's first member */
}

static void srd_wr_start(struct ibv_qp_ex* qpx) {
  struct fake_qp* qp = srd_qp_of(qpx);
  pthread_mutex_lock(&g_lock);
  qp->in_session = 1;
  qp->session_error = 0;
  qp->pending_count = 0;
  pthread_mutex_unlock(&g_lock);
}

/* A new request of the session, with the caller's wr_id and wr_flags; null once the session
 * failed. Under g_lock. */
static struct fake_srd_wr* srd_add(struct fake_qp* qp) {
  if (!qp->in_session && qp->session_error == 0) qp->session_error = EINVAL;
  if (qp->session_error != 0) return NULL;
  if (qp->pending_count == qp->max_send_wr) {
    qp->session_error = ENOMEM;
    return NULL;
  }
  struct fake_srd_wr* wr = &qp->pending[qp->pending_count++];
  memset(wr, 0, sizeof *wr);
  wr->wr_id = qp->qpx.wr_id;
  wr->flags = qp->qpx.wr_flags;
  return wr;
}

/* The request the setters complete; null (and the session failed) before any. Under g_lock. */
static struct fake_srd_wr* srd_current(struct fake_qp* qp) {
  if (qp->session_error != 0) return NULL;
  if (!qp->in_session || qp->pending_count == 0) {
    qp->session_error = EINVAL;
    return NULL;
  }
  return &qp->pending[qp->pending_count - 1];
}

static void srd_add_rdma(struct ibv_qp_ex* qpx, int read, uint32_t rkey, uint64_t remote_addr) {
  struct fake_qp* qp = srd_qp_of(qpx);
  pthread_mutex_lock(&g_lock);
  struct fake_srd_wr* wr = srd_add(qp);
  if (wr != NULL) {
    wr->read = read;
    wr->rkey = rkey;
    wr->remote_addr = remote_addr;
  }
  pthread_mutex_unlock(&g_lock);
}

static void srd_wr_rdma_write(struct ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) {
  srd_add_rdma(qpx, 0, rkey, remote_addr);
}

static void srd_wr_rdma_read(struct ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) {
  srd_add_rdma(qpx, 1, rkey, remote_addr);
}

static void srd_wr_set_ud_addr(struct ibv_qp_ex* qpx, struct ibv_ah* ah, uint32_t remote_qpn,
                               uint32_t remote_qkey) {
  struct fake_qp* qp = srd_qp_of(qpx);
  pthread_mutex_lock(&g_lock);
  struct fake_srd_wr* wr = srd_current(qp);
  if (wr != NULL) {
    wr->has_address = ah != NULL;
    wr->ah = ah;
    wr->remote_qpn = remote_qpn & 0xffffff;
    wr->remote_qkey = remote_qkey;
  }
  pthread_mutex_unlock(&g_lock);
}

static void srd_wr_set_sge(struct ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
  struct fake_qp* qp = srd_qp_of(qpx);
  pthread_mutex_lock(&g_lock);
  struct fake_srd_wr* wr = srd_current(qp);
  if (wr != NULL) {
    wr->has_sge = 1;
    wr->sge.addr = addr;
    wr->sge.length = length;
    wr->sge.lkey = lkey;
  }
  pthread_mutex_unlock(&g_lock);
}

/* Why the peer a request names cannot be reached, or null: what EFA finds out only by sending
 * and getting no answer. */
static const char* srd_unreachable(const struct fake_qp* qp, const struct fake_srd_wr* wr,
                                   const struct fake_qp** peer_out) {
  const struct fake_qp* peer = NULL;
  for (const struct fake_qp* other = g_qps; other != NULL; other = other->next) {
    if (other->qp.qp_num == wr->remote_qpn) peer = other;
  }
  *peer_out = peer;
  if (peer == NULL || !peer->srd) return "no SRD queue pair has the destination QP number";
  if (peer->qp.state != IBV_QPS_RTR && peer->qp.state != IBV_QPS_RTS) {
    return "the destination queue pair is not ready to receive (RTR)";
  }
  if (peer->qkey != wr->remote_qkey) return "the qkey is not the destination queue pair's";
  const struct fake_ah* ah = (const struct fake_ah*)wr->ah;
  if (ah->ah.pd != qp->qp.pd) return "the address handle is of another protection domain";
  union ibv_gid gid;
  gid_of(peer->device, peer->port, 0, &gid);
  if (memcmp(&gid, &ah->attr.grh.dgid, sizeof gid) != 0) {
    return "the address handle's GID is not the destination port's";
  }
  return NULL;
}

/* Performs one SRD request and says how it completes. Under g_lock. */
static enum ibv_wc_status srd_one(struct fake_qp* qp, const struct fake_srd_wr* wr,
                                  uint64_t sequence, uint64_t* bytes) {
  *bytes = 0;
  const enum ibv_wc_status injected = injected_failure(sequence);
  if (injected != IBV_WC_SUCCESS) return injected;
  const struct fake_qp* peer = NULL;
  const char* why = srd_unreachable(qp, wr, &peer);
  if (why != NULL) {
    if (!qp->reported) {
      fprintf(stderr, "fake_ibverbs: SRD QP 0x%x cannot reach QP 0x%x: %s\n", qp->qp.qp_num,
              wr->remote_qpn, why);
      qp->reported = 1;
    }
    return IBV_WC_RETRY_EXC_ERR;
  }
  return move_bytes(qp, peer, wr->read, wr->rkey, wr->remote_addr, &wr->sge, 1, bytes);
}

/* Whether the session's requests can all be posted: EFA's efa_post_send_validate; 0 or an
 * errno value. Under g_lock. */
static int srd_session_error(const struct fake_qp* qp) {
  if (!qp->in_session) return EINVAL;
  if (qp->session_error != 0) return qp->session_error;
  if (qp->qp.state != IBV_QPS_RTS) return EINVAL;
  if (qp->posted - qp->retired + qp->pending_count > qp->max_send_wr) return ENOMEM;
  for (uint32_t i = 0; i < qp->pending_count; ++i) {
    const struct fake_srd_wr* wr = &qp->pending[i];
    /* EFA: "Non signaled WRs not supported". */
    if (!(wr->flags & IBV_SEND_SIGNALED) || (wr->flags & ~(unsigned)IBV_SEND_SIGNALED)) {
      return EINVAL;
    }
    if (!wr->has_address || !wr->has_sge) return EINVAL;
  }
  return 0;
}

static int srd_wr_complete(struct ibv_qp_ex* qpx) {
  struct fake_qp* qp = srd_qp_of(qpx);
  struct fake_cq* cq = (struct fake_cq*)qp->qp.send_cq;
  pthread_mutex_lock(&g_lock);
  const int code = srd_session_error(qp);
  /* FAKE_IBV_HANG=1: the link takes the requests and never answers. */
  const int hang = code == 0 && env_flag("FAKE_IBV_HANG");
  for (uint32_t i = 0; code == 0 && i < qp->pending_count; ++i) {
    const struct fake_srd_wr* wr = &qp->pending[i];
    const uint64_t sequence = ++qp->posted;
    if (hang) continue;
    uint64_t bytes = 0;
    /* Each SRD request has its own outcome: a failed one leaves the queue pair as it was (EFA's
     * library keeps it in RTS and goes on taking requests), unlike an RC queue pair. */
    const enum ibv_wc_status status = srd_one(qp, wr, sequence, &bytes);
    const uint64_t ready = wire_time(qp, bytes);
    push_completion(cq, qp, wr->wr_id, wr->read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE, status,
                    bytes, sequence, ready);
  }
  /* A refused session posts nothing (EFA rolls it back). */
  qp->in_session = 0;
  qp->pending_count = 0;
  pthread_mutex_unlock(&g_lock);
  return code;
}

static void srd_wr_abort(struct ibv_qp_ex* qpx) {
  struct fake_qp* qp = srd_qp_of(qpx);
  pthread_mutex_lock(&g_lock);
  qp->in_session = 0;
  qp->pending_count = 0;
  pthread_mutex_unlock(&g_lock);
}
