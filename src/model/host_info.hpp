#pragma once
#include <chrono>
#include <string>

namespace preflight {

std::string host_name();
// The RDMA devices the kernel lists (entries of /sys/class/infiniband, or `class_dir`), at most
// 1024; 0 when the folder is absent. For the time model before the run: every RDMA device,
// storage NICs included (the rdma check counts its compute NICs again when it runs).
int count_rdma_devices(const std::string& class_dir = "/sys/class/infiniband");
// UTC ISO-8601 with seconds, e.g. 2026-11-22T03:04:05Z.
std::string utc_iso8601(std::chrono::system_clock::time_point t);

}  // namespace preflight
