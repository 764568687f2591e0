#pragma once
// The CUDA implementation of BandwidthEngine (include/preflight/engine/bandwidth_engine.hpp): the
// copy measurements of the pcie, nvlink and hbm checks (bandwidth_engine.cpp), the benchmark's
// plain copies and the peer-access query (bandwidth_reference.cpp), and the hbm check's memory
// pattern test (bandwidth_pattern.cpp). Owned by the CUDA backend (cuda_backend.cpp,
// NodeBackend::bandwidth_engine()).
//
// What callers can rely on beyond the interface:
// - Streams on several GPUs (the all-GPUs PCIe measurement, bidirectional peer copies) are
//   timed per GPU: cudaEventElapsedTime cannot compare events of two devices, so each GPU has
//   its own start event, recorded on its first stream right after that stream's latch; a
//   stream's time runs from its own GPU's start event to its end event. All latches are
//   released by one host write, so the starts lie within microseconds of each other. A sample's
//   total_gbps is all bytes over the longest stream time (on one GPU that is exactly "common
//   start to last end").
// - Pinned host buffers are allocated while the calling thread runs on the CPUs of the GPU's
//   NUMA node (its affinity is restored afterwards). StreamResult::numa_node is the node the
//   kernel reports for the buffer's first page, else the node it was placed on, else -1.
// - Errors: CUDA errors read "cudaErrorX: text" (a peer pair that cannot be enabled:
//   "cudaErrorPeerAccessUnsupported: peer access is not supported between these two devices");
//   a measurement or job the engine refuses: "invalid measurement: ..." / "invalid pattern
//   job: ..."; a latch that gave up: "latch timed out: ..."; a cancel seen while work was
//   queued or between samples/patterns: "cancelled" for measure(), for pattern_test() the
//   completed patterns alone (patterns_run).
// - Timed out or cancelled while work is queued: the GPU memory, streams and events are leaked,
//   never freed (freeing waits for the work).
// - Injected faults: slow_factor < 1 idles the stream after each copy for
//   copy_time * (1/f - 1), the copy time taken from the warm-up (at least one warm-up copy is
//   made then); inject_corrupt flips bit 0 of word count/3 between the first pattern's write and
//   its verification.
#include "preflight/engine/bandwidth_engine.hpp"

namespace preflight {

// Stateless: every call sets up (and tears down, or abandons) its own streams and memory, on
// the calling thread, so calls for different GPUs may run concurrently on threads of their own.
class CudaBandwidthEngine final : public BandwidthEngine {
 public:
  MeasurementResult measure(const CopyMeasurement& measurement) override;
  PeerAccess peer_access(int from_ordinal, int to_ordinal) override;
  PatternResult pattern_test(const PatternJob& job) override;
  Reference reference(const CopyStream& stream, std::size_t bytes, int copies,
                      int samples) override;
};

}  // namespace preflight
