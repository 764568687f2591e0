#pragma once
// The one place the binary's engines are assembled: the node backend (src/gpu), the GPU engines
// (src/gpu) and the RDMA engine (src/net), each from the implementation this build has.
#include "preflight/engine/engines.hpp"

namespace preflight {

OwnedEngines make_system_engines();

}  // namespace preflight
