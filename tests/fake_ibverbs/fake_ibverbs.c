/* A fake libibverbs: a shared library exporting the verbs functions src/net/verbs_library.cpp
 * resolves, with the types and symbol versions of rdma-core's libibverbs.so.1, so the real engine
 * (dlopen, inventory, queue pairs, RDMA writes and reads, completions, teardown) runs on machines
 * without an RDMA NIC. Point PREFLIGHT_IBVERBS_LIBRARY at it (docs/testing.md).
 *
 * The devices are fake0, fake1, ... in this process. An RDMA write is a memcpy from the sender's
 * registered source into the receiver's registered destination (a read the other way), after
 * the checks a NIC makes: the queue pair is in RTS, the lkey and rkey name regions of the right
 * protection domains with the right access and cover the addresses, the peer queue pair exists,
 * is connected back and is addressed by its LID (InfiniBand) or one of its GIDs (RoCE). A write
 * that fails them completes with the status a NIC would give, so engine bugs show as errors
 * rather than as memory corruption. Completions honour IBV_SEND_SIGNALED and are held back until
 * the port's rate (speed x width) allows, and a send queue slot is freed only when a completion
 * at or past it is polled, as on real hardware: the engine's selective signalling and queue
 * accounting run for real.
 *
 * EFA mode (FAKE_IBV_EFA=1, fake_efa.c): every device is an AWS EFA device (Amazon's vendor ID,
 * node and transport type unspecified, link layer unspecified, no LID: addressed by GID, a port
 * max_msg_sz of the EFA MTU). It has no RC queue pairs (ibv_create_qp fails with EOPNOTSUPP, as
 * on EFA); SRD queue pairs come from efadv_create_qp_ex, which this library exports with
 * efadv_query_device (point PREFLIGHT_EFADV_LIBRARY at it too), and take RDMA reads and writes
 * through ibv_qp_to_qp_ex's ibv_wr_* functions only, every one signalled, each addressed by an
 * address handle (ibv_create_ah, with a GRH), the peer's queue pair number and qkey. Their
 * completions are paced like RC ones but may overtake each other, as on EFA. Memory is
 * registered only with the access the device offers.
 *
 * Configuration: environment variables read at every call, so one loaded copy serves tests that
 * each set their own. A bad value aborts with a message: a typo must not pass as the default.
 *   FAKE_IBV_DEVICES=N        devices fake0..fakeN-1 (default 1, at most 64)
 *   FAKE_IBV_PORTS=N          ports per device (default 1, at most 4)
 *   FAKE_IBV_LINK_LAYER=L     IB (default) or Ethernet (RoCE: no LID, addressed by GID); not
 *                             with FAKE_IBV_EFA=1
 *   FAKE_IBV_EFA=1            every device an EFA device (above)
 *   FAKE_IBV_EFA_OPS=LIST     EFA: the RDMA operations efadv_query_device reports, "read,write"
 *                             (default), "read", "write" or "none"
 *   FAKE_IBV_SPEED=S          SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR (default); and
 *   FAKE_IBV_WIDTH=N          lanes 1, 2, 4 (default), 8, 12: the port's rate, which
 *                             completions are paced to (NDR 4x: 400 Gb/s, SDR 4x: 10 Gb/s)
 *   FAKE_IBV_MTU=N            active MTU in bytes (default 4096)
 *   FAKE_IBV_SYSFS=DIR        the sysfs root devices name as ibdev_path (DIR/class/infiniband/
 *                             fakeN; default /sys); GIDs are read from its ports/P/gids/I files
 *                             where they exist
 *   FAKE_IBV_DOWN=LIST        ports DOWN and Disabled: fakeN (every port) or fakeN:P, by commas
 *   FAKE_IBV_OPEN_FAIL=LIST   devices whose ibv_open_device fails with EACCES
 *   FAKE_IBV_NO_KERNEL=1      ibv_get_device_list fails with ENOSYS (no RDMA in the kernel)
 *   FAKE_IBV_MAX_QP_WR=N      the device's max_qp_wr (default 32768)
 *   FAKE_IBV_COMPAT_CONTEXT=1 contexts without the extended part (no context query_port)
 *   FAKE_IBV_MODIFY_FAIL=S    ibv_modify_qp to INIT, RTR or RTS fails with ETIMEDOUT
 *   FAKE_IBV_FAIL_AT=N        the Nth work request of each queue pair completes with
 *                             IBV_WC_RETRY_EXC_ERR; an RC queue pair goes to ERR, later ones
 *                             flush (an SRD one goes on)
 *   FAKE_IBV_HANG=1           writes and reads are taken and never performed or completed
 *   FAKE_IBV_CORRUPT=1        the middle byte of every write or read arrives flipped
 *
 * Symbol versions: like rdma-core, the functions of the 1.0 ABI exist twice, the current one as
 * NAME@@IBVERBS_1.1 (what dlsym returns) and the old one as NAME@IBVERBS_1.0. The old ones here
 * abort: a loader that picked them would pass old-ABI structs to the current functions.
 *
 * State: a global registry of every object, under one mutex, with counters that tests read
 * through fake_ibv_counter() to check that a transfer tore down everything it created
 * (fake_ibverbs_internal.h holds what this file and fake_efa.c share). */
#define _GNU_SOURCE
#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_ibverbs_internal.h"

/* EFA's MTU: what an EFA port reports as its largest message (RDMA operations go beyond). */
#define EFA_MTU 8928

/* ---- Configuration ---------------------------------------------------------------------- */

void config_error(const char* name, const char* value, const char* expected) {
  fprintf(stderr, "fake_ibverbs: %s=%s: expected %s\n", name, value, expected);
  abort();
}

const char* env(const char* name) {
  const char* value = getenv(name);
  return value != NULL && value[0] != '\0' ? value : NULL;
}

long env_long(const char* name, long fallback, long min, long max) {
  const char* value = env(name);
  if (value == NULL) return fallback;
  char* end = NULL;
  errno = 0;
  const long parsed = strtol(value, &end, 10);
  if (errno != 0 || *end != '\0' || parsed < min || parsed > max) {
    char expected[64];
    snprintf(expected, sizeof expected, "a number from %ld to %ld", min, max);
    config_error(name, value, expected);
  }
  return parsed;
}

int env_flag(const char* name) {
  return (int)env_long(name, 0, 0, 1);
}

/* Whether the comma-separated list in `name` holds "fakeN" (every port of it) or "fakeN:P". */
static int env_lists(const char* name, int device, int port) {
  const char* list = env(name);
  if (list == NULL) return 0;
  char whole[32], one_port[32];
  snprintf(whole, sizeof whole, "fake%d", device);
  snprintf(one_port, sizeof one_port, "fake%d:%d", device, port);
  for (const char* item = list; *item != '\0';) {
    const char* comma = strchr(item, ',');
    const size_t length = comma != NULL ? (size_t)(comma - item) : strlen(item);
    if ((length == strlen(whole) && strncmp(item, whole, length) == 0) ||
        (port > 0 && length == strlen(one_port) && strncmp(item, one_port, length) == 0)) {
      return 1;
    }
    if (comma == NULL) break;
    item = comma + 1;
  }
  return 0;
}

static int device_count(void) {
  return (int)env_long("FAKE_IBV_DEVICES", 1, 0, MAX_DEVICES);
}

int port_count(void) {
  return (int)env_long("FAKE_IBV_PORTS", 1, 1, MAX_PORTS);
}

int efa_mode(void) {
  return env_flag("FAKE_IBV_EFA");
}

int efa_ops(void) {
  const char* value = env("FAKE_IBV_EFA_OPS");
  if (value == NULL) return FAKE_EFA_READ | FAKE_EFA_WRITE;
  if (strcmp(value, "none") == 0) return 0;
  int ops = 0;
  for (const char* item = value;;) {
    const char* comma = strchr(item, ',');
    const size_t length = comma != NULL ? (size_t)(comma - item) : strlen(item);
    if (length == 4 && strncmp(item, "read", 4) == 0) {
      ops |= FAKE_EFA_READ;
    } else if (length == 5 && strncmp(item, "write", 5) == 0) {
      ops |= FAKE_EFA_WRITE;
    } else {
      config_error("FAKE_IBV_EFA_OPS", value, "read,write, read, write or none");
    }
    if (comma == NULL) break;
    item = comma + 1;
  }
  return ops;
}

static int ethernet(void) {
  const char* value = env("FAKE_IBV_LINK_LAYER");
  if (value != NULL && efa_mode()) {
    config_error("FAKE_IBV_LINK_LAYER", value, "no link layer with FAKE_IBV_EFA=1 (EFA has none)");
  }
  if (value == NULL || strcmp(value, "IB") == 0 || strcmp(value, "InfiniBand") == 0) return 0;
  if (strcmp(value, "Ethernet") == 0 || strcmp(value, "RoCE") == 0) return 1;
  config_error("FAKE_IBV_LINK_LAYER", value, "IB or Ethernet");
  return 0;
}

/* ibv_port_attr.active_speed encodings and the nominal lane rate of each, in Gb/s. */
static const struct {
  const char* name;
  int encoding;
  double gbps;
} kSpeeds[] = {{"SDR", 1, 2.5}, {"DDR", 2, 5},   {"QDR", 4, 10},  {"FDR10", 8, 10},
               {"FDR", 16, 14}, {"EDR", 32, 25}, {"HDR", 64, 50}, {"NDR", 128, 100}};
static const struct {
  int lanes;
  int encoding;
} kWidths[] = {{1, 1}, {2, 16}, {4, 2}, {8, 4}, {12, 8}};

static int speed_index(void) {
  const char* value = env("FAKE_IBV_SPEED");
  const char* name = value != NULL ? value : "NDR";
  for (size_t i = 0; i < sizeof kSpeeds / sizeof kSpeeds[0]; ++i) {
    if (strcmp(kSpeeds[i].name, name) == 0) return (int)i;
  }
  config_error("FAKE_IBV_SPEED", value, "SDR, DDR, QDR, FDR10, FDR, EDR, HDR or NDR");
  return 0;
}

static int width_index(void) {
  const long lanes = env_long("FAKE_IBV_WIDTH", 4, 1, 12);
  for (size_t i = 0; i < sizeof kWidths / sizeof kWidths[0]; ++i) {
    if (kWidths[i].lanes == lanes) return (int)i;
  }
  config_error("FAKE_IBV_WIDTH", env("FAKE_IBV_WIDTH"), "1, 2, 4, 8 or 12");
  return 0;
}

double port_gbps(void) {
  return kSpeeds[speed_index()].gbps * kWidths[width_index()].lanes;
}

static enum ibv_mtu active_mtu(void) {
  switch (env_long("FAKE_IBV_MTU", 4096, 256, 4096)) {
    case 256:
      return IBV_MTU_256;
    case 512:
      return IBV_MTU_512;
    case 1024:
      return IBV_MTU_1024;
    case 2048:
      return IBV_MTU_2048;
    case 4096:
      return IBV_MTU_4096;
    default:
      config_error("FAKE_IBV_MTU", env("FAKE_IBV_MTU"), "256, 512, 1024, 2048 or 4096");
      return IBV_MTU_4096;
  }
}

/* FAKE_IBV_MODIFY_FAIL=INIT|RTR|RTS: the transition to that state fails with ETIMEDOUT. */
static int modify_fails(enum ibv_qp_state next) {
  const char* value = env("FAKE_IBV_MODIFY_FAIL");
  if (value == NULL) return 0;
  const char* name = next == IBV_QPS_INIT  ? "INIT"
                     : next == IBV_QPS_RTR ? "RTR"
                     : next == IBV_QPS_RTS ? "RTS"
                                           : "";
  if (strcmp(value, "INIT") != 0 && strcmp(value, "RTR") != 0 && strcmp(value, "RTS") != 0) {
    config_error("FAKE_IBV_MODIFY_FAIL", value, "INIT, RTR or RTS");
  }
  return strcmp(value, name) == 0;
}

int max_qp_wr(void) {
  return (int)env_long("FAKE_IBV_MAX_QP_WR", 32768, 1, 1 << 20);
}

/* ---- State ------------------------------------------------------------------------------ */

pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device g_devices[MAX_DEVICES];
struct fake_qp* g_qps;
static struct fake_mr* g_mrs;
static uint32_t g_next_qp_num = 0x1c0;
static uint32_t g_next_key = 0x1000;
uint32_t g_next_handle = 1;
long g_ahs;
static long g_contexts, g_pds, g_cqs, g_qp_count, g_mr_count, g_busy, g_writes, g_reads;

struct fake_context* fake_context_of(struct ibv_context* context) {
  return (struct fake_context*)((char*)context - offsetof(struct fake_context, verbs.context));
}

uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void busy(const char* what) {
  fprintf(stderr, "fake_ibverbs: %s while objects created from it are alive\n", what);
  ++g_busy;
}

/* Tests read the registry's counters: "contexts", "pds", "cqs", "qps", "mrs", "ahs" (alive now),
 * "busy" (teardowns refused because of live children), "writes" and "reads" (RDMA writes and
 * reads performed). -1 for another name. */
long fake_ibv_counter(const char* name);
long fake_ibv_counter(const char* name) {
  pthread_mutex_lock(&g_lock);
  long value = -1;
  if (strcmp(name, "contexts") == 0) value = g_contexts;
  if (strcmp(name, "pds") == 0) value = g_pds;
  if (strcmp(name, "cqs") == 0) value = g_cqs;
  if (strcmp(name, "qps") == 0) value = g_qp_count;
  if (strcmp(name, "mrs") == 0) value = g_mr_count;
  if (strcmp(name, "busy") == 0) value = g_busy;
  if (strcmp(name, "ahs") == 0) value = g_ahs;
  if (strcmp(name, "writes") == 0) value = g_writes;
  if (strcmp(name, "reads") == 0) value = g_reads;
  pthread_mutex_unlock(&g_lock);
  return value;
}

/* ---- Ports and GIDs --------------------------------------------------------------------- */

static uint16_t lid_of(int device, int port) {
  return (uint16_t)(1 + device * MAX_PORTS + (port - 1));
}

/* EFA: one GID (the device's address), one pkey. */
int gid_table_len(void) {
  return efa_mode() ? 1 : GID_TABLE_LEN;
}

static void fill_port(int device, int port, struct ibv_port_attr* attr) {
  memset(attr, 0, sizeof *attr);
  const int down = env_lists("FAKE_IBV_DOWN", device, port);
  attr->state = down ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
  attr->phys_state = down ? 3 /* Disabled */ : 5 /* LinkUp */;
  attr->max_mtu = IBV_MTU_4096;
  attr->active_mtu = active_mtu();
  attr->gid_tbl_len = gid_table_len();
  attr->max_msg_sz = MAX_MESSAGE;
  attr->pkey_tbl_len = 128;
  attr->active_speed = (uint8_t)kSpeeds[speed_index()].encoding;
  attr->active_width = (uint8_t)kWidths[width_index()].encoding;
  if (efa_mode()) {
    /* What EFA's kernel driver reports: no link layer, no LID, its MTU as the largest send. */
    attr->link_layer = IBV_LINK_LAYER_UNSPECIFIED;
    attr->max_msg_sz = EFA_MTU;
    attr->pkey_tbl_len = 1;
  } else if (ethernet()) {
    attr->link_layer = IBV_LINK_LAYER_ETHERNET;
  } else {
    attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
    attr->lid = down ? 0 : lid_of(device, port);
    attr->sm_lid = 1;
  }
}

/* "fe80:0000:...:0001" (eight groups) into `gid`; 0 when the text is not one. */
static int parse_gid(const char* text, union ibv_gid* gid) {
  const char* p = text;
  for (int group = 0; group < 8; ++group) {
    if (group > 0 && *p++ != ':') return 0;
    char* end = NULL;
    const unsigned long value = strtoul(p, &end, 16);
    if (end == p || end - p > 4) return 0;
    gid->raw[2 * group] = (uint8_t)(value >> 8);
    gid->raw[2 * group + 1] = (uint8_t)value;
    p = end;
  }
  return *p == '\0' || *p == '\n';
}

static void device_dir(int device, char* path, size_t size) {
  const char* root = env("FAKE_IBV_SYSFS");
  snprintf(path, size, "%s/class/infiniband/fake%d", root != NULL ? root : "/sys", device);
}

/* The GID table: FAKE_IBV_SYSFS's gids/INDEX files where the test wrote them (the engine reads
 * their types there, as it does on a real node), else InfiniBand's GID 0 (subnet prefix and
 * port GUID), or RoCE's usual four entries: the MAC-derived link-local address as v1 and v2,
 * then the interface's IPv4 address (10.0.D.P) as v1 and v2. */
void gid_of(int device, int port, int index, union ibv_gid* gid) {
  memset(gid, 0, sizeof *gid);
  if (env("FAKE_IBV_SYSFS") != NULL) {
    char path[512];
    device_dir(device, path, sizeof path);
    const size_t used = strlen(path);
    snprintf(path + used, sizeof path - used, "/ports/%d/gids/%d", port, index);
    FILE* file = fopen(path, "r");
    if (file != NULL) {
      char line[128] = "";
      const int ok = fgets(line, sizeof line, file) != NULL && parse_gid(line, gid);
      fclose(file);
      if (!ok) memset(gid, 0, sizeof *gid);
      return;
    }
  }
  const int link_local = ethernet() ? index == 0 || index == 1 : index == 0;
  const int ipv4 = ethernet() && (index == 2 || index == 3);
  if (link_local) {
    gid->raw[0] = 0xfe;
    gid->raw[1] = 0x80;
    gid->raw[8] = 0x02;
    gid->raw[9] = 0xc9;
    gid->raw[10] = 0x03;
    gid->raw[14] = (uint8_t)device;
    gid->raw[15] = (uint8_t)port;
  } else if (ipv4) {
    gid->raw[10] = 0xff;
    gid->raw[11] = 0xff;
    gid->raw[12] = 10;
    gid->raw[14] = (uint8_t)device;
    gid->raw[15] = (uint8_t)port;
  }
}

int gid_is_zero(const union ibv_gid* gid) {
  for (int i = 0; i < 16; ++i) {
    if (gid->raw[i] != 0) return 0;
  }
  return 1;
}

/* ---- Devices and contexts --------------------------------------------------------------- */

struct ibv_device** ibv_get_device_list(int* num_devices) {
  if (env_flag("FAKE_IBV_NO_KERNEL")) {
    /* What libibverbs says when the kernel has no RDMA support. */
    errno = ENOSYS;
    return NULL;
  }
  const int count = device_count();
  struct ibv_device** list = calloc((size_t)count + 1, sizeof *list);
  if (list == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < count; ++i) {
    struct ibv_device* device = &g_devices[i];
    /* Devices outlive the list (contexts keep pointing to them): only ever rewritten. */
    /* What libibverbs derives from EFA's kernel node type: neither a CA nor an RNIC. */
    device->node_type = efa_mode() ? IBV_NODE_UNSPECIFIED : IBV_NODE_CA;
    device->transport_type = efa_mode() ? IBV_TRANSPORT_UNSPECIFIED : IBV_TRANSPORT_IB;
    snprintf(device->name, sizeof device->name, "fake%d", i);
    snprintf(device->dev_name, sizeof device->dev_name, "uverbs%d", i);
    snprintf(device->dev_path, sizeof device->dev_path, "/sys/class/infiniband_verbs/uverbs%d", i);
    device_dir(i, device->ibdev_path, sizeof device->ibdev_path);
    list[i] = device;
  }
  pthread_mutex_unlock(&g_lock);
  if (num_devices != NULL) *num_devices = count;
  return list;
}

void ibv_free_device_list(struct ibv_device** list) {
  free(list);
}

const char* ibv_get_device_name(struct ibv_device* device) {
  return device != NULL ? device->name : NULL;
}

static int device_index(const struct ibv_device* device) {
  if (device < g_devices || device >= g_devices + MAX_DEVICES) return -1;
  return (int)(device - g_devices);
}

static int fake_post_send(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad);
static int fake_poll_cq(struct ibv_cq* cq, int num_entries, struct ibv_wc* wc);
static int fake_query_port_ex(struct ibv_context* context, uint8_t port, struct ibv_port_attr* attr,
                              size_t attr_size);

struct ibv_context* ibv_open_device(struct ibv_device* device) {
  const int index = device_index(device);
  if (index < 0) {
    errno = EINVAL;
    return NULL;
  }
  if (env_lists("FAKE_IBV_OPEN_FAIL", index, 0)) {
    /* What a node shows when /dev/infiniband/uverbsN is not accessible. */
    errno = EACCES;
    return NULL;
  }
  struct fake_context* fake = calloc(1, sizeof *fake);
  if (fake == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  fake->device = index;
  struct ibv_context* context = &fake->verbs.context;
  context->device = device;
  context->cmd_fd = -1;
  context->async_fd = -1;
  context->num_comp_vectors = 1;
  pthread_mutex_init(&context->mutex, NULL);
  context->ops.post_send = fake_post_send;
  context->ops.poll_cq = fake_poll_cq;
  /* FAKE_IBV_COMPAT_CONTEXT=1: a context without the extended part, as from providers older
   * than rdma-core 13; the engine must then use the exported ibv_query_port. */
  if (!env_flag("FAKE_IBV_COMPAT_CONTEXT")) {
    fake->verbs.sz = sizeof fake->verbs;
    fake->verbs.query_port = fake_query_port_ex;
    context->abi_compat = __VERBS_ABI_IS_EXTENDED;
  }
  pthread_mutex_lock(&g_lock);
  ++g_contexts;
  pthread_mutex_unlock(&g_lock);
  return context;
}

int ibv_close_device(struct ibv_context* context) {
  struct fake_context* fake = fake_context_of(context);
  pthread_mutex_lock(&g_lock);
  if (fake->children > 0) {
    /* The kernel would clean up; here the children keep pointing to it, so it stays. */
    busy("ibv_close_device");
    pthread_mutex_unlock(&g_lock);
    return 0;
  }
  --g_contexts;
  pthread_mutex_unlock(&g_lock);
  pthread_mutex_destroy(&context->mutex);
  free(fake);
  return 0;
}

int ibv_query_device(struct ibv_context* context, struct ibv_device_attr* attr) {
  const int device = fake_context_of(context)->device;
  memset(attr, 0, sizeof *attr);
  snprintf(attr->fw_ver, sizeof attr->fw_ver, "28.39.1002");
  attr->node_guid = 0x0002c90300a00000ull + (uint64_t)device;
  attr->sys_image_guid = attr->node_guid;
  attr->max_mr_size = UINT64_MAX;
  attr->page_size_cap = 0xfffffffffffff000ull;
  attr->vendor_id = efa_mode() ? 0x1d0f /* Amazon */ : 0x02c9;
  attr->vendor_part_id = efa_mode() ? 0xefa1 : 4129; /* an EFA of p4d; a ConnectX-7 */
  attr->max_qp = 131072;
  attr->max_qp_wr = max_qp_wr();
  attr->max_sge = MAX_SEND_SGE;
  attr->max_cq = 16777216;
  attr->max_cqe = MAX_CQE;
  attr->max_mr = 16777216;
  attr->max_pd = 16777216;
  attr->max_qp_rd_atom = efa_mode() ? 0 : 16; /* EFA: no RC, so no RC reads */
  attr->max_qp_init_rd_atom = efa_mode() ? 0 : 16;
  attr->max_pkeys = efa_mode() ? 1 : 128;
  attr->phys_port_cnt = (uint8_t)port_count();
  return 0;
}

int valid_port(uint8_t port) {
  return port >= 1 && port <= port_count();
}

/* The context's query_port: copies what the caller's struct has room for, zero-fills the rest
 * (a caller built against a newer verbs.h). */
static int fake_query_port_ex(struct ibv_context* context, uint8_t port, struct ibv_port_attr* attr,
                              size_t attr_size) {
  if (!valid_port(port)) return EINVAL;
  struct ibv_port_attr full;
  fill_port(fake_context_of(context)->device, port, &full);
  memset(attr, 0, attr_size);
  memcpy(attr, &full, attr_size < sizeof full ? attr_size : sizeof full);
  return 0;
}

/* The exported one fills the struct of the 1.1 ABI only: everything before port_cap_flags2. */
int(ibv_query_port)(struct ibv_context* context, uint8_t port,
                    struct _compat_ibv_port_attr* compat_attr) {
  if (!valid_port(port)) return EINVAL;
  struct ibv_port_attr full;
  fill_port(fake_context_of(context)->device, port, &full);
  memcpy(compat_attr, &full, offsetof(struct ibv_port_attr, port_cap_flags2));
  return 0;
}

int ibv_query_gid(struct ibv_context* context, uint8_t port, int index, union ibv_gid* gid) {
  if (!valid_port(port) || index < 0 || index >= gid_table_len()) return EINVAL;
  gid_of(fake_context_of(context)->device, port, index, gid);
  return 0;
}

/* ---- Protection domains and memory regions ---------------------------------------------- */

struct ibv_pd* ibv_alloc_pd(struct ibv_context* context) {
  struct fake_pd* fake = calloc(1, sizeof *fake);
  if (fake == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  fake->pd.context = context;
  pthread_mutex_lock(&g_lock);
  fake->pd.handle = g_next_handle++;
  ++fake_context_of(context)->children;
  ++g_pds;
  pthread_mutex_unlock(&g_lock);
  return &fake->pd;
}

int ibv_dealloc_pd(struct ibv_pd* pd) {
  struct fake_pd* fake = (struct fake_pd*)pd;
  pthread_mutex_lock(&g_lock);
  if (fake->children > 0) {
    busy("ibv_dealloc_pd");
    pthread_mutex_unlock(&g_lock);
    return EBUSY;
  }
  --fake_context_of(pd->context)->children;
  --g_pds;
  pthread_mutex_unlock(&g_lock);
  free(fake);
  return 0;
}

/* Whether the process can read [address, address + length): host memory, not a GPU buffer's
 * device address, which a NIC reaches only through dma-buf or nvidia-peermem. A pipe makes the
 * kernel try (EFAULT where it cannot). */
static int readable(const void* address, size_t length) {
  int fds[2];
  if (pipe(fds) != 0) return 1; /* cannot tell: let it through */
  const char* ends[2] = {address, (const char*)address + length - 1};
  int ok = 1;
  for (int i = 0; i < 2 && ok; ++i) {
    char byte;
    if (write(fds[1], ends[i], 1) != 1) {
      ok = 0;
    } else if (read(fds[0], &byte, 1) != 1) {
      ok = 0;
    }
  }
  close(fds[0]);
  close(fds[1]);
  return ok;
}

static struct ibv_mr* register_memory(struct ibv_pd* pd, void* address, size_t length,
                                      uint64_t iova, int access) {
  /* Remote write without local write is refused by every provider. */
  const int remote_write = (access & IBV_ACCESS_REMOTE_WRITE) != 0;
  if (pd == NULL || length == 0 || (remote_write && !(access & IBV_ACCESS_LOCAL_WRITE))) {
    errno = EINVAL;
    return NULL;
  }
  if (efa_mode()) {
    /* EFA's kernel driver refuses an access the device does not offer. */
    const int ops = efa_ops();
    const int offered = IBV_ACCESS_LOCAL_WRITE |
                        (ops & FAKE_EFA_READ ? IBV_ACCESS_REMOTE_READ : 0) |
                        (ops & FAKE_EFA_WRITE ? IBV_ACCESS_REMOTE_WRITE : 0);
    if (access & ~offered) {
      errno = EOPNOTSUPP;
      return NULL;
    }
  }
  if (!readable(address, length)) {
    errno = EFAULT;
    return NULL;
  }
  struct fake_mr* fake = calloc(1, sizeof *fake);
  if (fake == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  fake->mr.context = pd->context;
  fake->mr.pd = pd;
  fake->mr.addr = address;
  fake->mr.length = length;
  fake->iova = iova;
  fake->access = access;
  pthread_mutex_lock(&g_lock);
  fake->mr.handle = g_next_handle++;
  /* Different keys (mlx5's are equal), so an lkey used as an rkey or the other way fails. */
  fake->mr.lkey = g_next_key++;
  fake->mr.rkey = g_next_key++;
  fake->next = g_mrs;
  g_mrs = fake;
  ++((struct fake_pd*)pd)->children;
  ++g_mr_count;
  pthread_mutex_unlock(&g_lock);
  return &fake->mr;
}

struct ibv_mr*(ibv_reg_mr)(struct ibv_pd* pd, void* address, size_t length, int access) {
  return register_memory(pd, address, length, (uint64_t)(uintptr_t)address, access);
}

struct ibv_mr* ibv_reg_mr_iova2(struct ibv_pd* pd, void* address, size_t length, uint64_t iova,
                                unsigned int access) {
  return register_memory(pd, address, length, iova, (int)access);
}

/* GPU memory cannot be reached by memcpy, so dma-buf registration is refused, after the checks
 * the kernel makes on the range, so an engine that gets them wrong sees EINVAL. */
struct ibv_mr* ibv_reg_dmabuf_mr(struct ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova,
                                 int fd, int access) {
  (void)iova;
  (void)access;
  if (pd == NULL || fd < 0) {
    errno = EBADF;
    return NULL;
  }
  const off_t size = lseek(fd, 0, SEEK_END);
  if (length == 0 || (size > 0 && (offset > (uint64_t)size || length > (uint64_t)size - offset))) {
    errno = EINVAL;
    return NULL;
  }
  errno = EOPNOTSUPP;
  return NULL;
}

int ibv_dereg_mr(struct ibv_mr* mr) {
  struct fake_mr* fake = (struct fake_mr*)mr;
  pthread_mutex_lock(&g_lock);
  for (struct fake_mr** link = &g_mrs; *link != NULL; link = &(*link)->next) {
    if (*link == fake) {
      *link = fake->next;
      break;
    }
  }
  --((struct fake_pd*)mr->pd)->children;
  --g_mr_count;
  pthread_mutex_unlock(&g_lock);
  free(fake);
  return 0;
}

/* ---- Completion queues and queue pairs -------------------------------------------------- */

struct ibv_cq* ibv_create_cq(struct ibv_context* context, int cqe, void* cq_context,
                             struct ibv_comp_channel* channel, int comp_vector) {
  (void)comp_vector;
  if (cqe < 1 || cqe > MAX_CQE) {
    errno = EINVAL;
    return NULL;
  }
  struct fake_cq* fake = calloc(1, sizeof *fake);
  struct fake_cqe* entries = calloc((size_t)cqe, sizeof *entries);
  if (fake == NULL || entries == NULL) {
    free(fake);
    free(entries);
    errno = ENOMEM;
    return NULL;
  }
  fake->cq.context = context;
  fake->cq.channel = channel;
  fake->cq.cq_context = cq_context;
  fake->cq.cqe = cqe;
  pthread_mutex_init(&fake->cq.mutex, NULL);
  pthread_cond_init(&fake->cq.cond, NULL);
  fake->capacity = cqe;
  fake->entries = entries;
  pthread_mutex_lock(&g_lock);
  fake->cq.handle = g_next_handle++;
  ++fake_context_of(context)->children;
  ++g_cqs;
  pthread_mutex_unlock(&g_lock);
  return &fake->cq;
}

int ibv_destroy_cq(struct ibv_cq* cq) {
  struct fake_cq* fake = (struct fake_cq*)cq;
  pthread_mutex_lock(&g_lock);
  if (fake->children > 0) {
    busy("ibv_destroy_cq");
    pthread_mutex_unlock(&g_lock);
    return EBUSY;
  }
  --fake_context_of(cq->context)->children;
  --g_cqs;
  pthread_mutex_unlock(&g_lock);
  pthread_mutex_destroy(&cq->mutex);
  pthread_cond_destroy(&cq->cond);
  free(fake->entries);
  free(fake);
  return 0;
}

struct fake_qp* new_qp(struct ibv_pd* pd, struct ibv_cq* send_cq, struct ibv_cq* recv_cq,
                       void* qp_context, enum ibv_qp_type type, uint32_t max_send_wr) {
  struct fake_qp* fake = calloc(1, sizeof *fake);
  if (fake == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  struct ibv_qp* qp = &fake->qp;
  qp->context = pd->context;
  qp->qp_context = qp_context;
  qp->pd = pd;
  qp->send_cq = send_cq;
  qp->recv_cq = recv_cq;
  qp->state = IBV_QPS_RESET;
  qp->qp_type = type;
  pthread_mutex_init(&qp->mutex, NULL);
  pthread_cond_init(&qp->cond, NULL);
  fake->device = fake_context_of(pd->context)->device;
  fake->max_send_wr = max_send_wr;
  pthread_mutex_lock(&g_lock);
  qp->handle = g_next_handle++;
  qp->qp_num = g_next_qp_num++ & 0xffffff;
  fake->next = g_qps;
  g_qps = fake;
  ++((struct fake_pd*)pd)->children;
  ++((struct fake_cq*)send_cq)->children;
  ++((struct fake_cq*)recv_cq)->children;
  ++g_qp_count;
  pthread_mutex_unlock(&g_lock);
  return fake;
}

struct ibv_qp* ibv_create_qp(struct ibv_pd* pd, struct ibv_qp_init_attr* init) {
  const struct ibv_qp_cap* cap = &init->cap;
  const uint32_t max_wr = (uint32_t)max_qp_wr();
  if (pd == NULL || init->send_cq == NULL || init->recv_cq == NULL ||
      init->send_cq->context != pd->context || init->recv_cq->context != pd->context ||
      init->srq != NULL || cap->max_send_wr < 1 || cap->max_send_wr > max_wr ||
      cap->max_recv_wr > max_wr || cap->max_send_sge > MAX_SEND_SGE ||
      cap->max_recv_sge > MAX_SEND_SGE) {
    errno = EINVAL;
    return NULL;
  }
  /* Only what RDMA between two queue pairs needs; EFA has no RC queue pairs at all (its kernel
   * driver refuses every type but UD and SRD). */
  if (init->qp_type != IBV_QPT_RC || efa_mode()) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  struct fake_qp* fake =
      new_qp(pd, init->send_cq, init->recv_cq, init->qp_context, init->qp_type, cap->max_send_wr);
  return fake != NULL ? &fake->qp : NULL;
}

/* Drops the completions of `qp` still queued on `cq`, as providers do when a queue pair goes. */
static void drop_completions(struct fake_cq* cq, const struct fake_qp* qp) {
  int kept = 0;
  for (int i = 0; i < cq->count; ++i) {
    const struct fake_cqe entry = cq->entries[(cq->head + i) % cq->capacity];
    if (entry.qp != qp) cq->entries[(cq->head + kept++) % cq->capacity] = entry;
  }
  cq->count = kept;
}

int ibv_destroy_qp(struct ibv_qp* qp) {
  struct fake_qp* fake = (struct fake_qp*)qp;
  pthread_mutex_lock(&g_lock);
  for (struct fake_qp** link = &g_qps; *link != NULL; link = &(*link)->next) {
    if (*link == fake) {
      *link = fake->next;
      break;
    }
  }
  drop_completions((struct fake_cq*)qp->send_cq, fake);
  if (qp->recv_cq != qp->send_cq) drop_completions((struct fake_cq*)qp->recv_cq, fake);
  --((struct fake_pd*)qp->pd)->children;
  --((struct fake_cq*)qp->send_cq)->children;
  --((struct fake_cq*)qp->recv_cq)->children;
  --g_qp_count;
  pthread_mutex_unlock(&g_lock);
  pthread_mutex_destroy(&qp->mutex);
  pthread_cond_destroy(&qp->cond);
  free(fake->pending);
  free(fake);
  return 0;
}

/* The attributes each transition of an RC queue pair requires (IB spec, table 91; the kernel
 * refuses a transition without them). */
static int required_mask(enum ibv_qp_state from, enum ibv_qp_state to) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return IBV_QP_STATE;
  if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
    return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  }
  if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
    return IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
           IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return -1; /* not a transition a queue pair can make */
}

int ibv_modify_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask) {
  struct fake_qp* fake = (struct fake_qp*)qp;
  if (!(mask & IBV_QP_STATE)) return EINVAL;
  const enum ibv_qp_state next = attr->qp_state;
  if (modify_fails(next)) return ETIMEDOUT;
  pthread_mutex_lock(&g_lock);
  if (fake->srd) {
    const int srd_code = srd_modify(fake, attr, mask);
    pthread_mutex_unlock(&g_lock);
    return srd_code;
  }
  const int required = required_mask(qp->state, next);
  int code = required < 0 || (mask & required) != required ? EINVAL : 0;
  if (code == 0 && next == IBV_QPS_INIT) {
    if (!valid_port(attr->port_num) || attr->pkey_index >= 128) {
      code = EINVAL;
    } else {
      fake->port = attr->port_num;
      fake->access = (int)attr->qp_access_flags;
    }
  }
  if (code == 0 && next == IBV_QPS_RTR) {
    struct ibv_port_attr port;
    fill_port(fake->device, fake->port, &port);
    const struct ibv_ah_attr* ah = &attr->ah_attr;
    union ibv_gid source_gid;
    if (ah->is_global) gid_of(fake->device, fake->port, ah->grh.sgid_index, &source_gid);
    if (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > port.active_mtu ||
        ah->port_num != fake->port) {
      code = EINVAL;
    } else if (port.link_layer == IBV_LINK_LAYER_ETHERNET &&
               (!ah->is_global || ah->grh.sgid_index >= GID_TABLE_LEN ||
                gid_is_zero(&source_gid))) {
      /* RoCE is routed by GID: the source GID must be a valid entry of this port. */
      code = EINVAL;
    } else {
      fake->path_mtu = attr->path_mtu;
      fake->dest_qp_num = attr->dest_qp_num & 0xffffff;
      fake->ah = *ah;
    }
  }
  if (code == 0) {
    qp->state = next;
    if (next == IBV_QPS_RESET) fake->posted = fake->retired = 0;
  }
  pthread_mutex_unlock(&g_lock);
  return code;
}

int ibv_query_qp(struct ibv_qp* qp, struct ibv_qp_attr* attr, int mask,
                 struct ibv_qp_init_attr* init) {
  (void)mask;
  const struct fake_qp* fake = (const struct fake_qp*)qp;
  memset(attr, 0, sizeof *attr);
  memset(init, 0, sizeof *init);
  pthread_mutex_lock(&g_lock);
  attr->qp_state = qp->state;
  attr->cur_qp_state = qp->state;
  attr->path_mtu = fake->path_mtu;
  attr->dest_qp_num = fake->dest_qp_num;
  attr->qp_access_flags = (unsigned)fake->access;
  attr->port_num = (uint8_t)fake->port;
  attr->ah_attr = fake->ah;
  attr->cap.max_send_wr = fake->max_send_wr;
  attr->cap.max_send_sge = MAX_SEND_SGE;
  pthread_mutex_unlock(&g_lock);
  init->send_cq = qp->send_cq;
  init->recv_cq = qp->recv_cq;
  init->qp_type = qp->qp_type;
  init->cap = attr->cap;
  return 0;
}

/* ---- Work requests and completions ------------------------------------------------------ */

static struct fake_mr* find_mr(int by_rkey, uint32_t key) {
  for (struct fake_mr* mr = g_mrs; mr != NULL; mr = mr->next) {
    if ((by_rkey ? mr->mr.rkey : mr->mr.lkey) == key) return mr;
  }
  return NULL;
}

/* Where [iova, iova + length) of `mr` is in this process; null when the range is not all in it.
 */
static unsigned char* host_address(const struct fake_mr* mr, uint64_t iova, uint64_t length) {
  if (iova < mr->iova || iova - mr->iova > mr->mr.length ||
      length > mr->mr.length - (iova - mr->iova)) {
    return NULL;
  }
  return (unsigned char*)mr->mr.addr + (iova - mr->iova);
}

/* Why the peer of `qp` cannot be reached, or null: what a NIC finds out only by sending and
 * getting no answer, so it ends as IBV_WC_RETRY_EXC_ERR. */
static const char* unreachable(const struct fake_qp* qp, const struct fake_qp** peer_out) {
  const struct fake_qp* peer = NULL;
  for (const struct fake_qp* other = g_qps; other != NULL; other = other->next) {
    if (other->qp.qp_num == qp->dest_qp_num) peer = other;
  }
  *peer_out = peer;
  if (peer == NULL) return "no queue pair has the destination QP number";
  if (peer->qp.state != IBV_QPS_RTR && peer->qp.state != IBV_QPS_RTS) {
    return "the destination queue pair is not ready to receive (RTR)";
  }
  if (peer->dest_qp_num != qp->qp.qp_num) {
    return "the destination queue pair is connected to another one";
  }
  if (ethernet()) {
    if (!qp->ah.is_global) return "RoCE without a GRH";
    for (int index = 0; index < GID_TABLE_LEN; ++index) {
      union ibv_gid gid;
      gid_of(peer->device, peer->port, index, &gid);
      if (!gid_is_zero(&gid) && memcmp(&gid, &qp->ah.grh.dgid, sizeof gid) == 0) return NULL;
    }
    return "the destination GID is not one of the destination port's";
  }
  if (qp->ah.dlid != lid_of(peer->device, peer->port)) {
    return "the destination LID is not the destination port's";
  }
  return NULL;
}

enum ibv_wc_status injected_failure(uint64_t sequence) {
  const long fail_at = env_long("FAKE_IBV_FAIL_AT", 0, 0, 1L << 40);
  return fail_at > 0 && sequence == (uint64_t)fail_at ? IBV_WC_RETRY_EXC_ERR : IBV_WC_SUCCESS;
}

enum ibv_wc_status move_bytes(struct fake_qp* qp, const struct fake_qp* peer, int read,
                              uint32_t rkey, uint64_t remote_addr, const struct ibv_sge* sges,
                              int num_sge, uint64_t* bytes) {
  *bytes = 0;
  uint64_t length = 0;
  for (int i = 0; i < num_sge; ++i) length += sges[i].length;
  if (length > MAX_MESSAGE) return IBV_WC_LOC_LEN_ERR;
  /* The peer's region first: the responding NIC checks the rkey against its own queue pair's
   * protection domain and the access the region grants. */
  const struct fake_mr* remote_mr = find_mr(1, rkey);
  const int needed = read ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE;
  unsigned char* remote =
      remote_mr != NULL && remote_mr->mr.pd == peer->qp.pd && (remote_mr->access & needed)
          ? host_address(remote_mr, remote_addr, length)
          : NULL;
  if (remote == NULL && length > 0) return IBV_WC_REM_ACCESS_ERR;
  unsigned char* middle = NULL; /* where the message's middle byte arrived */
  uint64_t offset = 0;
  for (int i = 0; i < num_sge && length > 0; ++i) {
    const struct ibv_sge* sge = &sges[i];
    const struct fake_mr* local_mr = find_mr(0, sge->lkey);
    /* A read lands in the local region: it must allow local writes. */
    unsigned char* local = local_mr != NULL && local_mr->mr.pd == qp->qp.pd &&
                                   (!read || (local_mr->access & IBV_ACCESS_LOCAL_WRITE))
                               ? host_address(local_mr, sge->addr, sge->length)
                               : NULL;
    if (local == NULL) return IBV_WC_LOC_PROT_ERR;
    unsigned char* arriving = read ? local : remote + offset;
    memmove(arriving, read ? remote + offset : local, sge->length);
    if (length / 2 >= offset && length / 2 < offset + sge->length) {
      middle = arriving + (length / 2 - offset);
    }
    offset += sge->length;
  }
  /* FAKE_IBV_CORRUPT=1: the middle byte of every write or read arrives flipped. */
  if (middle != NULL && env_flag("FAKE_IBV_CORRUPT")) *middle ^= 0x5a;
  *bytes = length;
  ++*(read ? &g_reads : &g_writes);
  return IBV_WC_SUCCESS;
}

/* The outcome of one RDMA write or read on an RC queue pair: performs it (or not) and says how
 * it completes. */
static enum ibv_wc_status rc_one(struct fake_qp* qp, const struct ibv_send_wr* wr,
                                 uint64_t sequence, uint64_t* bytes) {
  *bytes = 0;
  if (qp->qp.state == IBV_QPS_ERR) return IBV_WC_WR_FLUSH_ERR;
  const enum ibv_wc_status injected = injected_failure(sequence);
  if (injected != IBV_WC_SUCCESS) return injected;
  const struct fake_qp* peer = NULL;
  const char* why = unreachable(qp, &peer);
  if (why != NULL) {
    if (!qp->reported) {
      fprintf(stderr, "fake_ibverbs: QP 0x%x cannot reach QP 0x%x: %s\n", qp->qp.qp_num,
              qp->dest_qp_num, why);
      qp->reported = 1;
    }
    return IBV_WC_RETRY_EXC_ERR;
  }
  return move_bytes(qp, peer, wr->opcode == IBV_WR_RDMA_READ, wr->wr.rdma.rkey,
                    wr->wr.rdma.remote_addr, wr->sg_list, wr->num_sge, bytes);
}

void push_completion(struct fake_cq* cq, struct fake_qp* qp, uint64_t wr_id,
                     enum ibv_wc_opcode opcode, enum ibv_wc_status status, uint64_t bytes,
                     uint64_t sequence, uint64_t ready_ns) {
  if (cq->count == cq->capacity) {
    if (!cq->overflowed) fprintf(stderr, "fake_ibverbs: completion queue overflow\n");
    cq->overflowed = 1;
    return;
  }
  /* Completions are polled in queue order: never visible before the one queued ahead. */
  if (cq->count > 0) {
    const uint64_t last = cq->entries[(cq->head + cq->count - 1) % cq->capacity].ready_ns;
    if (ready_ns < last) ready_ns = last;
  }
  struct fake_cqe* entry = &cq->entries[(cq->head + cq->count) % cq->capacity];
  memset(entry, 0, sizeof *entry);
  entry->wc.wr_id = wr_id;
  entry->wc.status = status;
  entry->wc.opcode = opcode;
  entry->wc.byte_len = (uint32_t)bytes;
  entry->wc.qp_num = qp->qp.qp_num;
  entry->wc.vendor_err = status == IBV_WC_SUCCESS ? 0 : 0x81;
  entry->qp = qp;
  entry->sequence = sequence;
  entry->ready_ns = ready_ns;
  ++cq->count;
  /* SRD: the successful completion of every second request overtakes the one before it where
   * that is still queued (2, 1, 4, 3, ...), as EFA's may; the visibility times stay in queue
   * order. A failure keeps its place, so it is seen before the flushes it causes. */
  if (qp->srd && sequence % 2 == 0 && cq->count >= 2 && status == IBV_WC_SUCCESS) {
    struct fake_cqe* before = &cq->entries[(cq->head + cq->count - 2) % cq->capacity];
    if (before->qp == qp && before->sequence + 1 == sequence &&
        before->wc.status == IBV_WC_SUCCESS) {
      const struct fake_cqe overtaken = *before;
      before->wc = entry->wc;
      before->sequence = entry->sequence;
      entry->wc = overtaken.wc;
      entry->sequence = overtaken.sequence;
    }
  }
}

uint64_t wire_time(struct fake_qp* qp, uint64_t bytes) {
  const uint64_t now = now_ns();
  const uint64_t start = qp->wire_free_ns > now ? qp->wire_free_ns : now;
  qp->wire_free_ns = start + (uint64_t)((double)bytes * 8.0 / port_gbps());
  return qp->wire_free_ns;
}

static int fake_post_send(struct ibv_qp* qp, struct ibv_send_wr* wr, struct ibv_send_wr** bad) {
  struct fake_qp* fake = (struct fake_qp*)qp;
  struct fake_cq* cq = (struct fake_cq*)qp->send_cq;
  int code = 0;
  pthread_mutex_lock(&g_lock);
  /* FAKE_IBV_HANG=1: the link takes the requests and never answers. */
  const int hang = env_flag("FAKE_IBV_HANG");
  for (; wr != NULL; wr = wr->next) {
    const int rdma = wr->opcode == IBV_WR_RDMA_WRITE || wr->opcode == IBV_WR_RDMA_READ;
    if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR) {
      code = EINVAL;
    } else if (fake->srd || !rdma || wr->num_sge < 0 || wr->num_sge > MAX_SEND_SGE ||
               (wr->send_flags & IBV_SEND_INLINE)) {
      /* EFA's ibv_post_send takes sends only: its RDMA goes through ibv_wr_*. */
      code = EINVAL;
    } else if (fake->posted - fake->retired >= fake->max_send_wr) {
      code = ENOMEM; /* the send queue is full */
    }
    if (code != 0) break;
    const uint64_t sequence = ++fake->posted;
    if (hang) continue;
    uint64_t bytes = 0;
    const enum ibv_wc_status status = rc_one(fake, wr, sequence, &bytes);
    if (status != IBV_WC_SUCCESS) qp->state = IBV_QPS_ERR;
    /* The wire: each request takes its bytes at the port's rate, after the one before it. */
    const uint64_t ready = wire_time(fake, bytes);
    /* Failed and flushed requests complete whether or not they asked to. */
    if ((wr->send_flags & IBV_SEND_SIGNALED) || status != IBV_WC_SUCCESS) {
      const enum ibv_wc_opcode opcode =
          wr->opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE;
      push_completion(cq, fake, wr->wr_id, opcode, status, bytes, sequence, ready);
    }
  }
  pthread_mutex_unlock(&g_lock);
  if (code != 0 && bad != NULL) *bad = wr;
  return code;
}

static int fake_poll_cq(struct ibv_cq* cq, int num_entries, struct ibv_wc* wc) {
  struct fake_cq* fake = (struct fake_cq*)cq;
  pthread_mutex_lock(&g_lock);
  if (fake->overflowed) {
    pthread_mutex_unlock(&g_lock);
    return -1;
  }
  const uint64_t now = now_ns();
  int polled = 0;
  while (polled < num_entries && fake->count > 0) {
    const struct fake_cqe* entry = &fake->entries[fake->head];
    if (entry->ready_ns > now) break;
    wc[polled++] = entry->wc;
    if (entry->qp->srd) {
      /* Every SRD request completes, in any order: each completion frees one slot. */
      ++entry->qp->retired;
    } else if (entry->qp->retired < entry->sequence) {
      /* RC completions are in order: every request up to this one has left the send queue. */
      entry->qp->retired = entry->sequence;
    }
    fake->head = (fake->head + 1) % fake->capacity;
    --fake->count;
  }
  pthread_mutex_unlock(&g_lock);
  return polled;
}

/* ---- Strings ---------------------------------------------------------------------------- */

const char* ibv_wc_status_str(enum ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS:
      return "success";
    case IBV_WC_LOC_LEN_ERR:
      return "local length error";
    case IBV_WC_LOC_QP_OP_ERR:
      return "local QP operation error";
    case IBV_WC_LOC_PROT_ERR:
      return "local protection error";
    case IBV_WC_WR_FLUSH_ERR:
      return "Work Request Flushed Error";
    case IBV_WC_REM_ACCESS_ERR:
      return "remote access error";
    case IBV_WC_RETRY_EXC_ERR:
      return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "RNR retry counter exceeded";
    case IBV_WC_GENERAL_ERR:
      return "general error";
    default:
      return "unknown";
  }
}

const char* ibv_port_state_str(enum ibv_port_state state) {
  switch (state) {
    case IBV_PORT_NOP:
      return "no state change (NOP)";
    case IBV_PORT_DOWN:
      return "down";
    case IBV_PORT_INIT:
      return "init";
    case IBV_PORT_ARMED:
      return "armed";
    case IBV_PORT_ACTIVE:
      return "active";
    case IBV_PORT_ACTIVE_DEFER:
      return "active defer";
    default:
      return "invalid state";
  }
}

/* ---- The IBVERBS_1.0 ABI ---------------------------------------------------------------- */

static void old_abi(const char* name) {
  fprintf(stderr, "fake_ibverbs: %s@IBVERBS_1.0 (the pre-1.1 ABI) was called\n", name);
  abort();
}

#define OLD_ABI(name)              \
  void fake_ibv_old_##name(void);  \
  void fake_ibv_old_##name(void) { \
    old_abi(#name);                \
  }                                \
  __asm__(".symver fake_ibv_old_" #name "," #name "@IBVERBS_1.0");

OLD_ABI(ibv_get_device_list)
OLD_ABI(ibv_free_device_list)
OLD_ABI(ibv_get_device_name)
OLD_ABI(ibv_open_device)
OLD_ABI(ibv_close_device)
OLD_ABI(ibv_query_device)
OLD_ABI(ibv_query_port)
OLD_ABI(ibv_query_gid)
OLD_ABI(ibv_alloc_pd)
OLD_ABI(ibv_dealloc_pd)
OLD_ABI(ibv_reg_mr)
OLD_ABI(ibv_dereg_mr)
OLD_ABI(ibv_create_cq)
OLD_ABI(ibv_destroy_cq)
OLD_ABI(ibv_create_qp)
OLD_ABI(ibv_destroy_qp)
OLD_ABI(ibv_modify_qp)
OLD_ABI(ibv_query_qp)
OLD_ABI(ibv_create_ah)
OLD_ABI(ibv_destroy_ah)
