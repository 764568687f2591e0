// Helpers shared by the bandwidth engine's parts (bandwidth_support.hpp).
#include "gpu/bandwidth_support.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "gpu/device_scope.hpp"
#include "gpu/pci_address.hpp"

namespace preflight {
namespace bandwidth_detail {
namespace {

std::optional<std::string> read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}

// Parses a sysfs CPU list ("0-23,48-71") into `set`. False for anything malformed or a CPU
// beyond what cpu_set_t holds: placement is then skipped rather than done half-way.
bool parse_cpu_list(const std::string& text, cpu_set_t& set) {
  CPU_ZERO(&set);
  std::istringstream in(text);
  std::string item;
  bool any = false;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    const char* text_begin = item.c_str();
    char* end = nullptr;
    const long first = std::strtol(text_begin, &end, 10);
    if (end == text_begin) return false;
    long last = first;
    if (*end == '-') {
      const char* second = end + 1;
      last = std::strtol(second, &end, 10);
      if (end == second) return false;
    }
    if (*end != '\0' || first < 0 || last < first || last >= CPU_SETSIZE) return false;
    for (long cpu = first; cpu <= last; ++cpu) CPU_SET(static_cast<int>(cpu), &set);
    any = true;
  }
  return any;
}

}  // namespace

bool event_done(cudaEvent_t event) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) return false;
  throw CudaError(__FILE__, __LINE__, "cudaEventQuery", status);
}

void wait_event(cudaEvent_t event, Clock::time_point deadline, const std::atomic<bool>* cancel) {
  while (!event_done(event)) {
    if (Clock::now() >= deadline) throw TimedOut{};
    if (cancel != nullptr && cancel->load()) throw Cancelled{};
    std::this_thread::sleep_for(kPollInterval);
  }
}

bool wait_stream_idle(DeviceScope& scope, int device, cudaStream_t stream,
                      Clock::time_point deadline) noexcept {
  (void)scope.try_set(device);
  return stream_idle_by(stream, deadline);
}

void enable_peer_access(int from, int to) {
  int can = 0;
  PREFLIGHT_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, from, to));
  // The same error whichever code cudaDeviceEnablePeerAccess would give for such a pair.
  if (can == 0) {
    throw CudaError(__FILE__, __LINE__, "cudaDeviceCanAccessPeer", cudaErrorPeerAccessUnsupported);
  }
  const DeviceScope device(from);
  const cudaError_t status = cudaDeviceEnablePeerAccess(to, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // not an error here; it must not be reported by the next call
    return;
  }
  PREFLIGHT_CUDA_CHECK(status);
}

int gpu_numa_node(int ordinal) {
  char bus_id[32] = {};
  if (cudaDeviceGetPCIBusId(bus_id, static_cast<int>(sizeof(bus_id)), ordinal) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  // sysfs names devices "0000:1b:00.0": lower case, a four-digit domain where it fits.
  const auto address = normalize_pci_bus_id(bus_id);
  if (!address) return -1;
  const auto line = read_line("/sys/bus/pci/devices/" + *address + "/numa_node");
  if (!line) return -1;
  char* end = nullptr;
  const long node = std::strtol(line->c_str(), &end, 10);
  if (end == line->c_str() || node < 0 || node > 4095) return -1;
  return static_cast<int>(node);
}

int page_numa_node(const void* address) {
  void* pages[1] = {const_cast<void*>(address)};
  int status[1] = {-1};
  // move_pages without target nodes only reports where each page is.
  if (syscall(SYS_move_pages, 0, 1UL, pages, nullptr, status, 0) != 0) return -1;
  return status[0] >= 0 ? status[0] : -1;
}

NodeAffinity::NodeAffinity(int node) {
  if (node < 0) return;
  const auto cpus = read_line("/sys/devices/system/node/node" + std::to_string(node) + "/cpulist");
  cpu_set_t wanted;
  if (!cpus || !parse_cpu_list(*cpus, wanted)) return;
  if (sched_getaffinity(0, sizeof(saved_), &saved_) != 0) return;
  // The kernel moves the calling thread onto one of these CPUs before this returns. It refuses
  // (EINVAL) a set with no CPU this process may use, e.g. in a container's cpuset.
  placed_ = sched_setaffinity(0, sizeof(wanted), &wanted) == 0;
}

NodeAffinity::~NodeAffinity() {
  if (placed_) sched_setaffinity(0, sizeof(saved_), &saved_);
}

}  // namespace bandwidth_detail
}  // namespace preflight
