#pragma once
// Work that may never come back (a driver call blocked in the kernel, an NCCL collective whose
// peer died) runs as a BoundedTask: on a detached thread of its own, waited for against a
// deadline and a stop condition, and left behind when it does not return. The worker shares its
// state with the task through a shared pointer, so an abandoned worker still writes safely into
// it after the caller has moved on. This header is the one place under src/ and include/ that
// detaches a thread; callers count what they abandon (CheckContext::abandoned_threads,
// RunState::note_abandoned_thread) and report the timeout on the entity concerned.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace preflight {

using SteadyClock = std::chrono::steady_clock;

// Seconds as a steady-clock duration, for deadlines computed in seconds; negative is zero.
inline SteadyClock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<SteadyClock::duration>(
      std::chrono::duration<double>(std::max(0.0, seconds)));
}

// How a wait ended: the task returned, the time ran out, or the caller's stop condition held.
enum class TaskEnd { returned, deadline, stopped };

// Between two looks at a task and its stop condition a waiter pauses at most this long: the
// latency of noticing a stop (a signal, a cancelled check).
inline constexpr std::chrono::milliseconds kTaskPoll{20};

// The grace policy: work that polls its own deadline is waited for that long past it, for as
// long as giving up takes for that kind of work, so that it reports its own timeout (with what
// it measured) and is abandoned only when it is stuck. One table, one reason per row.
namespace grace {
// The responsiveness probe: one kernel and one copy; it notices its deadline at once.
inline constexpr std::chrono::milliseconds kProbe{300};
// An engine call of a check (copies, patterns, RDMA transfers, collectives): it stops polling,
// leaks or frees its queued work and returns.
inline constexpr std::chrono::milliseconds kEngineCall{500};
// A check asked to stop by the runner (deadline, signal) before it is abandoned.
inline constexpr std::chrono::milliseconds kCheckCancel{500};
// NCCL communicators aborted at a run's deadline (ncclCommAbort of every rank).
inline constexpr std::chrono::milliseconds kNcclAbort{1000};
// The gemm check's per-GPU products: the product in flight finishes, then the worker returns.
inline constexpr std::chrono::milliseconds kGemmProducts{1000};
// The fleet's NCCL worker: the abort of a group's communicators, across nodes.
inline constexpr std::chrono::milliseconds kFleetNcclAbort{2000};
}  // namespace grace

template <class T>
class BoundedTask {
 public:
  BoundedTask() = default;  // not started: waits end at once, and it holds no value

  // Runs fn() on a thread of its own. fn's value, or the what() of an exception it threw, is
  // kept for take() and error().
  template <class Fn>
  static BoundedTask start(Fn fn) {
    BoundedTask task;
    task.state_ = std::make_shared<State>();
    std::thread([state = task.state_, fn = std::move(fn)]() mutable {
      std::optional<T> value;
      std::string error;
      try {
        value.emplace(fn());
      } catch (const std::exception& e) {
        error = e.what();
        if (error.empty()) error = "unknown exception";
      } catch (...) {
        error = "unknown exception";
      }
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        state->value = std::move(value);
        state->error = std::move(error);
        state->returned = true;
      }
      state->done.notify_all();
    }).detach();
    return task;
  }

  bool started() const { return state_ != nullptr; }

  // True once fn has returned or thrown; true for a task never started.
  bool returned() const {
    if (!state_) return true;
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->returned;
  }

  // Waits until the task returns, `until` passes or stop() holds. Between looks it calls
  // pause(duration) for at most kTaskPoll: a waiter that must also wake for other events (the
  // run's signals) pauses on those.
  template <class Stop, class Pause>
  TaskEnd wait(SteadyClock::time_point until, Stop stop, Pause pause) const {
    while (true) {
      if (returned()) return TaskEnd::returned;
      if (stop()) return TaskEnd::stopped;
      const auto now = SteadyClock::now();
      if (now >= until) return TaskEnd::deadline;
      pause(std::clamp(std::chrono::duration_cast<std::chrono::milliseconds>(until - now),
                       std::chrono::milliseconds(1), kTaskPoll));
    }
  }
  // As above, pausing on the task's own completion.
  template <class Stop>
  TaskEnd wait(SteadyClock::time_point until, Stop stop) const {
    return wait(until, stop, [this](std::chrono::milliseconds d) { pause_on_completion(d); });
  }
  TaskEnd wait(SteadyClock::time_point until) const {
    return wait(until, [] { return false; });
  }

  // After the task returned: its value, moved out (nullopt when fn threw, or when taken before).
  std::optional<T> take() {
    if (!state_) return std::nullopt;
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->returned) return std::nullopt;
    return std::exchange(state_->value, std::nullopt);
  }

  // The what() of the exception fn threw; empty when it returned a value or has not returned.
  std::string error() const {
    if (!state_) return {};
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->error;
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable done;
    bool returned = false;
    std::optional<T> value;
    std::string error;
  };

  void pause_on_completion(std::chrono::milliseconds d) const {
    std::unique_lock<std::mutex> lock(state_->mutex);
    state_->done.wait_for(lock, d, [this] { return state_->returned; });
  }

  std::shared_ptr<State> state_;
};

// Waits for every task of `tasks` (a range of BoundedTask) as BoundedTask::wait does, looking
// every `poll`; tasks never started count as returned.
template <class Range, class Stop>
TaskEnd wait_all(const Range& tasks, SteadyClock::time_point until, Stop stop,
                 std::chrono::milliseconds poll = kTaskPoll) {
  while (true) {
    if (std::all_of(std::begin(tasks), std::end(tasks),
                    [](const auto& task) { return task.returned(); })) {
      return TaskEnd::returned;
    }
    if (stop()) return TaskEnd::stopped;
    const auto now = SteadyClock::now();
    if (now >= until) return TaskEnd::deadline;
    std::this_thread::sleep_for(std::min(
        poll, std::max(std::chrono::milliseconds(1),
                       std::chrono::duration_cast<std::chrono::milliseconds>(until - now))));
  }
}

}  // namespace preflight
