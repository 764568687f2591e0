#pragma once
// A CollectiveEngine that makes up results instead of running NCCL, so the nccl check runs end
// to end without a GPU: healthy bus bandwidths, the jobs' injected faults honoured as the real
// engine does (a corrupted send buffer is seen by every receiver; a slowed rank slows the whole
// communicator), and failures, hangs and corrupting senders, receivers or links to order.
#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "preflight/engine/collective_engine.hpp"

namespace preflight::test {

class FakeCollectiveEngine final : public CollectiveEngine {
 public:
  std::string missing_library;          // library_problem(): NCCL not found, and why
  std::string unavailable;              // unavailable_reason()
  std::string unique_id_error;          // unique_id() fails with this
  double allgather_busbw_gbps = 370.0;  // a healthy H100 SXM node, largest size
  double allreduce_busbw_gbps = 420.0;
  std::string init_error;                       // run(): the communicators do not come up
  std::string run_error;                        // run(): a collective fails after init
  bool time_out = false;                        // run(): the engine reports timed_out after init
  bool hang = false;                            // run(): never returns until release()
  std::set<int> corrupt_senders;                // ranks whose data arrives corrupt everywhere
  std::set<int> corrupt_receivers;              // ranks that receive everything corrupt
  std::set<std::pair<int, int>> corrupt_links;  // (source, receiver) ranks
  // What the engine was asked, in order. A copy taken under the lock: a transfer thread the
  // runner abandoned may still be adding to it.
  std::vector<CollectiveJob> jobs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return jobs_;
  }

  ~FakeCollectiveEngine() override { release(); }
  void release() {
    {
      std::lock_guard<std::mutex> lock(gate_->mutex);
      gate_->open = true;
    }
    gate_->cv.notify_all();
  }

  std::string library_problem() override { return missing_library; }
  std::string unavailable_reason() override { return unavailable; }

  std::vector<char> unique_id(std::string& error) override {
    if (!unique_id_error.empty()) {
      error = unique_id_error;
      return {};
    }
    return std::vector<char>(128, static_cast<char>(++ids_));
  }

  CollectiveResult run(const CollectiveJob& job) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(job);
    }
    if (hang) {
      // Like a driver call that never returns. Once released, touch nothing of this engine: the
      // test may already be destroying it.
      const auto gate = gate_;
      std::unique_lock<std::mutex> lock(gate->mutex);
      gate->cv.wait(lock, [&] { return gate->open; });
      CollectiveResult late;
      late.error = "released";
      return late;
    }
    const std::size_t local = job.cuda_ordinals.size();
    const auto n = static_cast<std::size_t>(job.nranks);
    CollectiveResult r;
    r.corrupt_from.assign(local, std::vector<std::uint64_t>(n, 0));
    if (!init_error.empty()) {
      r.error = init_error;
      return r;
    }
    r.initialized = true;
    if (time_out) {
      r.timed_out = true;
      return r;
    }
    double factor = job.slow_factor;
    for (double f : job.local_slow_factors) factor = std::min(factor, f);
    const double busbw =
        (job.op == CollectiveOp::all_gather ? allgather_busbw_gbps : allreduce_busbw_gbps) * factor;
    for (std::size_t bytes : job.sizes) {
      CollectiveSizeResult s;
      s.bytes = bytes / 4 * 4;
      // The time that gives this busbw, so the fields agree as the real engine's do.
      const double unit = collective_busbw_gbps(job.op, s.bytes, job.nranks, 1.0);
      s.seconds = unit > 0 && busbw > 0 ? unit / busbw : 1e-3;
      s.algbw_gbps = collective_algbw_gbps(job.op, s.bytes, job.nranks, s.seconds);
      s.busbw_gbps = collective_busbw_gbps(job.op, s.bytes, job.nranks, s.seconds);
      r.sizes.push_back(s);
      add_corruption(job, r);
    }
    if (!run_error.empty()) {
      r.error = run_error;
      r.sizes.resize(r.sizes.empty() ? 0 : 1);  // failed after the first size
      return r;
    }
    r.verified = true;
    return r;
  }

 private:
  // One size's worth of wrong elements (3 per corrupted slot), as the real engine counts them.
  void add_corruption(const CollectiveJob& job, CollectiveResult& r) const {
    std::set<int> senders = corrupt_senders;
    if (job.corrupt_send) senders.insert(job.first_rank);
    for (int l : job.corrupt_local_ranks) senders.insert(job.first_rank + l);
    for (std::size_t l = 0; l < r.corrupt_from.size(); ++l) {
      const int receiver = job.first_rank + static_cast<int>(l);
      for (int s = 0; s < job.nranks; ++s) {
        const bool local_copy = s == receiver;
        const bool wrong = senders.count(s) != 0 ||
                           (!local_copy && corrupt_receivers.count(receiver) != 0) ||
                           corrupt_links.count({s, receiver}) != 0;
        if (!wrong) continue;
        // A sum is counted against the receiver itself.
        const auto slot =
            static_cast<std::size_t>(job.op == CollectiveOp::all_gather ? s : receiver);
        r.corrupt_from[l][slot] += 3;
        if (job.op == CollectiveOp::all_reduce) break;  // one wrong sum per element
      }
    }
  }

  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool open = false;
  };
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  mutable std::mutex mutex_;
  std::vector<CollectiveJob> jobs_;
  int ids_ = 0;
};

}  // namespace preflight::test
