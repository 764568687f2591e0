#pragma once
// The supervisor: a thread of its own that takes SIGTERM and SIGINT (Slurm kills an overrunning
// prolog with SIGTERM) and watches the hard deadline. It does not depend on the runner's or any
// check's thread: if the runner has not written the verdict shortly after a signal or after the
// deadline, the supervisor composes the partial verdict from RunState and hands it to the
// emergency callback, which writes it and ends the process.
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "run/runner.hpp"

namespace preflight {

class Supervisor {
 public:
  using Emergency = std::function<void(const Verdict&)>;  // writes and ends the process

  // Blocks SIGTERM and SIGINT in the calling thread; call before any other thread starts so
  // that every thread inherits the mask and only the supervisor receives them.
  static void block_termination_signals();

  Supervisor(RunState& state, SteadyClock::time_point hard_deadline,
             std::chrono::milliseconds grace, Emergency emergency);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

 private:
  void loop();

  RunState& state_;
  SteadyClock::time_point hard_deadline_;
  std::chrono::milliseconds grace_;
  Emergency emergency_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace preflight
