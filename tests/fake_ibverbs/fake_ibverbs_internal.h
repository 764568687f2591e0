/* What the two sources of the fake libibverbs share: fake_ibverbs.c (devices, memory, RC queue
 * pairs, completions) and fake_efa.c (EFA mode: efadv, SRD queue pairs, address handles, the
 * extended queue-pair API). Nothing here is exported: the version script keeps every name but
 * the verbs functions local to the library. */
#ifndef FAKE_IBVERBS_INTERNAL_H
#define FAKE_IBVERBS_INTERNAL_H

#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdint.h>

#define MAX_DEVICES 64 /* an AWS p5.48xlarge has 32 EFA devices */
#define MAX_PORTS 4
#define GID_TABLE_LEN 8
#define MAX_SEND_SGE 1
#define MAX_CQE 4194303
#define MAX_MESSAGE (1u << 30)

/* ---- Configuration (read at every call) ------------------------------------------------- */

void config_error(const char* name, const char* value, const char* expected);
const char* env(const char* name);
long env_long(const char* name, long fallback, long min, long max);
int env_flag(const char* name);
int port_count(void);
int valid_port(uint8_t port);
double port_gbps(void);
int max_qp_wr(void);
/* FAKE_IBV_EFA=1: every device is an EFA device. */
int efa_mode(void);
/* FAKE_IBV_EFA_OPS: FAKE_EFA_READ | FAKE_EFA_WRITE (both by default). */
#define FAKE_EFA_READ 1
#define FAKE_EFA_WRITE 2
int efa_ops(void);

/* ---- State ------------------------------------------------------------------------------ */

struct fake_context {
  struct verbs_context verbs; /* its ibv_context is what callers hold */
  int device;
  int children; /* protection domains and completion queues */
};

struct fake_pd {
  struct ibv_pd pd;
  int children; /* memory regions, queue pairs and address handles */
};

struct fake_qp;

struct fake_cqe {
  struct ibv_wc wc;
  struct fake_qp* qp;
  uint64_t sequence; /* of the work request on its queue pair, from 1 */
  uint64_t ready_ns; /* not visible to ibv_poll_cq before */
};

struct fake_cq {
  struct ibv_cq cq;
  int capacity;
  int head, count;
  struct fake_cqe* entries;
  int overflowed;
  int children; /* queue pairs */
};

/* An SRD work request between ibv_wr_start and ibv_wr_complete. */
struct fake_srd_wr {
  uint64_t wr_id;
  unsigned flags;
  int read; /* RDMA read, else RDMA write */
  uint32_t rkey;
  uint64_t remote_addr;
  int has_address;
  struct ibv_ah* ah;
  uint32_t remote_qpn, remote_qkey;
  int has_sge;
  struct ibv_sge sge;
};

struct fake_qp {
  union {
    struct ibv_qp qp;     /* what callers hold */
    struct ibv_qp_ex qpx; /* SRD: the extended view (ibv_qp_to_qp_ex); qpx.qp_base is qp */
  };
  struct fake_qp* next;
  int device, port;
  uint32_t max_send_wr;
  int access;
  enum ibv_mtu path_mtu;
  uint32_t dest_qp_num;
  struct ibv_ah_attr ah;
  uint64_t posted;  /* work requests posted */
  uint64_t retired; /* ... whose send queue slots are free again */
  uint64_t wire_free_ns;
  int reported; /* an unreachable peer was reported on stderr */
  /* SRD queue pairs (efadv_create_qp_ex) */
  int srd;
  uint32_t qkey;
  int in_session, session_error;
  uint32_t pending_count;
  struct fake_srd_wr* pending; /* max_send_wr entries */
};

struct fake_mr {
  struct ibv_mr mr;
  struct fake_mr* next;
  uint64_t iova;
  int access;
};

extern pthread_mutex_t g_lock;
extern struct fake_qp* g_qps;
extern uint32_t g_next_handle;
extern long g_ahs;

struct fake_context* fake_context_of(struct ibv_context* context);
uint64_t now_ns(void);

/* ---- Ports, GIDs, queue pairs and data (under g_lock where they touch state) ------------- */

void gid_of(int device, int port, int index, union ibv_gid* gid);
int gid_is_zero(const union ibv_gid* gid);
int gid_table_len(void);

/* A queue pair on `pd` registered with its domain and completion queues; errno set and null
 * when out of memory. */
struct fake_qp* new_qp(struct ibv_pd* pd, struct ibv_cq* send_cq, struct ibv_cq* recv_cq,
                       void* qp_context, enum ibv_qp_type type, uint32_t max_send_wr);

/* Moves the bytes of one RDMA write (sges -> the peer's region) or read (the peer's region ->
 * sges) after the checks a NIC makes, and says how it completes. */
enum ibv_wc_status move_bytes(struct fake_qp* qp, const struct fake_qp* peer, int read,
                              uint32_t rkey, uint64_t remote_addr, const struct ibv_sge* sges,
                              int num_sge, uint64_t* bytes);

/* The failure FAKE_IBV_FAIL_AT asks for at this request, else IBV_WC_SUCCESS. */
enum ibv_wc_status injected_failure(uint64_t sequence);

/* Queues the completion of request `sequence` of `qp`, visible at `ready_ns`. RC completions
 * come out in order; SRD ones (qp->srd) may overtake each other, as on EFA. */
void push_completion(struct fake_cq* cq, struct fake_qp* qp, uint64_t wr_id,
                     enum ibv_wc_opcode opcode, enum ibv_wc_status status, uint64_t bytes,
                     uint64_t sequence, uint64_t ready_ns);

/* When the wire has carried `bytes` more of `qp`, after what it carries already. */
uint64_t wire_time(struct fake_qp* qp, uint64_t bytes);

/* SRD (fake_efa.c): the transitions of ibv_modify_qp, under g_lock; 0 or an errno value. */
int srd_modify(struct fake_qp* qp, const struct ibv_qp_attr* attr, int mask);

#endif
