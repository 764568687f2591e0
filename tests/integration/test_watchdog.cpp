// The watchdog and the signal path: a check that never returns (hang@check=inventory) must
// not hold the run past its deadline, and SIGTERM/SIGINT must still produce a verdict.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

const std::string kHang = "hang@check=inventory";

// Waits (up to 10 s) until the process blocks SIGTERM and SIGINT, i.e. `run` has started and
// a termination signal is the supervisor's to handle rather than the default action; so a
// loaded machine that is slow to start the binary does not turn the test into a race. Where
// /proc cannot tell, it returns at once.
void wait_until_signals_blocked(pid_t pid) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  const unsigned long long wanted = (1ull << (SIGTERM - 1)) | (1ull << (SIGINT - 1));
  while (std::chrono::steady_clock::now() < give_up) {
    std::string status;
    try {
      status = read_file("/proc/" + std::to_string(pid) + "/status");
    } catch (const std::exception&) {
      return;
    }
    const auto pos = status.find("SigBlk:");
    if (pos == std::string::npos) return;
    const unsigned long long blocked = std::stoull(status.substr(pos + 7), nullptr, 16);
    if ((blocked & wanted) == wanted) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Whether the verdict's inventory check was running when the signal came (rather than not yet
// started: the signal arrived during discovery).
bool signalled_during_check(const TempDir& dir) {
  try {
    const json v = parse_json(read_file(dir.file("v.json")), "verdict");
    const json* inventory = find_check(v, "inventory");
    return inventory != nullptr && find_finding((*inventory)["findings"], "CHECK_INTERRUPTED");
  } catch (const std::exception&) {
    return true;  // no readable verdict: a failure for check_interrupted_verdict to report
  }
}

// Starts a hung run with a long deadline, signals it while the hung check runs, and returns the
// result; the process gets 30 s to end before it is killed. Nothing outside the process tells
// when the check has started, so the signal goes a while after the run has blocked the signals
// (discovery on a node without GPU takes milliseconds): 1 s. A run that the signal reached
// before its check started (a machine busy enough to stretch discovery past that) is no verdict
// on the watchdog: it is run again with twice the wait, up to 8 s.
RunResult hang_and_signal(const TempDir& dir, int signo) {
  for (int wait_s = 1;; wait_s *= 2) {
    Child child = Child::start({preflight_binary(), "run", "--inject-fault", kHang, "--timeout",
                                "60", "--json", dir.file("v.json")},
                               no_gpu_options());
    wait_until_signals_blocked(child.pid());
    std::this_thread::sleep_for(std::chrono::seconds(wait_s));
    REQUIRE(child.send_signal(signo));
    RunResult r = child.wait(30);
    if (wait_s >= 8 || !r.exited() || signalled_during_check(dir)) return r;
    WARN("the signal came before the hung check started, after " << wait_s << " s; trying again");
  }
}

void check_interrupted_verdict(const TempDir& dir, const RunResult& r, const std::string& name) {
  INFO(r.describe() << " (" << r.since_signal_s << " s after " << name << ")\nstdout:\n"
                    << r.out << "\nstderr:\n"
                    << r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 1);
  // About 0.1 s idle; a hung check that held the run would take the 60 s of --timeout.
  CHECK(r.since_signal_s < 10.0);

  const json v = parse_json(read_file(dir.file("v.json")), "verdict");
  INFO(v.dump(2));
  CHECK(joined(verdict_shape_problems(v)) == "");
  CHECK(v["verdict"] == "fail");
  CHECK(v["exit_code"] == 1);
  CHECK(v["reason"].get<std::string>().find(name) != std::string::npos);
  CHECK(v["injected_faults"] == json::array({kHang}));
  const json* inventory = find_check(v, "inventory");
  REQUIRE(inventory != nullptr);
  CHECK((*inventory)["status"] == "fail");
  const json* f = find_finding((*inventory)["findings"], "CHECK_INTERRUPTED");
  REQUIRE(f != nullptr);
  CHECK((*f)["severity"] == "fail");
  CHECK(dir.entries() == std::vector<std::string>{"v.json"});
}

}  // namespace

TEST_CASE("watchdog: a hung check times out and the run ends shortly after --timeout",
          "[watchdog]") {
  TempDir dir;
  const RunResult r = run_preflight(
      {"run", "--inject-fault", kHang, "--timeout", "5", "--json", dir.file("v.json")},
      no_gpu_options(30));
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE_FALSE(r.timed_out);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 1);
  // By the run's own clock, from its start to its verdict: the hung check is abandoned at the
  // deadline plus its cancel grace (0.5 s); the supervisor's fallback, 3 s past the deadline, would
  // mean the runner was held. Wall-clock time adds starting and ending the process, which a busy
  // machine stretches: bounded generously, far below the 30 s a hang would take.
  CHECK(r.elapsed_s < 15.0);

  const json v = parse_json(read_file(dir.file("v.json")), "verdict");
  INFO(v.dump(2));
  CHECK(v["duration_s"].get<double>() < 5.0 + 2.0);
  CHECK(joined(verdict_shape_problems(v)) == "");
  CHECK(v["verdict"] == "fail");
  CHECK(v["exit_code"] == 1);
  CHECK(v["injected_faults"] == json::array({kHang}));
  const json* inventory = find_check(v, "inventory");
  REQUIRE(inventory != nullptr);
  CHECK((*inventory)["status"] == "fail");
  const json* f = find_finding((*inventory)["findings"], "CHECK_TIMEOUT");
  REQUIRE(f != nullptr);
  CHECK((*f)["severity"] == "fail");
  CHECK((*f)["injected"] == true);  // a drill must never read as a real fault
  CHECK(dir.entries() == std::vector<std::string>{"v.json"});
}

TEST_CASE("watchdog: SIGTERM during a hung check writes the partial verdict", "[watchdog]") {
  TempDir dir;
  const RunResult r = hang_and_signal(dir, SIGTERM);
  check_interrupted_verdict(dir, r, "SIGTERM");
}

TEST_CASE("watchdog: SIGINT during a hung check writes the partial verdict", "[watchdog]") {
  TempDir dir;
  const RunResult r = hang_and_signal(dir, SIGINT);
  check_interrupted_verdict(dir, r, "SIGINT");
}

TEST_CASE("watchdog: a SIGKILLed run leaves the old verdict intact and no partial new one",
          "[watchdog]") {
  TempDir dir;
  const std::string path = dir.file("v.json");
  const std::string old = "{\"schema\": \"preflight.verdict/1\", \"verdict\": \"pass\"}\n";
  write_file(path, old);
  Child child = Child::start(
      {preflight_binary(), "run", "--inject-fault", kHang, "--timeout", "60", "--json", path},
      no_gpu_options());
  // Killed in the middle of the run: a second after it has started (blocked the signals).
  wait_until_signals_blocked(child.pid());
  std::this_thread::sleep_for(std::chrono::seconds(1));
  REQUIRE(child.send_signal(SIGKILL));
  const RunResult r = child.wait(30);
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE_FALSE(r.timed_out);
  CHECK(r.term_signal == SIGKILL);
  CHECK(read_file(path) == old);
  CHECK(dir.entries() == std::vector<std::string>{"v.json"});
}

}  // namespace preflight::test
