#include "run/supervisor.hpp"

#include <signal.h>

#include <cerrno>
#include <ctime>
#include <optional>
#include <string>

namespace preflight {

namespace {

sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

std::string signal_name(int signo) {
  switch (signo) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    default:
      return "signal " + std::to_string(signo);
  }
}

}  // namespace

void Supervisor::block_termination_signals() {
  const sigset_t set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

Supervisor::Supervisor(RunState& state, SteadyClock::time_point hard_deadline,
                       std::chrono::milliseconds grace, Emergency emergency)
    : state_(state),
      hard_deadline_(hard_deadline),
      grace_(grace),
      emergency_(std::move(emergency)) {
  thread_ = std::thread([this] { loop(); });
}

Supervisor::~Supervisor() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void Supervisor::loop() {
  const sigset_t set = termination_signals();
  std::optional<SteadyClock::time_point> give_up_at;
  while (!stop_.load()) {
    timespec tick{0, 50 * 1000 * 1000};
    const int signo = sigtimedwait(&set, nullptr, &tick);
    const auto now = SteadyClock::now();
    if (signo > 0) {
      if (state_.stop_cause() != StopCause::none) {
        give_up_at = now;  // a second signal: do not wait for the runner any longer
      } else {
        state_.request_stop(StopCause::signal, signal_name(signo));
        give_up_at = now + grace_;
      }
    }
    if (!give_up_at && now >= hard_deadline_) {
      // The runner enforces the deadline itself; reaching this means it is stuck.
      state_.request_stop(StopCause::deadline, "the --timeout was reached");
      give_up_at = now;
    }
    if (give_up_at && now >= *give_up_at && !state_.finalized()) {
      if (state_.claim_finalize()) emergency_(state_.compose());
      return;
    }
  }
}

}  // namespace preflight
