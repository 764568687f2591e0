#pragma once
// A BandwidthEngine that makes up measurements instead of copying, so the pcie, nvlink and hbm
// checks run end to end without a GPU: healthy figures per direction, injected slow factors
// honoured as the real engine does, and GPUs or pairs that can be made slow, corrupting,
// failing, hung or without peer access.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "preflight/engine/bandwidth_engine.hpp"

namespace preflight::test {

class FakeBandwidthEngine final : public BandwidthEngine {
 public:
  double pcie_gbps = 53.0;        // one direction of a healthy Gen5 x16 link
  double hbm_copy_gbps = 1450.0;  // bytes copied per second (traffic is twice that)
  double peer_gbps = 380.0;       // one direction of a healthy H100 NVLink pair
  // With several GPUs copying to or from the host at once, each gets this share (1: a
  // topology that carries them all).
  double shared_host_factor = 1.0;
  std::map<int, double> gpu_factor;              // by CUDA ordinal: a slow link or memory
  std::set<std::pair<int, int>> no_peer_access;  // ordered (from, to) ordinals
  std::set<int> corrupt_copies;                  // ordinals whose copies deliver 3 bad words
  std::set<int> failing;                         // ordinals whose measurements report a CUDA error
  std::set<int> hanging;                         // ordinals whose measurements never return
  std::set<int> bad_memory;                      // ordinals whose pattern test finds 5 bad words
  std::vector<PatternJob> pattern_jobs;          // what pattern_test was asked
  std::vector<CopyMeasurement> measurements;

  ~FakeBandwidthEngine() override { release(); }
  void release() {
    {
      std::lock_guard<std::mutex> lock(gate_->mutex);
      gate_->open = true;
    }
    gate_->cv.notify_all();
  }

  MeasurementResult measure(const CopyMeasurement& m) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      measurements.push_back(m);
    }
    MeasurementResult r;
    std::set<int> host_gpus;
    for (const auto& s : m.streams) {
      if (s.direction == CopyDirection::host_to_device ||
          s.direction == CopyDirection::device_to_host) {
        host_gpus.insert(s.cuda_ordinal);
      }
    }
    for (const auto& s : m.streams) {
      if (hanging.count(s.cuda_ordinal) != 0) block();
      if (failing.count(s.cuda_ordinal) != 0) {
        r.error = "cudaErrorLaunchFailure: unspecified launch failure";
        return r;
      }
    }
    std::vector<double> totals(static_cast<std::size_t>(m.samples), 0.0);
    for (const auto& s : m.streams) {
      double rate = 0.0;
      switch (s.direction) {
        case CopyDirection::host_to_device:
        case CopyDirection::device_to_host:
          rate = pcie_gbps * (host_gpus.size() > 1 ? shared_host_factor : 1.0);
          break;
        case CopyDirection::device_to_device:
          rate = hbm_copy_gbps;
          break;
        case CopyDirection::peer:
          rate = peer_gbps;
          break;
      }
      const auto factor = gpu_factor.find(s.cuda_ordinal);
      if (factor != gpu_factor.end()) rate *= factor->second;
      rate *= s.slow_factor;
      StreamResult sr;
      sr.gbps.assign(static_cast<std::size_t>(m.samples), rate);
      sr.verified = true;
      sr.bad_words = corrupt_copies.count(s.cuda_ordinal) != 0 ? 3 : 0;
      sr.numa_node =
          s.direction == CopyDirection::peer || s.direction == CopyDirection::device_to_device
              ? -1
              : s.cuda_ordinal / 4;
      for (auto& t : totals) t += rate;
      r.streams.push_back(sr);
    }
    r.total_gbps = totals;
    return r;
  }

  PeerAccess peer_access(int from, int to) override {
    PeerAccess p;
    p.supported = no_peer_access.count({from, to}) == 0;
    return p;
  }

  PatternResult pattern_test(const PatternJob& job) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pattern_jobs.push_back(job);
    }
    PatternResult r;
    r.bytes_tested = job.bytes;
    r.patterns_run = job.patterns;
    r.seconds = 0.05;
    if (job.inject_corrupt) {
      r.bad_words += 1;
      const std::uint64_t at = (job.bytes / 4 / 3) * 4;
      r.ranges.push_back({at, at + 4, 1});
    }
    if (bad_memory.count(job.cuda_ordinal) != 0) {
      r.bad_words += 5;
      r.ranges.push_back({0x40000000, 0x40000014, 5});
    }
    return r;
  }

  Reference reference(const CopyStream&, std::size_t, int, int) override { return {}; }

 private:
  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool open = false;
  };
  void block() {
    const auto gate = gate_;
    std::unique_lock<std::mutex> lock(gate->mutex);
    gate->cv.wait(lock, [&] { return gate->open; });
  }
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  std::mutex mutex_;
};

}  // namespace preflight::test
