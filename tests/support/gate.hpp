#pragma once
// A gate a test opens: work blocked on it stands in for a driver call that does not return.
// Shared with the blocked work (hold it in a shared_ptr) so that it outlives whoever made it.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

namespace preflight::test {

struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [this] { return open; });
  }
};

// Takes `seconds`, as a real engine's products or writes would, or less when `cancel` is set:
// fakes that spend their planned time (tests/unit/test_run_plan.cpp).
inline void take_time(double seconds, const std::shared_ptr<const std::atomic<bool>>& cancel) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds));
  while (std::chrono::steady_clock::now() < until && !(cancel && cancel->load())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace preflight::test
