#include "model/host_info.hpp"

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <system_error>

namespace preflight {

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

int count_rdma_devices(const std::string& class_dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(class_dir, ec);
  int count = 0;
  for (; !ec && it != std::filesystem::directory_iterator() && count < 1024; it.increment(ec)) {
    ++count;
  }
  return count;
}

std::string utc_iso8601(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace preflight
