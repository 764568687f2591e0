#pragma once
// The two halves of the libibverbs engine (verbs_engine.cpp), each in its own file.
#include "net/efa_library.hpp"
#include "net/verbs_library.hpp"
#include "preflight/engine/rdma_engine.hpp"

namespace preflight {

// Every device and port (verbs_inventory.cpp); libefa is loaded at the first EFA device. Never
// throws.
RdmaInventory read_rdma_inventory(const VerbsLibrary& library, const LazyEfaLibrary& efa);

// One transfer of RDMA writes or reads (verbs_transfer.cpp); libefa is loaded when the devices
// are EFA devices. Never throws.
RdmaTransferResult run_rdma_transfer(const VerbsLibrary& library, const LazyEfaLibrary& efa,
                                     const RdmaTransferJob& job);

}  // namespace preflight
