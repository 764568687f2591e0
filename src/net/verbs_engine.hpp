#pragma once
// The two halves of the libibverbs engine (verbs_engine.cpp), each in its own file.
#include "net/verbs_library.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

// Every device and port (verbs_inventory.cpp). Never throws.
RdmaInventory read_rdma_inventory(const VerbsLibrary& library);

// One RDMA-write transfer (verbs_transfer.cpp). Never throws.
RdmaTransferResult run_rdma_transfer(const VerbsLibrary& library, const RdmaTransferJob& job);

}  // namespace preflight
