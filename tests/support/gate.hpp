#pragma once
// A gate a test opens: work blocked on it stands in for a driver call that does not return.
// Shared with the blocked work (hold it in a shared_ptr) so that it outlives whoever made it.
#include <condition_variable>
#include <mutex>

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

}  // namespace preflight::test
