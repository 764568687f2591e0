#pragma once
#include <chrono>
#include <string>

namespace preflight {

std::string host_name();
// UTC ISO-8601 with seconds, e.g. 2026-11-22T03:04:05Z.
std::string utc_iso8601(std::chrono::system_clock::time_point t);

}  // namespace preflight
