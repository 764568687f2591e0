// The steps of one NCCL collective run (nccl_session.hpp).
#include "gpu/nccl_session.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "kernels/collective_kernels.hpp"

namespace preflight {
namespace nccl_detail {

using bandwidth_detail::event_done;
using bandwidth_detail::wait_stream_idle;

namespace {

// How often NCCL's state is read while events are polled: a remote error then ends the wait
// early instead of at the deadline.
constexpr int kEventPollsPerStateCheck = 50;
constexpr auto kHoldPoll = std::chrono::milliseconds(10);

std::uint64_t elements(std::size_t bytes) {
  return std::max<std::uint64_t>(1, bytes / sizeof(std::uint32_t));
}

}  // namespace

std::string invalid_collective_job(const CollectiveJob& job) {
  const std::size_t local = job.cuda_ordinals.size();
  if (job.unique_id.size() != NCCL_UNIQUE_ID_BYTES) {
    return "invalid job: the unique id has " + std::to_string(job.unique_id.size()) +
           " bytes, NCCL's have " + std::to_string(NCCL_UNIQUE_ID_BYTES);
  }
  if (local == 0) return "invalid job: no local GPU";
  if (job.nranks < 1 || job.first_rank < 0 ||
      static_cast<std::size_t>(job.first_rank) + local > static_cast<std::size_t>(job.nranks)) {
    return "invalid job: ranks " + std::to_string(job.first_rank) + ".." +
           std::to_string(job.first_rank + static_cast<int>(local) - 1) + " outside 0.." +
           std::to_string(job.nranks - 1);
  }
  std::set<int> seen;
  for (int ordinal : job.cuda_ordinals) {
    if (ordinal < 0) return "invalid job: CUDA device " + std::to_string(ordinal);
    // NCCL refuses two ranks of one communicator on one GPU.
    if (!seen.insert(ordinal).second) {
      return "invalid job: CUDA device " + std::to_string(ordinal) + " appears twice";
    }
  }
  if (job.sizes.empty()) return "invalid job: no sizes";
  if (job.iterations < 1 || job.warmups < 0) return "invalid job: iterations < 1 or warmups < 0";
  // The receive buffer of an all_gather holds every rank's contribution.
  const std::size_t largest = *std::max_element(job.sizes.begin(), job.sizes.end());
  if (largest > SIZE_MAX / static_cast<std::size_t>(job.nranks)) {
    return "invalid job: " + std::to_string(largest) + " bytes x " + std::to_string(job.nranks) +
           " ranks does not fit in memory";
  }
  for (int l : job.corrupt_local_ranks) {
    if (l < 0 || l >= static_cast<int>(local)) {
      return "invalid job: corrupt_local_ranks holds " + std::to_string(l) +
             ", which is not a local rank";
    }
  }
  return {};
}

CollectiveSession::~CollectiveSession() {
  abort_comms();
}

void CollectiveSession::setup() {
  std::uint64_t largest = 0;
  for (std::size_t bytes : job_.sizes) largest = std::max(largest, elements(bytes));
  for (std::size_t l = 0; l < job_.cuda_ordinals.size(); ++l) {
    auto owned = std::make_unique<Rank>(device_);
    Rank& r = *owned;
    r.ordinal = job_.cuda_ordinals[l];
    r.rank = job_.first_rank + static_cast<int>(l);
    const double local = l < job_.local_slow_factors.size() ? job_.local_slow_factors[l] : 1.0;
    r.slow = std::min(job_.slow_factor, local);
    r.corrupt = (job_.corrupt_send && l == 0) ||
                std::find(job_.corrupt_local_ranks.begin(), job_.corrupt_local_ranks.end(),
                          static_cast<int>(l)) != job_.corrupt_local_ranks.end();
    device_.set(r.ordinal);
    PREFLIGHT_CUDA_CHECK(preload_collective_kernels());
    r.stream.emplace();
    ranks_.push_back(std::move(owned));  // from here on, an error path must wait for its stream
    for (TimingEvent* e : {&r.warm_start, &r.warm_end, &r.start, &r.end, &r.done})
      *e = timing_event();
    r.send.emplace(largest);
    r.recv.emplace(receive_count(largest));
    r.counters.emplace(counter_count());
    r.counts.emplace(counter_count());
  }
}

bool CollectiveSession::comms_pending(const char* call) const {
  bool pending = false;
  for (const auto& r : ranks_) {
    if (r->comm == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    const ncclResult_t status = api_.comm_get_async_error(r->comm, &state);
    if (status != ncclSuccess) {
      throw NcclFailure{lib_.describe("ncclCommGetAsyncError", status, r->comm)};
    }
    if (state == ncclInProgress) {
      pending = true;
    } else if (state != ncclSuccess) {
      throw NcclFailure{lib_.describe(call, state, r->comm)};
    }
  }
  return pending;
}

template <class Call>
ncclResult_t CollectiveSession::in_group(const char* name, Call call) {
  ncclResult_t status = api_.group_start();
  if (status != ncclSuccess) throw NcclFailure{lib_.describe("ncclGroupStart", status, nullptr)};
  // The group is always closed, even after a failure: NCCL's group state is per thread.
  std::string failure;
  for (auto& r : ranks_) {
    const cudaError_t set = device_.try_set(r->ordinal);
    if (set != cudaSuccess) {
      if (failure.empty()) failure = DeviceScope::failure_text(set);
      continue;
    }
    status = call(*r);
    if (status != ncclSuccess && status != ncclInProgress && failure.empty()) {
      failure = lib_.describe(name, status, r->comm);
    }
  }
  status = api_.group_end();
  if (status != ncclSuccess && status != ncclInProgress && failure.empty()) {
    failure = lib_.describe("ncclGroupEnd", status, nullptr);
  }
  if (!failure.empty()) throw NcclFailure{failure};
  return status;
}

void CollectiveSession::init() {
  ncclUniqueId id;
  std::memcpy(id.internal, job_.unique_id.data(), NCCL_UNIQUE_ID_BYTES);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // every call returns at once; progress is polled against the deadline
  in_group("ncclCommInitRankConfig", [&](Rank& r) {
    return api_.comm_init_rank_config(&r.comm, job_.nranks, id, r.rank, &config);
  });
  wait_comms("ncclCommInitRankConfig");
}

void CollectiveSession::hold_until_deadline() const {
  while (SteadyClock::now() < job_.deadline) {
    if (cancelled()) throw Cancelled{};
    std::this_thread::sleep_for(
        std::min<SteadyClock::duration>(kHoldPoll, job_.deadline - SteadyClock::now()));
  }
}

void CollectiveSession::enqueue(std::uint64_t count) {
  const char* call = gather_ ? "ncclAllGather" : "ncclAllReduce";
  const ncclResult_t status = in_group(call, [&](Rank& r) {
    const cudaStream_t s = r.stream->get();
    return gather_ ? api_.all_gather(r.send->get(), r.recv->get(), count, ncclUint32, r.comm, s)
                   : api_.all_reduce(r.send->get(), r.recv->get(), count, ncclFloat32, ncclSum,
                                     r.comm, s);
  });
  // In progress: the collectives are on the streams only once every communicator says so.
  if (status == ncclInProgress) wait_comms(call);
}

void CollectiveSession::wait_events(TimingEvent Rank::*event) const {
  for (int polls = 0;; ++polls) {
    bool all = true;
    for (const auto& r : ranks_) {
      if (!event_done(((*r).*event).get())) {
        all = false;
        break;
      }
    }
    if (all) return;
    if (polls % kEventPollsPerStateCheck == 0) {
      (void)comms_pending(gather_ ? "ncclAllGather" : "ncclAllReduce");
    }
    tick();
  }
}

void CollectiveSession::measure(std::size_t bytes) {
  const std::uint64_t count = elements(bytes);
  bool slowed = false;
  for (auto& r : ranks_) {
    const cudaStream_t s = r->stream->get();
    device_.set(r->ordinal);
    const auto rank = static_cast<std::uint32_t>(r->rank);
    if (gather_) {
      PREFLIGHT_CUDA_CHECK(launch_collective_fill_words(r->send->get(), count, job_.seed, rank, s));
    } else {
      PREFLIGHT_CUDA_CHECK(launch_collective_fill_values(reinterpret_cast<float*>(r->send->get()),
                                                         count, job_.seed, rank, bits_, s));
    }
    if (r->corrupt) {
      PREFLIGHT_CUDA_CHECK(launch_collective_corrupt(r->send->get(), count / 2, !gather_, s));
    }
    // All ones is no pattern of ours in practice (and a NaN as a float): a collective that
    // writes nothing cannot pass.
    PREFLIGHT_CUDA_CHECK(
        cudaMemsetAsync(r->recv->get(), 0xFF, receive_count(count) * sizeof(std::uint32_t), s));
    slowed = slowed || (r->slow > 0 && r->slow < 1);
  }
  // The idling needs an iteration time, so a slowed job warms up at least once.
  const int warmups = std::max(job_.warmups, slowed ? 1 : 0);
  for (int i = 0; i < warmups; ++i) {
    const bool last = i + 1 == warmups;
    if (last) {
      for (auto& r : ranks_) {
        device_.set(r->ordinal);
        PREFLIGHT_CUDA_CHECK(cudaEventRecord(r->warm_start.get(), r->stream->get()));
      }
    }
    enqueue(count);
    if (last) {
      for (auto& r : ranks_) {
        device_.set(r->ordinal);
        PREFLIGHT_CUDA_CHECK(cudaEventRecord(r->warm_end.get(), r->stream->get()));
      }
    }
  }
  if (warmups > 0) {
    wait_events(&Rank::warm_end);
    for (auto& r : ranks_) r->iteration_ms = elapsed_ms(r->warm_start.get(), r->warm_end.get());
  }
  for (auto& r : ranks_) {
    device_.set(r->ordinal);
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(r->start.get(), r->stream->get()));
  }
  for (int i = 0; i < job_.iterations; ++i) {
    enqueue(count);
    for (auto& r : ranks_) {
      if (!(r->slow > 0 && r->slow < 1)) continue;
      device_.set(r->ordinal);
      const double idle_ms = r->iteration_ms * (1.0 / r->slow - 1.0);
      PREFLIGHT_CUDA_CHECK(
          launch_collective_spin(static_cast<std::uint64_t>(idle_ms * 1e6), r->stream->get()));
    }
  }
  for (auto& r : ranks_) {
    device_.set(r->ordinal);
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(r->end.get(), r->stream->get()));
  }
  wait_events(&Rank::end);
  double ms = 0.0;
  for (auto& r : ranks_) ms = std::max(ms, elapsed_ms(r->start.get(), r->end.get()));
  CollectiveSizeResult size;
  size.bytes = count * sizeof(std::uint32_t);
  size.seconds = ms / 1e3 / job_.iterations;
  size.algbw_gbps = collective_algbw_gbps(job_.op, size.bytes, job_.nranks, size.seconds);
  size.busbw_gbps = collective_busbw_gbps(job_.op, size.bytes, job_.nranks, size.seconds);
  out_.sizes.push_back(size);
  verify(count);
}

void CollectiveSession::verify(std::uint64_t count) {
  const std::size_t counters = counter_count();
  for (auto& r : ranks_) {
    const cudaStream_t s = r->stream->get();
    device_.set(r->ordinal);
    PREFLIGHT_CUDA_CHECK(cudaMemsetAsync(r->counters->get(), 0, r->counters->size_bytes(), s));
    const auto nranks = static_cast<std::uint32_t>(job_.nranks);
    if (gather_) {
      PREFLIGHT_CUDA_CHECK(launch_collective_verify_gather(r->recv->get(), count, nranks, job_.seed,
                                                           r->counters->get(), s));
    } else {
      PREFLIGHT_CUDA_CHECK(
          launch_collective_verify_sum(reinterpret_cast<const float*>(r->recv->get()), count,
                                       nranks, job_.seed, bits_, r->counters->get(), s));
    }
    PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(r->counts->get(), r->counters->get(),
                                         r->counters->size_bytes(), cudaMemcpyDeviceToHost, s));
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(r->done.get(), s));
  }
  wait_events(&Rank::done);
  for (std::size_t l = 0; l < ranks_.size(); ++l) {
    const Rank& r = *ranks_[l];
    auto& row = out_.corrupt_from[l];
    if (gather_) {
      for (std::size_t source = 0; source < counters; ++source) row[source] += (*r.counts)[source];
    } else {
      row[static_cast<std::size_t>(r.rank)] += (*r.counts)[0];
    }
  }
}

void CollectiveSession::finalize() {
  for (auto& r : ranks_) {
    if (r->comm == nullptr) continue;
    const ncclResult_t status = api_.comm_finalize(r->comm);
    if (status != ncclSuccess && status != ncclInProgress) {
      throw NcclFailure{lib_.describe("ncclCommFinalize", status, r->comm)};
    }
  }
  wait_comms("ncclCommFinalize");
  std::string failure;
  for (auto& r : ranks_) {
    if (r->comm == nullptr) continue;
    const ncclResult_t status = api_.comm_destroy(r->comm);
    if (status != ncclSuccess && failure.empty()) {
      failure = lib_.describe("ncclCommDestroy", status, nullptr);
    }
    r->comm = nullptr;
  }
  if (!failure.empty()) throw NcclFailure{failure};
}

void CollectiveSession::abort_comms() noexcept {
  for (auto& r : ranks_) {
    if (r->comm == nullptr) continue;
    (void)device_.try_set(r->ordinal);
    api_.comm_abort(r->comm);  // ends NCCL's kernels and frees the communicator
    r->comm = nullptr;
  }
  cudaGetLastError();
}

void CollectiveSession::abandon() noexcept {
  for (auto& r : ranks_) r->abandon();
}

void CollectiveSession::dispose_after_error() noexcept {
  cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  // Freed once every stream is idle; leaked when one is still busy at the deadline or the
  // context is broken (every call would fail anyway).
  for (auto& r : ranks_) {
    if (r->stream && !wait_stream_idle(device_, r->ordinal, r->stream->get(), job_.deadline)) {
      abandon();
      cudaGetLastError();
      return;
    }
  }
  cudaGetLastError();
}

}  // namespace nccl_detail
}  // namespace preflight
