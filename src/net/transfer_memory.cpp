// Host buffers of a transfer, and the pattern both kinds of memory use.
#include <linux/mempolicy.h>  // MPOL_BIND, MPOL_MF_*: constants only, no libnuma
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "net/transfer_memory.hpp"

namespace preflight {
namespace {

// splitmix64's finalizer: cheap, and every input bit changes about half the output bits.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The highest NUMA node a mask is made for: what the readings accept (rdma_readings.cpp), far
// above any machine's count (the kernel's default MAX_NUMNODES is 1024 at most).
constexpr int kHighestNumaNode = 4095;

// Binds [memory, memory + bytes) (page-aligned) to `node` with the raw system call, so the
// binary needs no libnuma. MPOL_MF_MOVE moves pages already touched (an allocation the heap
// reused), and MPOL_MF_STRICT makes a page that cannot be moved an error: after a success every
// page is, or will be at its first touch, on the node. Returns the error text, "" on success.
std::string bind_to_node(void* memory, std::size_t bytes, int node, const char* what) {
  const std::string call =
      "mbind(" + std::string(what) + ", NUMA node " + std::to_string(node) + ")";
  if (node < 0 || node > kHighestNumaNode) return call + ": no such node";
  constexpr std::size_t kBitsPerWord = sizeof(unsigned long) * CHAR_BIT;
  std::vector<unsigned long> mask(static_cast<std::size_t>(kHighestNumaNode) / kBitsPerWord + 1, 0);
  const auto at = static_cast<std::size_t>(node);
  mask[at / kBitsPerWord] |= 1UL << (at % kBitsPerWord);
  // The kernel reads one bit fewer than maxnode (mm/mempolicy.c, get_nodes), hence the + 1.
  const unsigned long maxnode = mask.size() * kBitsPerWord + 1;
  const long rc = ::syscall(SYS_mbind, memory, bytes, MPOL_BIND, mask.data(), maxnode,
                            MPOL_MF_MOVE | MPOL_MF_STRICT);
  const int code = errno;  // before anything else can change it
  if (rc != 0) return call + ": " + std::strerror(code);
  return {};
}

class HostMemory final : public TransferMemory {
 public:
  HostMemory(HostBuffer source, HostBuffer destination)
      : source_(std::move(source)), destination_(std::move(destination)) {}

  std::size_t size() const override { return source_.size(); }

  MemoryStep prepare(std::uint64_t seed, NetClock::time_point /*deadline*/) override {
    // Tens of milliseconds at most: not worth bounding.
    fill_pattern(source_.get(), source_.size(), seed);
    std::memset(destination_.get(), 0, destination_.size());
    return {};
  }

  MemoryStep register_with(const VerbsLibrary& library, ibv_pd* source_pd, ibv_pd* destination_pd,
                           int access, VerbsMr& source_mr, VerbsMr& destination_mr) override {
    const auto dereg = library.api().dereg_mr;
    errno = 0;
    source_mr = VerbsMr(library.reg_mr(source_pd, source_.get(), source_.size(), access), dereg,
                        "ibv_dereg_mr");
    if (!source_mr) return {verbs_failure("ibv_reg_mr", "source", errno)};
    errno = 0;
    destination_mr =
        VerbsMr(library.reg_mr(destination_pd, destination_.get(), destination_.size(), access),
                dereg, "ibv_dereg_mr");
    if (!destination_mr) return {verbs_failure("ibv_reg_mr", "destination", errno)};
    return {};
  }

  const std::string& registration() const override { return registration_; }
  std::uint64_t source_address() const override {
    return reinterpret_cast<std::uintptr_t>(source_.get());
  }
  std::uint64_t destination_address() const override {
    return reinterpret_cast<std::uintptr_t>(destination_.get());
  }

  MemoryStep compare(std::size_t bytes, NetClock::time_point /*deadline*/,
                     std::uint64_t& bad_bytes) override {
    bad_bytes = count_differences(destination_.get(), source_.get(), bytes);
    return {};
  }

  void abandon() override {
    source_.abandon();
    destination_.abandon();
  }

 private:
  HostBuffer source_;
  HostBuffer destination_;
  std::string registration_ = "host";
};

}  // namespace

std::unique_ptr<TransferMemory> make_host_memory(std::size_t bytes, std::string& error,
                                                 int numa_node) {
  try {
    HostBuffer source(bytes);
    HostBuffer destination(bytes);
    if (source.get() == nullptr || destination.get() == nullptr) {
      error = "out of memory: 2 host buffers of " + std::to_string(bytes) + " bytes";
      return nullptr;
    }
    if (numa_node >= 0) {
      // Before prepare() first writes them: the pages are then allocated on the node.
      error = bind_to_node(source.get(), source.size(), numa_node, "source");
      if (error.empty()) {
        error = bind_to_node(destination.get(), destination.size(), numa_node, "destination");
      }
      if (!error.empty()) return nullptr;
    }
    return std::make_unique<HostMemory>(std::move(source), std::move(destination));
  } catch (const std::bad_alloc&) {
    error = "out of memory";
    return nullptr;
  }
}

void fill_pattern(unsigned char* data, std::size_t bytes, std::uint64_t seed) {
  const std::uint64_t key = mix(seed);
  std::size_t offset = 0;
  for (std::uint64_t word = 0; offset + 8 <= bytes; ++word, offset += 8) {
    const std::uint64_t value = mix(word ^ key);
    std::memcpy(data + offset, &value, 8);
  }
  if (offset < bytes) {
    const std::uint64_t value = mix((offset / 8) ^ key);
    std::memcpy(data + offset, &value, bytes - offset);
  }
}

std::uint64_t count_differences(const unsigned char* a, const unsigned char* b, std::size_t bytes) {
  // memcmp finds the (usually absent) differences fast; only a chunk that differs is counted
  // byte by byte.
  constexpr std::size_t kChunk = 64 * 1024;
  std::uint64_t differences = 0;
  for (std::size_t offset = 0; offset < bytes; offset += kChunk) {
    const std::size_t length = bytes - offset < kChunk ? bytes - offset : kChunk;
    if (std::memcmp(a + offset, b + offset, length) == 0) continue;
    for (std::size_t i = 0; i < length; ++i) differences += a[offset + i] != b[offset + i];
  }
  return differences;
}

}  // namespace preflight
