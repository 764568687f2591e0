#include "gpu/nccl_version.hpp"

namespace preflight {

std::string format_nccl_version(int code) {
  if (code <= 0) return {};
  int major = 0;
  int minor = 0;
  if (code >= 20900) {
    major = code / 10000;
    minor = code % 10000 / 100;
  } else {
    major = code / 1000;
    minor = code % 1000 / 100;
  }
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace preflight
