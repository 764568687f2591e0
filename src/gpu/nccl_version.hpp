#pragma once
// NCCL's version code as people write it. The library itself is found and loaded at run time
// (runtime_libraries.hpp), never linked.
#include <string>

namespace preflight {

// Formats an NCCL_VERSION_CODE: major*10000+minor*100+patch from 2.9 on (codes >= 20900),
// major*1000+minor*100+patch before. Empty for codes <= 0.
std::string format_nccl_version(int code);

}  // namespace preflight
