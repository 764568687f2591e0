#pragma once
// The CUDA libraries of this build as a node has them: searched and loaded the way the engines
// load them (runtime_library.hpp), for discovery's reading and for `preflight --version`.
#include <vector>

#include "gpu/runtime_library.hpp"
#include "preflight/engine/node_backend.hpp"

namespace preflight {

// libnccl.so.2, or $PREFLIGHT_NCCL_LIBRARY.
RuntimeLibrarySpec nccl_library_spec();

// cuBLAS and NCCL: where each was found and its version, or where it was looked for.
std::vector<RuntimeLibraryReading> runtime_library_readings();

}  // namespace preflight
