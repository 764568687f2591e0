#pragma once
// The version of the NCCL library a job on this node would load. NCCL is read with dlopen
// rather than linked, so a node without it still runs every other check.
#include <string>

namespace preflight {

// "2.28.3" from ncclGetVersion() of libnccl.so.2; empty when the library or the symbol cannot
// be loaded or the call fails.
std::string nccl_runtime_version();

// Formats an NCCL_VERSION_CODE: major*10000+minor*100+patch from 2.9 on (codes >= 20900),
// major*1000+minor*100+patch before. Empty for codes <= 0.
std::string format_nccl_version(int code);

}  // namespace preflight
