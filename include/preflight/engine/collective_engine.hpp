#pragma once
// The boundary between code that runs NCCL collectives (the single-node nccl check in
// src/checks/nccl/, the multi-node fleet's NCCL transport in src/fleet/) and the CUDA/NCCL code
// that runs them (src/gpu/nccl_engine.cpp). Plain structs only: no CUDA or NCCL types, so the
// callers and their tests build without the toolkit, and tests hand them results of their own.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

using SteadyClock = std::chrono::steady_clock;

enum class CollectiveOp { all_gather, all_reduce };

// One communicator (or this process's part of one) and the collectives to time on it.
struct CollectiveJob {
  // The NCCL unique id bytes (NCCL_UNIQUE_ID_BYTES, 128), from unique_id() of the rank that made
  // it; every process of the communicator passes the same bytes.
  std::vector<char> unique_id;
  int nranks = 0;  // ranks of the whole communicator
  // This process's local GPUs are ranks first_rank .. first_rank + cuda_ordinals.size() - 1.
  int first_rank = 0;
  std::vector<int> cuda_ordinals;  // this process's GPUs, one rank each, no GPU twice
  CollectiveOp op = CollectiveOp::all_gather;
  // all_gather: bytes each rank contributes; all_reduce: bytes of the buffer. One measurement
  // per size, in this order. Rounded down to whole 4-byte elements (at least one).
  std::vector<std::size_t> sizes;
  int iterations = 20;  // timed iterations per size
  int warmups = 2;      // untimed iterations before them (the last one times the slow idling)
  // Rank r's contribution is a pattern of (seed, r, element index): all_gather moves 32-bit
  // hashes (ncclUint32), all_reduce sums small whole numbers as ncclFloat32 (exact in any order),
  // so every received element is checked bit for bit.
  std::uint64_t seed = 1;
  SteadyClock::time_point deadline;           // every wait polls against it
  std::shared_ptr<std::atomic<bool>> cancel;  // may be null

  // Fault injection (drills).
  // corrupt_send: after the pattern fill, one element of this process's first local rank's send
  // buffer is changed, so every receiver sees that source corrupt.
  bool corrupt_send = false;
  // slow_factor < 1: every local rank idles on its GPU after each timed iteration (for the
  // last warm-up iteration's time x (1/f - 1)), so the group delivers about that fraction.
  double slow_factor = 1.0;
  // hang: this process initializes its communicators and then never enqueues a collective (the
  // other ranks time out); it waits until the deadline and reports timed_out.
  bool hang = false;
  // Per-local-rank variants for one process that drives several GPUs (the nccl check): each
  // local rank in corrupt_local_ranks has its send buffer corrupted as corrupt_send does the
  // first's; local_slow_factors[l] < 1 idles local rank l alone (missing entries: 1). The lower
  // of slow_factor and local_slow_factors[l] applies to rank l.
  std::vector<int> corrupt_local_ranks;
  std::vector<double> local_slow_factors;
};

// Bandwidths are decimal GB/s of bytes (1e9 bytes per second), as nccl-tests prints them,
// though named *_gbps like the other engines' figures.
struct CollectiveSizeResult {
  std::size_t bytes = 0;  // as measured: bytes per rank (all_gather) or buffer bytes (all_reduce)
  double seconds = 0;     // per iteration: the slowest local rank's time over the iterations
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

struct CollectiveResult {
  bool initialized = false;  // the communicator(s) came up
  // Non-empty: what failed. NCCL: "<call>: <ncclGetErrorString>/<ncclGetLastError>"; CUDA:
  // "<call>: <cudaGetErrorString>"; "invalid job: ...", "cancelled".
  std::string error;
  bool timed_out = false;  // the deadline passed; the communicators were aborted (ncclCommAbort)
  std::vector<CollectiveSizeResult> sizes;  // the sizes measured, in job order
  // corrupt_from[l][s]: elements from source rank s that arrived wrong at this process's local
  // rank l, summed over sizes (l < cuda_ordinals.size(), s < nranks). all_gather: every slot of
  // the receive buffer is checked against its source's pattern, on the device. all_reduce: a
  // sum cannot tell which contribution was wrong, so a wrong element is counted against the
  // receiving rank itself, corrupt_from[l][first_rank + l].
  std::vector<std::vector<std::uint64_t>> corrupt_from;
  bool verified = false;  // every received element of every size was checked
};

class CollectiveEngine {
 public:
  virtual ~CollectiveEngine() = default;
  // Empty when NCCL was found (or this build has no NCCL at all); otherwise which library, which
  // soname and where it was looked for: an installation problem of the tool, not of the node
  // (TOOL_LIBRARY_MISSING). Loads the library on first call.
  virtual std::string library_problem() { return {}; }
  // Empty when NCCL and CUDA are usable; otherwise why not (the library's problem, or the CUDA
  // runtime's "CUDA: no GPU visible").
  virtual std::string unavailable_reason() = 0;
  // ncclGetUniqueId; empty with `error` set when it fails.
  virtual std::vector<char> unique_id(std::string& error) = 0;
  // Never throws; never blocks past job.deadline + about 1 s (unless the driver itself does not
  // return: callers run it on a thread they can abandon).
  virtual CollectiveResult run(const CollectiveJob& job) = 0;
};

// The NCCL engine of the CUDA build (libnccl.so.2 loaded with dlopen on first use, or the file
// named by PREFLIGHT_NCCL_LIBRARY). A build without CUDA (or without nccl.h) returns one whose
// unavailable_reason() says so: "built without CUDA support".
std::unique_ptr<CollectiveEngine> make_nccl_collective_engine();

// nccl-tests' bandwidths, decimal GB/s. algbw: bytes moved per rank's view over the time
// (all_gather: bytes per rank x nranks; all_reduce: the buffer). busbw: algbw x (n-1)/n for
// all_gather, x 2(n-1)/n for all_reduce, the figure comparable across rank counts.
inline double collective_algbw_gbps(CollectiveOp op, std::size_t bytes, int nranks,
                                    double seconds) {
  if (seconds <= 0 || nranks < 1) return 0;
  const double moved = op == CollectiveOp::all_gather
                           ? static_cast<double>(bytes) * static_cast<double>(nranks)
                           : static_cast<double>(bytes);
  return moved / seconds / 1e9;
}

inline double collective_busbw_gbps(CollectiveOp op, std::size_t bytes, int nranks,
                                    double seconds) {
  if (nranks < 1) return 0;
  const double n = nranks;
  const double factor = op == CollectiveOp::all_gather ? (n - 1) / n : 2 * (n - 1) / n;
  return collective_algbw_gbps(op, bytes, nranks, seconds) * factor;
}

inline std::string_view to_string(CollectiveOp op) {
  return op == CollectiveOp::all_gather ? "all_gather" : "all_reduce";
}

}  // namespace preflight
