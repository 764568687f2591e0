#pragma once
// The boundary between the loopback bandwidth checks (pcie, nvlink, hbm: host-only planning and
// judging in src/checks/pcie/, nvlink/, hbm/ and common/) and the CUDA code that moves and verifies
// the bytes (src/gpu/cuda_bandwidth_engine.cpp). Plain structs only, so the checks and their tests
// build without the toolkit and tests can hand the checks measurements of their own.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace preflight {

enum class CopyDirection {
  host_to_device,    // pinned host buffer -> GPU memory, on the GPU's copy engine
  device_to_host,    // GPU memory -> pinned host buffer
  device_to_device,  // within one GPU's memory (HBM: every byte read once and written once)
  peer,              // GPU memory -> another GPU's memory (NVLink or PCIe peer-to-peer)
};

// One stream of copies in a measurement.
struct CopyStream {
  CopyDirection direction = CopyDirection::host_to_device;
  int cuda_ordinal = 0;   // the GPU whose memory is copied from or to (peer: the source)
  int peer_ordinal = -1;  // peer: the destination GPU
  // Injected fault (pcie-slow, nvlink-slow): the stream is held idle between its copies so it
  // delivers this share of its bandwidth. 1: no fault.
  double slow_factor = 1.0;
};

// Streams measured together. Method (nvbandwidth's): every stream first waits on a latch
// kernel (with a timeout) while all copies are queued; warm-up copies run first; the start
// event is recorded on one stream that the others wait on; then `copies_per_sample` copies per
// stream, then an end event per stream. Repeated `samples` times. Afterwards the destination of
// every stream is verified against the pattern its source was filled with.
struct CopyMeasurement {
  std::vector<CopyStream> streams;
  std::size_t bytes = std::size_t{256} << 20;  // per copy, per stream
  int copies_per_sample = 4;
  int samples = 5;
  int warmups = 1;  // copies per stream before the first sample
  std::chrono::steady_clock::time_point deadline;
  std::shared_ptr<const std::atomic<bool>> cancel;
};

struct StreamResult {
  // Decimal GB/s (1e9 bytes per second) of this stream, per sample: bytes * copies over the
  // time from its GPU's start event to this stream's end event. (Events of two devices cannot
  // be compared, so each GPU of a measurement has its own start event, recorded right after
  // its latch; one host write releases every latch, so the starts lie microseconds apart.)
  std::vector<double> gbps;
  bool verified = false;        // the destination was checked after the last copy
  std::uint64_t bad_words = 0;  // 32-bit words that differ from the source pattern
  int numa_node = -1;           // where the pinned host buffer was placed (-1: unknown or n/a)
};

struct MeasurementResult {
  std::vector<StreamResult> streams;  // one per CopyMeasurement::streams, same order
  // Per sample: all streams' bytes over the longest stream's time (on one GPU: from the common
  // start to the last end).
  std::vector<double> total_gbps;
  // A CUDA error ended the measurement: "cudaErrorPeerAccessUnsupported: peer access is not
  // supported between these two devices". Samples taken before it are kept.
  std::string error;
  bool timed_out = false;  // queued work (or the latch) did not complete before the deadline
};

struct PeerAccess {
  bool supported = false;  // cudaDeviceCanAccessPeer
  std::string error;       // the query failed
};

// The memory pattern test of the hbm check.
enum class MemoryPattern {
  zeros,            // 0x00000000
  ones,             // 0xFFFFFFFF
  checkerboard,     // 0x55555555, then 0xAAAAAAAA (adjacent bits differ)
  address,          // each word holds its own word index (address-in-address)
  inverse_address,  // each word holds the complement of its index
  random,           // a counter-based hash of the index and a seed
};

struct PatternJob {
  int cuda_ordinal = 0;
  std::size_t bytes = 0;  // region to test; the engine allocates it (error if it cannot)
  std::vector<MemoryPattern> patterns;
  std::uint64_t seed = 1;
  std::chrono::steady_clock::time_point deadline;
  std::shared_ptr<const std::atomic<bool>> cancel;
  // Injected fault (hbm-corrupt): one word is changed between the write of the first pattern
  // and its verification.
  bool inject_corrupt = false;
};

// A stretch of the tested region with bad words: byte offsets [begin, end) from the start of
// the region, end exclusive, both on word boundaries, at the exact first and last bad word.
struct BadRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t bad_words = 0;
};

struct PatternResult {
  std::uint64_t bytes_tested = 0;
  std::vector<MemoryPattern> patterns_run;  // completed patterns, in order
  std::uint64_t bad_words = 0;              // summed over patterns
  std::vector<BadRange> ranges;             // merged over patterns, at most kMaxBadRanges
  bool ranges_truncated = false;            // more ranges than reported
  double seconds = 0.0;                     // write + verify time of all patterns
  std::string error;
  bool timed_out = false;
};

inline constexpr std::size_t kMaxBadRanges = 64;

class BandwidthEngine {
 public:
  virtual ~BandwidthEngine() = default;
  // Runs the measurement. CUDA errors are reported in the result, never thrown; completion is
  // polled against the deadline (a hung copy: timed_out, memory leaked rather than freed).
  virtual MeasurementResult measure(const CopyMeasurement& measurement) = 0;
  virtual PeerAccess peer_access(int from_ordinal, int to_ordinal) = 0;
  virtual PatternResult pattern_test(const PatternJob& job) = 0;
  // The benchmark's reference, the plainest method: `copies` cudaMemcpyAsync of `bytes` between
  // two events on one stream (pinned host memory for host directions; a device copy for
  // device_to_device), no latch, no verification. Decimal GB/s per sample, or an error text.
  struct Reference {
    std::vector<double> gbps;
    std::string error;
  };
  virtual Reference reference(const CopyStream& stream, std::size_t bytes, int copies,
                              int samples) = 0;
};

}  // namespace preflight
