// BoundedTask: work on a thread of its own, waited for against a deadline and a stop condition,
// left behind when it does not return (src/run/bounded_task.hpp). Every wait polls
// against a deadline; nothing here depends on how fast the machine is, only on the order of
// events the tests themselves control.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "run/bounded_task.hpp"
#include "support/gate.hpp"

namespace preflight {
namespace {

using namespace std::chrono_literals;
using test::Gate;

TEST_CASE("bounded task: a task that returns in time hands back its value", "[bounded_task]") {
  auto task = BoundedTask<std::string>::start([] { return std::string("probed"); });
  REQUIRE(task.started());
  REQUIRE(task.wait(SteadyClock::now() + 30s) == TaskEnd::returned);
  CHECK(task.returned());
  CHECK(task.error().empty());
  const auto value = task.take();
  REQUIRE(value);
  CHECK(*value == "probed");
  CHECK_FALSE(task.take());  // moved out once
}

TEST_CASE("bounded task: an exception becomes the error, with no value", "[bounded_task]") {
  auto task =
      BoundedTask<int>::start([]() -> int { throw std::runtime_error("cudaMalloc failed"); });
  REQUIRE(task.wait(SteadyClock::now() + 30s) == TaskEnd::returned);
  CHECK_FALSE(task.take());
  CHECK(task.error() == "cudaMalloc failed");

  auto odd = BoundedTask<int>::start([]() -> int { throw 42; });
  REQUIRE(odd.wait(SteadyClock::now() + 30s) == TaskEnd::returned);
  CHECK(odd.error() == "unknown exception");
}

TEST_CASE("bounded task: a task that does not return is left behind at the deadline",
          "[bounded_task]") {
  auto gate = std::make_shared<Gate>();
  auto task = BoundedTask<int>::start([gate] {
    gate->wait();
    return 7;
  });
  const auto deadline = SteadyClock::now() + 50ms;
  CHECK(task.wait(deadline) == TaskEnd::deadline);
  CHECK(SteadyClock::now() >= deadline);
  CHECK_FALSE(task.returned());
  CHECK_FALSE(task.take());  // nothing before it returns
  // The abandoned worker still finishes into its own state once the driver lets it go.
  gate->release();
  REQUIRE(task.wait(SteadyClock::now() + 30s) == TaskEnd::returned);
  CHECK(task.take() == 7);
}

TEST_CASE("bounded task: a stop condition ends the wait before the deadline", "[bounded_task]") {
  auto gate = std::make_shared<Gate>();
  auto task = BoundedTask<int>::start([gate] {
    gate->wait();
    return 1;
  });
  std::atomic<int> looks{0};
  const auto end = task.wait(SteadyClock::now() + 30s, [&looks] { return ++looks >= 3; });
  CHECK(end == TaskEnd::stopped);
  CHECK(looks == 3);
  // A waiter that pauses on other events gets its pause called, never longer than kTaskPoll.
  std::vector<std::chrono::milliseconds> pauses;
  const auto paused = task.wait(
      SteadyClock::now() + 30s, [&pauses] { return pauses.size() >= 2; },
      [&pauses](std::chrono::milliseconds d) { pauses.push_back(d); });
  CHECK(paused == TaskEnd::stopped);
  REQUIRE(pauses.size() == 2);
  for (const auto d : pauses) CHECK((d >= 1ms && d <= kTaskPoll));
  gate->release();
  REQUIRE(task.wait(SteadyClock::now() + 30s) == TaskEnd::returned);
}

TEST_CASE("bounded task: wait_all waits for every started task", "[bounded_task]") {
  auto gate = std::make_shared<Gate>();
  std::vector<BoundedTask<int>> tasks(3);  // tasks[1] never started: counts as returned
  CHECK_FALSE(tasks[1].started());
  CHECK(tasks[1].returned());
  tasks[0] = BoundedTask<int>::start([] { return 0; });
  tasks[2] = BoundedTask<int>::start([gate] {
    gate->wait();
    return 2;
  });
  CHECK(wait_all(tasks, SteadyClock::now() + 50ms, [] { return false; }) == TaskEnd::deadline);
  // tasks[0] returns at once, but a busy machine may not have run its thread within those 50 ms.
  CHECK(tasks[0].wait(SteadyClock::now() + 30s) == TaskEnd::returned);
  CHECK_FALSE(tasks[2].returned());
  CHECK(wait_all(tasks, SteadyClock::now() + 30s, [] { return true; }) == TaskEnd::stopped);
  gate->release();
  CHECK(wait_all(tasks, SteadyClock::now() + 30s, [] { return false; }) == TaskEnd::returned);
  CHECK(tasks[2].take() == 2);
  CHECK_FALSE(tasks[1].take());
}

}  // namespace
}  // namespace preflight
