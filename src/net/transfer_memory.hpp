#pragma once
// The source and destination buffers of one RDMA-write transfer: host memory
// (transfer_memory.cpp) or GPU memory for GPUDirect (gpu_memory.cpp). Either way the source is
// filled with a pattern before the writes and the destination is compared with it after them.
// The memory regions are owned by the caller (the transfer's session), which destroys the queue
// pairs, then the regions, then this memory, in that order.
#include <infiniband/verbs.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "net/verbs_library.hpp"
#include "net/verbs_resources.hpp"

namespace preflight {

using NetClock = std::chrono::steady_clock;

// The outcome of one step: an error text, or the deadline passed with work still queued (the
// caller then abandons everything).
struct MemoryStep {
  std::string error;
  bool timed_out = false;
  bool ok() const { return error.empty() && !timed_out; }
};

class TransferMemory {
 public:
  virtual ~TransferMemory() = default;

  // Both buffers hold size() bytes.
  virtual std::size_t size() const = 0;
  // Fills the source with fill_pattern(seed) and zeroes the destination.
  virtual MemoryStep prepare(std::uint64_t seed, NetClock::time_point deadline) = 0;
  // Registers the source with `source_pd` and the destination with `destination_pd`, both with
  // `access`, into `source_mr` and `destination_mr`.
  virtual MemoryStep register_with(const VerbsLibrary& library, ibv_pd* source_pd,
                                   ibv_pd* destination_pd, int access, VerbsMr& source_mr,
                                   VerbsMr& destination_mr) = 0;
  // "host", "dma-buf" or "peer-memory"; valid after register_with().
  virtual const std::string& registration() const = 0;
  // The addresses work requests name (each region's iova).
  virtual std::uint64_t source_address() const = 0;
  virtual std::uint64_t destination_address() const = 0;
  // Counts the bytes of [0, bytes) where the destination differs from the source.
  virtual MemoryStep compare(std::size_t bytes, NetClock::time_point deadline,
                             std::uint64_t& bad_bytes) = 0;
  // Leaks the buffers (and any CUDA stream or event): a device that did not answer may still
  // write into them, and freeing GPU memory would wait for a GPU that may hang.
  virtual void abandon() = 0;
};

// Two page-aligned host buffers of at least `bytes`; null with `error` set when out of memory.
// With `numa_node` >= 0 both are bound to that NUMA node (mbind(2), MPOL_BIND) before their
// first touch, so the loopback mesh moves bytes between the NIC and that socket's memory; a
// binding the kernel refuses (a node that is not online, a kernel without NUMA) is an error
// naming mbind, never memory elsewhere. -1: wherever the kernel places them.
std::unique_ptr<TransferMemory> make_host_memory(std::size_t bytes, std::string& error,
                                                 int numa_node = -1);

// Two buffers on CUDA device `cuda_ordinal` (GPUDirect RDMA): registered through a dma-buf of
// the CUDA driver where the driver and libibverbs support it, else with plain ibv_reg_mr on the
// device pointers (nvidia-peermem). Without CUDA in the build: null, with error
// "built without CUDA: GPUDirect not available".
std::unique_ptr<TransferMemory> make_gpu_memory(int cuda_ordinal, std::size_t bytes,
                                                std::string& error);

// The source's contents: each 8-byte word is a hash of its index and `seed`, so a byte written
// to the wrong offset or not written at all shows.
void fill_pattern(unsigned char* data, std::size_t bytes, std::uint64_t seed);
// The number of bytes of [0, bytes) where `a` and `b` differ.
std::uint64_t count_differences(const unsigned char* a, const unsigned char* b, std::size_t bytes);

}  // namespace preflight
