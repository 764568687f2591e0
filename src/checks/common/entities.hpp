#pragma once
// How checks name what they judge: the entity strings of findings and metrics, and the one way
// a GB/s figure is written in messages. Shared by every check that names GPUs or RDMA ports.
#include <string>

namespace preflight {

std::string gpu_entity(int gpu_index);          // "gpu3"
std::string pair_entity(int gpu_a, int gpu_b);  // "gpu0-gpu3", lower index first
std::string format_gbps(double gbps);           // "53.7 GB/s"
// An RDMA port: its device's name for port 1, "mlx5_0:2" for another port.
std::string rdma_port_entity(const std::string& device, int port);

}  // namespace preflight
