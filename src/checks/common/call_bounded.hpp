#pragma once
// An engine call from a check, bounded: what the bandwidth, rdma and nccl checks use for every
// call into their engine (src/run/bounded_task.hpp).
#include <chrono>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "preflight/check.hpp"
#include "run/bounded_task.hpp"

namespace preflight {

// Runs `work` on a thread of its own and waits until `deadline` (plus a grace for the engine to
// report its own timeout) or the check's cancel. nullopt when it did not return: the thread is
// left behind (counted in ctx.abandoned_threads) and the caller reports a timeout. Engine calls
// poll their own deadline, but may still block inside the driver (allocation, context
// creation), which only this bound protects against.
template <class T>
std::optional<T> call_bounded(CheckContext& ctx, SteadyClock::time_point deadline,
                              std::function<T()> work) {
  auto task = BoundedTask<T>::start(std::move(work));
  const TaskEnd end = task.wait(deadline + grace::kEngineCall, [&ctx] { return ctx.cancelled(); });
  if (end != TaskEnd::returned) {
    if (ctx.abandoned_threads) ctx.abandoned_threads->fetch_add(1);
    return std::nullopt;
  }
  const std::string error = task.error();
  if (!error.empty()) throw std::runtime_error(error);
  return task.take();
}

}  // namespace preflight
