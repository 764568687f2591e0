#include "checks/common/entities.hpp"

#include <cstdio>

namespace preflight {

std::string gpu_entity(int gpu_index) {
  return "gpu" + std::to_string(gpu_index);
}

std::string pair_entity(int gpu_a, int gpu_b) {
  return gpu_a < gpu_b ? gpu_entity(gpu_a) + "-" + gpu_entity(gpu_b)
                       : gpu_entity(gpu_b) + "-" + gpu_entity(gpu_a);
}

std::string format_gbps(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB/s", value);
  return text;
}

std::string rdma_port_entity(const std::string& device, int port) {
  return port == 1 ? device : device + ":" + std::to_string(port);
}

}  // namespace preflight
