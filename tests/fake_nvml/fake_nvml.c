/* A fake NVML: a shared library exporting the NVML functions src/gpu/nvml_library.cpp resolves,
 * with the ABI declared there, so the real loader (dlopen, dlsym, every query, error handling)
 * and the real binary run end to end on machines without a GPU or driver. Point
 * PREFLIGHT_NVML_LIBRARY at it and describe the GPUs in a file named by FAKE_NVML_CONFIG.
 *
 * The config is `key=value` lines ('#' starts a comment); keys and their defaults are listed
 * in docs/testing.md. Without FAKE_NVML_CONFIG there is one healthy H100 SXM. A config that
 * cannot be read or has an unknown key or bad value makes nvmlInit fail with
 * NVML_ERROR_UNKNOWN and a message on stderr, so a typo never passes silently.
 *
 * State: the parsed config is the library's only mutable state. nvmlInit loads it, nvmlShutdown
 * frees it; like NVML's, init is reference-counted (not thread-safe: preflight initializes NVML
 * from one thread at a time). Device handles point into the loaded config. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* clang-format off */
/* nvmlReturn_t values (nvml.h) */
enum { OK = 0, E_UNINITIALIZED = 1, E_INVALID_ARGUMENT = 2, E_NOT_SUPPORTED = 3,
       E_NO_PERMISSION = 4, E_NOT_FOUND = 6, E_INSUFFICIENT_SIZE = 7, E_DRIVER_NOT_LOADED = 9,
       E_TIMEOUT = 10, E_GPU_IS_LOST = 15, E_UNKNOWN = 999 };
/* Config names and nvmlErrorString texts. */
static const struct { int code; const char *key, *text; } kErrors[] = {
    {OK, "success", "Success"}, {E_UNINITIALIZED, "uninitialized", "Uninitialized"},
    {E_INVALID_ARGUMENT, "invalid_argument", "Invalid Argument"},
    {E_NOT_SUPPORTED, "not_supported", "Not Supported"},
    {E_NO_PERMISSION, "no_permission", "Insufficient Permissions"},
    {E_NOT_FOUND, "not_found", "Not Found"},
    {E_INSUFFICIENT_SIZE, "insufficient_size", "Insufficient Size"},
    {E_DRIVER_NOT_LOADED, "driver_not_loaded", "Driver Not Loaded"},
    {E_TIMEOUT, "timeout", "Timeout"}, {E_GPU_IS_LOST, "gpu_lost", "GPU is lost"},
    {E_UNKNOWN, "unknown", "Unknown Error"}};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The structs nvml_library.cpp declares (nvml.h layouts). */
typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;
typedef struct {
  unsigned long long total, free, used;
} nvmlMemory_t;
/* nvmlFieldValue_t: 40 bytes. */
typedef struct {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
  } value;
} nvmlFieldValue_t;
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes");
#define FI_DEV_GET_GPU_RECOVERY_ACTION 230
#define VALUE_TYPE_UNSIGNED_INT 1
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#define MAX_GPUS 64
#define MAX_XID_EVENTS 16
#define NVLINK_MAX_LINKS 18

/* Numeric readings, each `gpuN.<key>`. */
enum { V_DEVICE_ID, V_MEMORY_TOTAL, V_MIG, V_ECC, V_PERSISTENCE, V_ECC_UNC_VOL, V_ECC_UNC_AGG,
       V_ECC_CORR_VOL, V_RETIRED_PENDING, V_REMAP_PENDING, V_REMAP_FAILED, V_CLOCKS,
       V_TEMPERATURE, V_PCIE_GEN, V_PCIE_MAX_LINK_GEN, V_PCIE_MAX_GPU_GEN, V_PCIE_WIDTH,
       V_PCIE_MAX_WIDTH, V_NVLINK_LINKS, V_NVLINK_ACTIVE, V_PROCESSES, V_PROCESS_MIB,
       V_INCLUDE_SELF, V_SM_CLOCK, V_POWER, V_NVLINK_SWITCH, V_RECOVERY_ACTION, V_PCIE_REPLAY,
       V_NVLINK_REPLAY, V_NVLINK_RECOVERY, V_NVLINK_CRC_FLIT, V_NVLINK_CRC_DATA,
       V_ECC_CORR_STEP, V_PCIE_REPLAY_STEP, V_NVLINK_CRC_STEP, V_COUNT };
static const struct { const char* key; unsigned long long value; } kValues[V_COUNT] = {
    {"device_id", 0x2330}, {"memory_total", 85520809984ULL}, {"mig", 0}, {"ecc", 1},
    {"persistence", 1}, {"ecc_uncorrected_volatile", 0}, {"ecc_uncorrected_aggregate", 0},
    {"ecc_corrected_volatile", 0}, {"retired_pages_pending", 0}, {"row_remap_pending", 0},
    {"row_remap_failed", 0}, {"clocks_event_reasons", 0x1 /* GPU idle */}, {"temperature", 35},
    {"pcie_gen", 5}, {"pcie_max_link_gen", 5}, {"pcie_max_gpu_gen", 5}, {"pcie_width", 16},
    {"pcie_max_width", 16}, {"nvlink_links", 18}, {"nvlink_active", 18}, {"processes", 0},
    {"process_memory_mib", 512}, {"include_self", 0}, {"sm_clock", 1980 /* MHz */},
    {"power", 72000 /* mW */}, {"nvlink_switch", 0}, {"recovery_action", 0 /* none */},
    {"pcie_replay", 0}, {"nvlink_replay", 0}, {"nvlink_recovery", 0}, {"nvlink_crc_flit", 0},
    {"nvlink_crc_data", 0},
    /* Counters that climb: each read of the counter adds this much first (per link for NVLink),
     * as a GPU whose errors pour out while preflight loads it. */
    {"ecc_corrected_step", 0}, {"pcie_replay_step", 0}, {"nvlink_crc_step", 0}};

/* Queries that `gpuN.error.<query>` / `gpuN.unsupported.<query>` make fail. */
enum { Q_HANDLE, Q_NAME, Q_UUID, Q_SERIAL, Q_PCI_INFO, Q_MEMORY, Q_MIG, Q_ECC, Q_PERSISTENCE,
       Q_ECC_UNC_VOL, Q_ECC_UNC_AGG, Q_ECC_CORR_VOL, Q_RETIRED, Q_REMAPPED_ROWS, Q_CLOCKS,
       Q_TEMPERATURE, Q_PCIE_GEN, Q_PCIE_MAX_LINK_GEN, Q_PCIE_MAX_GPU_GEN, Q_PCIE_WIDTH,
       Q_PCIE_MAX_WIDTH, Q_NVLINK, Q_PROCESSES, Q_SM_CLOCK, Q_POWER, Q_NVLINK_REMOTE,
       Q_RECOVERY_ACTION, Q_PCIE_REPLAY, Q_NVLINK_ERRORS, Q_EVENTS, Q_COUNT };
static const char* const kQueries[Q_COUNT] = {
    "handle", "name", "uuid", "serial", "pci_info", "memory", "mig", "ecc", "persistence",
    "ecc_uncorrected_volatile", "ecc_uncorrected_aggregate", "ecc_corrected_volatile",
    "retired_pages_pending", "remapped_rows", "clocks_event_reasons", "temperature", "pcie_gen",
    "pcie_max_link_gen", "pcie_max_gpu_gen", "pcie_width", "pcie_max_width", "nvlink",
    "processes", "sm_clock", "power", "nvlink_remote", "recovery_action", "pcie_replay",
    "nvlink_errors", "events"};
/* clang-format on */

#define TEXT_SIZE 96
#define BUS_ID_SIZE 32 /* nvmlPciInfo_t.busId */
/* The far end of every NVLink when gpuN.nvlink_switch=1, and the PCI device id it reports (an
 * H100-generation NVSwitch); no default GPU has this address. */
#define SWITCH_BUS_ID "00000000:C5:00.0"
#define SWITCH_DEVICE_ID 0x22a3
struct nvmlDevice_st {
  char name[TEXT_SIZE], uuid[TEXT_SIZE], serial[TEXT_SIZE], bus_id[TEXT_SIZE];
  unsigned long long value[V_COUNT];
  int error[Q_COUNT];
  /* gpuN.nvlink_peers: the far ends of the active links, in turn. */
  char nvlink_peer[NVLINK_MAX_LINKS][BUS_ID_SIZE];
  unsigned nvlink_peers;
  /* gpuN.xid_events: Xids an event set registered for this GPU delivers, one per wait, in turn. */
  unsigned xid[MAX_XID_EVENTS];
  unsigned xids, xids_delivered;
};
typedef struct nvmlDevice_st* nvmlDevice_t;

struct Config {
  unsigned gpus;
  char driver[TEXT_SIZE];
  int init_error, driver_error, count_error;
  struct nvmlDevice_st gpu[MAX_GPUS];
};
static struct Config* g_config; /* loaded by the first nvmlInit, freed by the last nvmlShutdown */
static unsigned g_init_count;

static int value_index(const char* key) {
  for (int i = 0; i < V_COUNT; ++i) {
    if (strcmp(kValues[i].key, key) == 0) return i;
  }
  return -1;
}

static int query_index(const char* key) {
  for (int i = 0; i < Q_COUNT; ++i) {
    if (strcmp(kQueries[i], key) == 0) return i;
  }
  return -1;
}

/* An error value: a name from kErrors, "1" for the usual failure, "0" for none. */
static int parse_error(const char* text, int usual, int* code) {
  if (strcmp(text, "0") == 0 || strcmp(text, "1") == 0) {
    *code = text[0] == '1' ? usual : OK;
    return 1;
  }
  for (size_t i = 0; i < COUNT_OF(kErrors); ++i) {
    if (strcmp(kErrors[i].key, text) == 0) {
      *code = kErrors[i].code;
      return 1;
    }
  }
  return 0;
}

static int parse_number(const char* text, unsigned long long* value) {
  char* end = NULL;
  if (*text == '\0' || *text == '-') return 0;
  *value = strtoull(text, &end, 0); /* decimal, or 0x... */
  return *end == '\0';
}

static void copy_text(char* to, size_t size, const char* text) {
  snprintf(to, size, "%s", text);
}

/* gpuN.nvlink_peers: 1 to NVLINK_MAX_LINKS comma-separated bus ids, none empty or too long. */
static int parse_peers(const char* text, struct nvmlDevice_st* g) {
  unsigned count = 0;
  for (const char* item = text;; ++item) {
    const size_t length = strcspn(item, ",");
    const char* end = item + length;
    while (item < end && (*item == ' ' || *item == '\t')) ++item;
    size_t n = (size_t)(end - item);
    while (n > 0 && (item[n - 1] == ' ' || item[n - 1] == '\t')) --n;
    if (n == 0 || n >= BUS_ID_SIZE || count == NVLINK_MAX_LINKS) return 0;
    memcpy(g->nvlink_peer[count], item, n);
    g->nvlink_peer[count][n] = '\0';
    ++count;
    if (*end == '\0') break;
    item = end;
  }
  g->nvlink_peers = count;
  return 1;
}

/* gpuN.xid_events: 1 to MAX_XID_EVENTS comma-separated Xid codes. */
static int parse_xids(const char* text, struct nvmlDevice_st* g) {
  unsigned count = 0;
  for (const char* item = text;;) {
    char* end = NULL;
    const unsigned long code = strtoul(item, &end, 10);
    if (end == item || code == 0 || code > 1000 || count == MAX_XID_EVENTS) return 0;
    g->xid[count++] = (unsigned)code;
    while (*end == ' ') ++end;
    if (*end == '\0') break;
    if (*end != ',') return 0;
    item = end + 1;
  }
  g->xids = count;
  return 1;
}

static void set_defaults(struct Config* c) {
  static const unsigned kHgxBus[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  c->gpus = 1;
  copy_text(c->driver, sizeof c->driver, "580.65.06");
  for (unsigned i = 0; i < MAX_GPUS; ++i) {
    struct nvmlDevice_st* g = &c->gpu[i];
    copy_text(g->name, sizeof g->name, "NVIDIA H100 80GB HBM3");
    snprintf(g->uuid, sizeof g->uuid, "GPU-fa4e0000-0000-4000-8000-%012x", i);
    snprintf(g->serial, sizeof g->serial, "165000000%04u", i);
    snprintf(g->bus_id, sizeof g->bus_id, "0000000%u:%02X:00.0", i < 8 ? 0 : 1,
             i < 8 ? kHgxBus[i] : i);
    for (int v = 0; v < V_COUNT; ++v) g->value[v] = kValues[v].value;
  }
}

/* One `key=value`; 0 when the key or value is not understood. */
static int apply(struct Config* c, const char* key, const char* value, unsigned* highest_gpu) {
  unsigned long long n = 0;
  if (strcmp(key, "gpus") == 0) {
    if (!parse_number(value, &n) || n > MAX_GPUS) return 0;
    c->gpus = (unsigned)n;
    return 1;
  }
  if (strcmp(key, "driver") == 0) {
    if (strlen(value) >= TEXT_SIZE) return 0;
    copy_text(c->driver, sizeof c->driver, value);
    return 1;
  }
  if (strcmp(key, "init_error") == 0) {
    return parse_error(value, E_DRIVER_NOT_LOADED, &c->init_error);
  }
  if (strcmp(key, "error.driver") == 0) return parse_error(value, E_UNKNOWN, &c->driver_error);
  if (strcmp(key, "error.count") == 0) return parse_error(value, E_UNKNOWN, &c->count_error);

  unsigned index = 0;
  int used = 0;
  if (sscanf(key, "gpu%u.%n", &index, &used) != 1 || used == 0 || index >= MAX_GPUS) return 0;
  struct nvmlDevice_st* g = &c->gpu[index];
  const char* field = key + used;
  if (index + 1 > *highest_gpu) *highest_gpu = index + 1;
  char* text = strcmp(field, "name") == 0     ? g->name
               : strcmp(field, "uuid") == 0   ? g->uuid
               : strcmp(field, "serial") == 0 ? g->serial
               : strcmp(field, "bus_id") == 0 ? g->bus_id
                                              : NULL;
  if (text != NULL) {
    if (strlen(value) >= TEXT_SIZE) return 0;
    copy_text(text, TEXT_SIZE, value);
    return 1;
  }
  if (strcmp(field, "nvlink_peers") == 0) return parse_peers(value, g);
  if (strcmp(field, "xid_events") == 0) return parse_xids(value, g);
  const int is_error = strncmp(field, "error.", 6) == 0;
  if (is_error || strncmp(field, "unsupported.", 12) == 0) {
    const int q = query_index(field + (is_error ? 6 : 12));
    return q >= 0 && parse_error(value, is_error ? E_UNKNOWN : E_NOT_SUPPORTED, &g->error[q]);
  }
  const int v = value_index(field);
  if (v < 0 || !parse_number(value, &n)) return 0;
  g->value[v] = n;
  return 1;
}

static char* trim(char* s) {
  while (*s == ' ' || *s == '\t') ++s;
  size_t n = strlen(s);
  while (n > 0 && strchr(" \t\r\n", s[n - 1]) != NULL) s[--n] = '\0';
  return s;
}

/* OK, or E_UNKNOWN after saying on stderr what is wrong with the file. */
static int load_config(struct Config* c) {
  set_defaults(c);
  const char* path = getenv("FAKE_NVML_CONFIG");
  if (path == NULL || *path == '\0') return OK;
  FILE* file = fopen(path, "r");
  if (file == NULL) {
    fprintf(stderr, "fake nvml: cannot read FAKE_NVML_CONFIG %s\n", path);
    return E_UNKNOWN;
  }
  char line[512];
  unsigned number = 0, highest_gpu = 0;
  int status = OK;
  while (status == OK && fgets(line, sizeof line, file) != NULL) {
    ++number;
    char* hash = strchr(line, '#');
    if (hash != NULL) *hash = '\0';
    char* text = trim(line);
    if (*text == '\0') continue;
    char* equals = strchr(text, '=');
    if (equals == NULL) {
      fprintf(stderr, "fake nvml: %s:%u: not key=value: '%s'\n", path, number, text);
      status = E_UNKNOWN;
      continue;
    }
    *equals = '\0';
    const char* key = trim(text);
    const char* value = trim(equals + 1);
    if (!apply(c, key, value, &highest_gpu)) {
      fprintf(stderr, "fake nvml: %s:%u: unknown key or bad value: '%s=%s'\n", path, number, key,
              value);
      status = E_UNKNOWN;
    }
  }
  fclose(file);
  if (status == OK && highest_gpu > c->gpus) {
    fprintf(stderr, "fake nvml: %s: gpu%u is configured but gpus=%u\n", path, highest_gpu - 1,
            c->gpus);
    status = E_UNKNOWN;
  }
  return status;
}

/* NVML initialized and a handle of ours. */
static int handle_status(nvmlDevice_t device) {
  if (g_config == NULL) return E_UNINITIALIZED;
  const uintptr_t first = (uintptr_t)g_config->gpu, at = (uintptr_t)device;
  if (at < first || at >= (uintptr_t)(g_config->gpu + g_config->gpus)) return E_INVALID_ARGUMENT;
  if ((at - first) % sizeof *device != 0) return E_INVALID_ARGUMENT;
  return OK;
}

/* Common prologue of device queries: NVML initialized, a handle of ours, query not failing. */
static int device_status(nvmlDevice_t device, int query) {
  const int status = handle_status(device);
  return status != OK ? status : device->error[query];
}

static int put_text(char* to, unsigned size, const char* text) {
  if (to == NULL) return E_INVALID_ARGUMENT;
  if (strlen(text) >= size) return E_INSUFFICIENT_SIZE;
  memcpy(to, text, strlen(text) + 1);
  return OK;
}

/* A device query answering one configured number. */
static int get_value(nvmlDevice_t device, int query, int value, unsigned long long* out) {
  const int status = device_status(device, query);
  if (status == OK) *out = device->value[value];
  return status;
}

static int get_unsigned(nvmlDevice_t device, int query, int value, unsigned* out) {
  unsigned long long number = 0;
  const int status = get_value(device, query, value, &number);
  if (status == OK) *out = (unsigned)number;
  return status;
}

/* nvmlEnableState_t answers: 0 disabled, 1 enabled. */
static int get_state(nvmlDevice_t device, int query, int value, int* out) {
  unsigned long long number = 0;
  const int status = get_value(device, query, value, &number);
  if (status == OK) *out = number != 0;
  return status;
}

int nvmlInit_v2(void) {
  if (g_init_count == 0) {
    struct Config* config = calloc(1, sizeof *config);
    if (config == NULL) return E_UNKNOWN;
    int status = load_config(config);
    if (status == OK) status = config->init_error;
    if (status != OK) {
      free(config);
      return status;
    }
    g_config = config;
  }
  ++g_init_count;
  return OK;
}

int nvmlShutdown(void) {
  if (g_init_count == 0) return E_UNINITIALIZED;
  if (--g_init_count == 0) {
    free(g_config);
    g_config = NULL;
  }
  return OK;
}

const char* nvmlErrorString(int result) {
  for (size_t i = 0; i < COUNT_OF(kErrors); ++i) {
    if (kErrors[i].code == result) return kErrors[i].text;
  }
  return "Unknown Error";
}

int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  if (g_config == NULL) return E_UNINITIALIZED;
  return g_config->driver_error != OK ? g_config->driver_error
                                      : put_text(version, length, g_config->driver);
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  if (g_config == NULL) return E_UNINITIALIZED;
  if (g_config->count_error != OK) return g_config->count_error;
  *count = g_config->gpus;
  return OK;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  if (g_config == NULL) return E_UNINITIALIZED;
  if (index >= g_config->gpus || device == NULL) return E_INVALID_ARGUMENT;
  const int status = g_config->gpu[index].error[Q_HANDLE];
  if (status == OK) *device = &g_config->gpu[index];
  return status;
}

int nvmlDeviceGetName(nvmlDevice_t d, char* to, unsigned size) {
  const int status = device_status(d, Q_NAME);
  return status != OK ? status : put_text(to, size, d->name);
}
int nvmlDeviceGetUUID(nvmlDevice_t d, char* to, unsigned size) {
  const int status = device_status(d, Q_UUID);
  return status != OK ? status : put_text(to, size, d->uuid);
}
int nvmlDeviceGetSerial(nvmlDevice_t d, char* to, unsigned size) {
  const int status = device_status(d, Q_SERIAL);
  return status != OK ? status : put_text(to, size, d->serial);
}

/* The PCI info of the NVIDIA device at `bus_id`, which is copied to busId verbatim. */
static void fill_pci_info(nvmlPciInfo_t* pci, const char* bus_id, unsigned long long device_id) {
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &function);
  memset(pci, 0, sizeof *pci);
  snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.%X", domain & 0xffffu,
           bus & 0xffu, dev & 0x1fu, function & 0x7u);
  snprintf(pci->busId, sizeof pci->busId, "%.31s", bus_id); /* NVML_..._BUS_ID_BUFFER_SIZE */
  pci->domain = domain;
  pci->bus = bus;
  pci->device = dev;
  pci->pciDeviceId = (unsigned)(device_id << 16) | 0x10de; /* NVIDIA */
  pci->pciSubSystemId = 0x16c110de;
}

int nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* pci) {
  const int status = device_status(d, Q_PCI_INFO);
  if (status != OK) return status;
  fill_pci_info(pci, d->bus_id, d->value[V_DEVICE_ID]);
  return OK;
}

int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* memory) {
  const int status = device_status(d, Q_MEMORY);
  if (status != OK) return status;
  memory->total = d->value[V_MEMORY_TOTAL];
  memory->used = 0;
  memory->free = memory->total;
  return OK;
}

int nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned* current, unsigned* pending) {
  const int status = get_unsigned(d, Q_MIG, V_MIG, current); /* NVML_DEVICE_MIG_ENABLE is 1 */
  if (status == OK) *pending = *current;
  return status;
}

int nvmlDeviceGetEccMode(nvmlDevice_t d, int* current, int* pending) {
  const int status = get_state(d, Q_ECC, V_ECC, current);
  if (status == OK) *pending = *current;
  return status;
}

int nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int* mode) {
  return get_state(d, Q_PERSISTENCE, V_PERSISTENCE, mode);
}

/* error_type: 0 corrected, 1 uncorrected; counter: 0 volatile, 1 aggregate. */
int nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int error_type, int counter,
                                unsigned long long* count) {
  if (error_type < 0 || error_type > 1 || counter < 0 || counter > 1) return E_INVALID_ARGUMENT;
  const int query = error_type == 0 ? Q_ECC_CORR_VOL : counter == 0 ? Q_ECC_UNC_VOL : Q_ECC_UNC_AGG;
  const int value = error_type == 0 ? V_ECC_CORR_VOL : counter == 0 ? V_ECC_UNC_VOL : V_ECC_UNC_AGG;
  /* The step is a rise of the volatile count between reads; the aggregate read beside it
     (its value is the same) does not step it again. */
  if (value == V_ECC_CORR_VOL && counter == 0 && device_status(d, query) == OK) {
    d->value[V_ECC_CORR_VOL] += d->value[V_ECC_CORR_STEP];
  }
  return get_value(d, query, value, count);
}

int nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int* pending) {
  return get_state(d, Q_RETIRED, V_RETIRED_PENDING, pending);
}

int nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned* corrected_rows, unsigned* uncorrected_rows,
                              unsigned* pending, unsigned* failed) {
  const int status = device_status(d, Q_REMAPPED_ROWS);
  if (status != OK) return status;
  *corrected_rows = 0;
  *uncorrected_rows = 0;
  *pending = d->value[V_REMAP_PENDING] != 0;
  *failed = d->value[V_REMAP_FAILED] != 0;
  return OK;
}

int nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* reasons) {
  return get_value(d, Q_CLOCKS, V_CLOCKS, reasons);
}

int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* celsius) {
  if (sensor != 0) return E_INVALID_ARGUMENT; /* NVML_TEMPERATURE_GPU is the only sensor */
  return get_unsigned(d, Q_TEMPERATURE, V_TEMPERATURE, celsius);
}

/* Only the SM clock (NVML_CLOCK_SM = 1) is configured; preflight asks for no other. */
int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  if (type != 1) return E_INVALID_ARGUMENT;
  return get_unsigned(d, Q_SM_CLOCK, V_SM_CLOCK, mhz);
}

/* Milliwatts, as NVML reports. */
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* milliwatts) {
  return get_unsigned(d, Q_POWER, V_POWER, milliwatts);
}

int nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned* gen) {
  return get_unsigned(d, Q_PCIE_GEN, V_PCIE_GEN, gen);
}
int nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned* gen) {
  return get_unsigned(d, Q_PCIE_MAX_LINK_GEN, V_PCIE_MAX_LINK_GEN, gen);
}
int nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t d, unsigned* gen) {
  return get_unsigned(d, Q_PCIE_MAX_GPU_GEN, V_PCIE_MAX_GPU_GEN, gen);
}
int nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned* width) {
  return get_unsigned(d, Q_PCIE_WIDTH, V_PCIE_WIDTH, width);
}
int nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned* width) {
  return get_unsigned(d, Q_PCIE_MAX_WIDTH, V_PCIE_MAX_WIDTH, width);
}

/* The replays since load: pcie_replay, climbing by pcie_replay_step at every read. */
int nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned* value) {
  const int status = device_status(d, Q_PCIE_REPLAY);
  if (status != OK) return status;
  if (value == NULL) return E_INVALID_ARGUMENT;
  d->value[V_PCIE_REPLAY] += d->value[V_PCIE_REPLAY_STEP];
  *value = (unsigned)d->value[V_PCIE_REPLAY];
  return OK;
}

/* nvmlNvLinkErrorCounter_t 0 replay, 1 recovery, 2 CRC flit, 3 CRC data: each existing link
 * answers gpuN.nvlink_<counter>; the CRC flit count of every link climbs by nvlink_crc_step at
 * each read of link 0's (one step per link per reading of the GPU). */
int nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned link, int counter,
                                    unsigned long long* value) {
  const int status = device_status(d, Q_NVLINK_ERRORS);
  if (status != OK) return status;
  if (link >= NVLINK_MAX_LINKS || counter < 0 || counter > 4 || value == NULL) {
    return E_INVALID_ARGUMENT;
  }
  if (link >= d->value[V_NVLINK_LINKS] || counter == 4) return E_NOT_SUPPORTED;
  static const int kCounters[4] = {V_NVLINK_REPLAY, V_NVLINK_RECOVERY, V_NVLINK_CRC_FLIT,
                                   V_NVLINK_CRC_DATA};
  if (counter == 2 && link == 0) d->value[V_NVLINK_CRC_FLIT] += d->value[V_NVLINK_CRC_STEP];
  *value = d->value[kCounters[counter]];
  return OK;
}

/* Events: a set remembers the GPUs registered with it; each wait delivers the next configured Xid
 * (gpuN.xid_events) of the first registered GPU that has one left, as an Xid critical error
 * event, or answers NVML_ERROR_TIMEOUT at once. Every GPU supports the event types an H200 under
 * driver 580 reports (0xff9f) unless gpuN.unsupported.events=1. */
#define EVENT_XID_CRITICAL 0x8ULL
struct nvmlEventSet_st {
  int registered[MAX_GPUS];
};
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

int nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (g_config == NULL) return E_UNINITIALIZED;
  if (set == NULL) return E_INVALID_ARGUMENT;
  *set = calloc(1, sizeof **set);
  return *set != NULL ? OK : E_UNKNOWN;
}

int nvmlEventSetFree(nvmlEventSet_t set) {
  free(set);
  return OK;
}

int nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long* types) {
  const int status = device_status(d, Q_EVENTS);
  if (status != OK) return status;
  if (types == NULL) return E_INVALID_ARGUMENT;
  *types = 0xff9fULL;
  return OK;
}

int nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
  const int status = device_status(d, Q_EVENTS);
  if (status != OK) return status;
  if (set == NULL || (types & ~0xff9fULL) != 0) return E_INVALID_ARGUMENT;
  if (types & EVENT_XID_CRITICAL) set->registered[d - g_config->gpu] = 1;
  return OK;
}

int nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeout_ms) {
  (void)timeout_ms; /* nothing arrives later than now: answer at once */
  if (g_config == NULL) return E_UNINITIALIZED;
  if (set == NULL || data == NULL) return E_INVALID_ARGUMENT;
  for (unsigned i = 0; i < g_config->gpus; ++i) {
    struct nvmlDevice_st* g = &g_config->gpu[i];
    if (!set->registered[i] || g->xids_delivered >= g->xids) continue;
    memset(data, 0, sizeof *data);
    data->device = g;
    data->eventType = EVENT_XID_CRITICAL;
    data->eventData = g->xid[g->xids_delivered++];
    return OK;
  }
  return E_TIMEOUT;
}

/* Links 0..nvlink_links-1 exist; the first nvlink_active of them are up. */
int nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, int* active) {
  const int status = device_status(d, Q_NVLINK);
  if (status != OK) return status;
  if (link >= NVLINK_MAX_LINKS) return E_INVALID_ARGUMENT;
  if (link >= d->value[V_NVLINK_LINKS]) return E_NOT_SUPPORTED;
  *active = link < d->value[V_NVLINK_ACTIVE];
  return OK;
}

/* The far end of `link`, for the two remote queries: Not Supported on a link that is not active
 * (or does not exist), and on every link when neither nvlink_peers nor nvlink_switch is set, so
 * the default GPU has no topology to read. */
static int remote_status(nvmlDevice_t d, unsigned link) {
  const int status = device_status(d, Q_NVLINK_REMOTE);
  if (status != OK) return status;
  if (link >= NVLINK_MAX_LINKS) return E_INVALID_ARGUMENT;
  if (link >= d->value[V_NVLINK_LINKS] || link >= d->value[V_NVLINK_ACTIVE]) return E_NOT_SUPPORTED;
  if (d->value[V_NVLINK_SWITCH] == 0 && d->nvlink_peers == 0) return E_NOT_SUPPORTED;
  return OK;
}

/* nvmlIntNvLinkDeviceType_t: 0 GPU, 2 NVSwitch. */
int nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t d, unsigned link, int* type) {
  const int status = remote_status(d, link);
  if (status != OK) return status;
  if (type == NULL) return E_INVALID_ARGUMENT;
  *type = d->value[V_NVLINK_SWITCH] != 0 ? 2 : 0;
  return OK;
}

/* Active links are 0..nvlink_active-1, so link L is the L-th active link: it gets peer
 * L % (number of peers). A peer reports this GPU's device_id. */
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t* pci) {
  const int status = remote_status(d, link);
  if (status != OK) return status;
  if (pci == NULL) return E_INVALID_ARGUMENT;
  if (d->value[V_NVLINK_SWITCH] != 0) {
    fill_pci_info(pci, SWITCH_BUS_ID, SWITCH_DEVICE_ID);
  } else {
    fill_pci_info(pci, d->nvlink_peer[link % d->nvlink_peers], d->value[V_DEVICE_ID]);
  }
  return OK;
}

/* `processes` others, each holding process_memory_mib, plus the caller when include_self. The
 * others get pids above Linux's PID_MAX_LIMIT (4194304), so none is ever the caller's. */
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count,
                                            nvmlProcessInfo_t* infos) {
  const int status = device_status(d, Q_PROCESSES);
  if (status != OK) return status;
  if (count == NULL) return E_INVALID_ARGUMENT;
  const unsigned others = (unsigned)d->value[V_PROCESSES];
  const unsigned have = others + (d->value[V_INCLUDE_SELF] != 0);
  if (*count < have || (have > 0 && infos == NULL)) {
    *count = have;
    return E_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < have; ++i) {
    infos[i].pid = i < others ? 5000000 + i : (unsigned)getpid();
    infos[i].usedGpuMemory = d->value[V_PROCESS_MIB] << 20;
    infos[i].gpuInstanceId = 0xffffffffu;
    infos[i].computeInstanceId = 0xffffffffu;
  }
  *count = have;
  return OK;
}

/* Only NVML_FI_DEV_GET_GPU_RECOVERY_ACTION is known: it answers gpuN.recovery_action as an
 * unsigned int, or in its own nvmlReturn the error gpuN.error.recovery_action /
 * gpuN.unsupported.recovery_action configure. Every other field answers Not Supported. The call
 * itself fails only for NVML not initialized, a bad handle or array. */
int nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t* values) {
  const int status = handle_status(d);
  if (status != OK) return status;
  if (count <= 0 || values == NULL) return E_INVALID_ARGUMENT;
  for (int i = 0; i < count; ++i) {
    nvmlFieldValue_t* v = &values[i];
    v->timestamp = 0;
    v->latencyUsec = 0;
    v->valueType = VALUE_TYPE_UNSIGNED_INT;
    v->value.ullVal = 0;
    if (v->fieldId != FI_DEV_GET_GPU_RECOVERY_ACTION) {
      v->nvmlReturn = E_NOT_SUPPORTED;
      continue;
    }
    v->nvmlReturn = d->error[Q_RECOVERY_ACTION];
    if (v->nvmlReturn == OK) v->value.uiVal = (unsigned)d->value[V_RECOVERY_ACTION];
  }
  return OK;
}
