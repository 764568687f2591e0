#include "net/verbs_work_loop.hpp"

#include <algorithm>
#include <array>
#include <thread>

namespace preflight {
namespace {

constexpr int kWorkPostBatch = 16;  // requests handed to the poster at once
constexpr int kWorkPollBatch = 16;
// Paced (injected slowness): active phases of this long, each followed by an idle one. Long next
// to the queue's fill and drain (about a millisecond for 64 MiB in flight at 400 Gb/s).
constexpr auto kPacePhase = std::chrono::milliseconds(25);

bool cancel_requested(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load(std::memory_order_relaxed);
}

// Sleeps until `until` in short steps, returning early at the deadline or on cancel (which the
// loop then sees).
void idle_paced_until(VerbsWorkClock::time_point until, const VerbsWorkPlan& plan) {
  constexpr auto kStep = std::chrono::milliseconds(5);
  for (auto now = VerbsWorkClock::now(); now < until; now = VerbsWorkClock::now()) {
    if (now >= plan.deadline || cancel_requested(plan.cancel)) return;
    std::this_thread::sleep_for(std::min<VerbsWorkClock::duration>(kStep, until - now));
  }
}

VerbsWorkClock::duration scaled(VerbsWorkClock::duration busy, double factor) {
  return std::chrono::duration_cast<VerbsWorkClock::duration>(busy * factor);
}

}  // namespace

// "In flight" is posted - completed, and at most plan.outstanding. With completions in order,
// signal_every <= outstanding puts a signalled request in every full window, and the last
// request is always signalled, so the drain ends; without order every request is signalled.
VerbsWorkOutcome run_work_requests(const VerbsLibrary& library, const VerbsWorkPlan& plan,
                                   VerbsWorkPoster& poster) {
  VerbsWorkOutcome out;
  std::array<VerbsWorkRequest, kWorkPostBatch> requests{};
  std::array<ibv_wc, kWorkPollBatch> completions{};
  const bool paced = plan.slow_factor > 0.0 && plan.slow_factor < 1.0;
  const double idle_share = paced ? 1.0 / plan.slow_factor - 1.0 : 0.0;
  bool posting = true;
  bool last_signalled = true;  // the last request posted asked for a completion (or none yet)
  // Paced: posting is held until the queue drains, so the link really idles while the sender
  // does (with requests still queued, the device would keep the link busy through the pause).
  bool pausing = false;
  VerbsWorkClock::time_point stop_at;
  VerbsWorkClock::time_point phase_start;
  int idle_polls = 0;

  for (;;) {
    const auto now = VerbsWorkClock::now();
    if (now >= plan.deadline) {
      out.timed_out = true;
      break;
    }
    if (cancel_requested(plan.cancel)) {
      out.cancelled = true;
      break;
    }
    // At least one batch, so even a zero duration moves and verifies something.
    if (posting && out.posted > 0 && now >= stop_at) posting = false;
    if (paced && posting && out.posted > 0 && now - phase_start >= kPacePhase) pausing = true;
    const bool post_more = posting && !pausing;

    const auto in_flight = static_cast<int>(out.posted - out.completed);
    const int room = plan.outstanding - in_flight;
    // When posting stops, one more signalled request if the last one was not, so that its
    // completion accounts for the unsignalled ones before it.
    const int count =
        post_more ? std::min(room, kWorkPostBatch) : (last_signalled ? 0 : std::min(room, 1));
    if (count > 0) {
      for (int i = 0; i < count; ++i) {
        VerbsWorkRequest& request = requests[static_cast<std::size_t>(i)];
        request.id = out.posted + static_cast<std::uint64_t>(i);
        request.offset = (request.id % plan.slots) * plan.message;
        request.signalled =
            !post_more || (request.id + 1) % static_cast<std::uint64_t>(plan.signal_every) == 0;
      }
      if (out.posted == 0) {
        out.first_post = VerbsWorkClock::now();
        out.last_completion = out.first_post;
        stop_at = out.first_post + plan.duration;
        phase_start = out.first_post;
      }
      int posted = 0;
      out.error = poster.post(requests.data(), count, posted);
      out.posted += static_cast<std::uint64_t>(std::clamp(posted, 0, count));
      if (!out.error.empty()) break;
      last_signalled = requests[static_cast<std::size_t>(count - 1)].signalled;
    }

    // An inline of verbs.h that calls the provider through the context: no linked symbol.
    const int polled = ibv_poll_cq(plan.cq, kWorkPollBatch, completions.data());
    if (polled < 0) {
      out.error = verbs_failure("ibv_poll_cq", "initiator", 0);
      break;
    }
    for (int i = 0; i < polled; ++i) {
      const ibv_wc& completion = completions[static_cast<std::size_t>(i)];
      if (completion.status != IBV_WC_SUCCESS) {
        out.error =
            library.wc_status_text(completion.status) + ": wr " + std::to_string(completion.wr_id);
        break;
      }
      out.completed = plan.in_order_completions ? completion.wr_id + 1 : out.completed + 1;
      out.last_completion = VerbsWorkClock::now();
    }
    if (!out.error.empty()) break;
    const bool empty = last_signalled && out.completed == out.posted;
    if (!posting && empty) {
      out.drained = true;
      // The last active phase owes its idle share as well. Without it the window would end on
      // an active phase, and with few phases (a queue that drains slower than kPacePhase, a
      // short profile) the rate would come out well above slow_factor: 0.67 for 0.5.
      if (paced) out.last_completion += scaled(out.last_completion - phase_start, idle_share);
      break;
    }
    if (pausing && empty) {
      // Idle so that the active phase is plan.slow_factor of the whole: the rate drops to that
      // share.
      const auto idle_from = VerbsWorkClock::now();
      idle_paced_until(idle_from + scaled(idle_from - phase_start, idle_share), plan);
      pausing = false;
      phase_start = VerbsWorkClock::now();
      // The idle is part of the transfer window, also when posting stops right after it.
      out.last_completion = phase_start;
      continue;
    }
    if (count > 0 || polled > 0) {
      idle_polls = 0;
    } else if (++idle_polls < 4096) {
      std::this_thread::yield();  // a completion is usually microseconds away
    } else {
      // Nothing for a while (a stalled link): stop burning a core until the deadline.
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return out;
}

}  // namespace preflight
