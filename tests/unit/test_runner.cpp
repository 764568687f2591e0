// The runner and supervisor with made-up checks: deadlines, hangs, errors, stops, skips.
#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

#include "checks/inventory/inventory_findings.hpp"
#include "model/abandoned.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/errors.hpp"
#include "run/runner.hpp"
#include "run/supervisor.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/fake_backend.hpp"

using namespace preflight;
using namespace std::chrono_literals;

namespace {

enum class Behaviour { pass, fail, raise, cooperative_overrun };

class FakeCheck final : public Check {
 public:
  FakeCheck(std::string name, Behaviour b, bool needs_gpu = false, bool required = false)
      : behaviour_(b) {
    info_.name = std::move(name);
    info_.description = "test check";
    info_.needs_gpu = needs_gpu;
    info_.required = required;
    info_.budget = {std::chrono::seconds(2), std::chrono::seconds(5), std::nullopt};
  }
  const CheckInfo& info() const override { return info_; }
  CheckResult run(CheckContext& ctx) const override {
    CheckResult r;
    switch (behaviour_) {
      case Behaviour::pass:
        r.summary = "ok";
        break;
      case Behaviour::fail:
        r.findings.push_back(make_finding(inventory_findings(), "MIG_ENABLED", "gpu0", "on"));
        break;
      case Behaviour::raise:
        throw std::runtime_error("device exploded");
      case Behaviour::cooperative_overrun:
        while (!ctx.cancelled()) std::this_thread::sleep_for(1ms);
        break;
    }
    return r;
  }

 private:
  CheckInfo info_;
  Behaviour behaviour_;
};

// Takes the time its model gives the work it is asked for: `whole` seconds, reducible to 0.1 s.
class ModelledCheck final : public Check {
 public:
  ModelledCheck(std::string name, double whole) : whole_(whole) {
    info_.name = std::move(name);
    info_.description = "modelled";
    info_.needs_gpu = false;
    info_.budget = {std::chrono::seconds(1), std::chrono::seconds(1), std::nullopt};
  }
  const CheckInfo& info() const override { return info_; }
  WorkPlan plan_work(const WorkRequest& request) const override {
    WorkPlan plan;
    plan.floor_s = 0.1;
    plan.expected_s = request.seconds ? std::clamp(*request.seconds, 0.1, whole_) : whole_;
    plan.reduced = plan.expected_s < whole_;
    plan.coverage = plan.reduced ? "part" : "all";
    return plan;
  }
  CheckResult run(CheckContext& ctx) const override {
    const auto until =
        SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                 std::chrono::duration<double>(plan_work(ctx.work).expected_s));
    while (SteadyClock::now() < until && !ctx.cancelled()) std::this_thread::sleep_for(5ms);
    CheckResult r;
    r.summary = "slept";
    return r;
  }

 private:
  CheckInfo info_;
  double whole_;
};

struct Harness {
  CheckRegistry registry;
  std::unique_ptr<test::FakeBackend> backend =
      std::make_unique<test::FakeBackend>(test::healthy_node(1));
  std::vector<std::string> fault_specs;
  bool strict = false;
  std::chrono::milliseconds timeout = 10s;
  bool timeout_given = false;
  std::chrono::seconds discovery_budget = 1s;
  NodeExpectations expect;

  Harness() = default;
  Harness(const Harness&) = delete;
  Harness& operator=(const Harness&) = delete;
  ~Harness() {
    // A discovery that hangs keeps the thread the runner abandoned inside the backend for good,
    // so the backend must outlive it: deleting it here was a use after free (found by TSan).
    if (backend && backend->hang_discovery) mark_abandoned(backend.release());
  }

  void add(std::string name, Behaviour b, bool needs_gpu = false) {
    registry.add(std::make_unique<FakeCheck>(std::move(name), b, needs_gpu));
  }
  void add(std::unique_ptr<Check> check) { registry.add(std::move(check)); }
  RunOutcome run(RunState** state_out = nullptr, std::function<void(RunState&)> during = {}) {
    const auto plan = plan_checks(registry, Profile::quick, {});
    std::vector<InjectedFault> faults;
    for (const auto& s : fault_specs) faults.push_back(parse_fault(s, registry.fault_kinds()));
    plan_faults = FaultPlan(std::move(faults));
    state = std::make_unique<RunState>(Verdict{}, plan, strict);
    if (state_out) *state_out = state.get();
    RunSettings settings;
    settings.threshold_specs = preflight::test::builtin_threshold_specs();
    settings.expect = expect;
    settings.deadline = SteadyClock::now() + timeout;
    settings.timeout_given = timeout_given;
    settings.discovery_budget = discovery_budget;
    settings.cancel_grace = 200ms;
    std::thread helper;
    if (during) helper = std::thread([this, during] { during(*state); });
    Runner runner(backend->engines(), plan_faults);
    RunOutcome out = runner.run(*state, plan, settings);
    if (helper.joinable()) helper.join();
    return out;
  }
  const CheckResult& result(const RunOutcome& o, const std::string& name) {
    for (const auto& c : o.verdict.checks) {
      if (c.name == name) return c;
    }
    FAIL("no result for " << name);
    throw std::logic_error("unreachable");
  }
  FaultPlan plan_faults;
  std::unique_ptr<RunState> state;
};

// Polls `condition` until it holds or `limit` passes (a generous bound: a busy machine is slow,
// never this slow); true when it held.
template <class Condition>
bool eventually(Condition condition, std::chrono::milliseconds limit = 30s) {
  const auto give_up = SteadyClock::now() + limit;
  while (!condition()) {
    if (SteadyClock::now() >= give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

bool has_code(const CheckResult& r, const std::string& code) {
  for (const auto& f : r.findings) {
    if (f.code == code) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("runner: passing checks give a pass verdict with system info") {
  Harness h;
  h.add("a", Behaviour::pass);
  h.add("b", Behaviour::pass);
  const auto out = h.run();
  CHECK(out.invalid.empty());
  CHECK(out.verdict.verdict == Status::pass);
  CHECK(out.verdict.exit_code == 0);
  REQUIRE(out.verdict.checks.size() == 2);
  CHECK(out.verdict.system.gpus.size() == 1);
  CHECK(out.verdict.system.driver_version == "580.65.06");
  CHECK(out.verdict.system.cuda_driver == "13.0");
}

TEST_CASE("runner: a check's status follows its findings; a failing check fails the node") {
  Harness h;
  h.add("a", Behaviour::fail);
  h.add("b", Behaviour::pass);
  const auto out = h.run();
  CHECK(h.result(out, "a").status == Status::fail);
  CHECK(h.result(out, "b").status == Status::pass);
  CHECK(out.verdict.exit_code == 1);
}

TEST_CASE("runner: a check that throws is status error with CHECK_ERROR, and the run goes on") {
  Harness h;
  h.add("a", Behaviour::raise);
  h.add("b", Behaviour::pass);
  const auto out = h.run();
  const auto& a = h.result(out, "a");
  CHECK(a.status == Status::error);
  REQUIRE(has_code(a, "CHECK_ERROR"));
  CHECK_THAT(a.findings[0].message, Catch::Contains("device exploded"));
  CHECK(h.result(out, "b").status == Status::pass);
  CHECK(out.verdict.exit_code == kExitInternalError);
}

TEST_CASE("runner: a hung check times out, is abandoned, and the rest are not run") {
  Harness h;
  h.add("a", Behaviour::pass);
  h.add("b", Behaviour::pass);
  h.fault_specs = {"hang@check=a"};
  const auto start = SteadyClock::now();
  const auto out = h.run();
  const double took = std::chrono::duration<double>(SteadyClock::now() - start).count();
  const auto& a = h.result(out, "a");
  REQUIRE(a.plan);
  // Its deadline + the cancel grace, and 2 s for a busy machine; a run held by the hang would
  // last until the run's deadline (10 s).
  INFO("took " << took << " s, deadline " << a.plan->deadline_s << " s");
  REQUIRE(a.plan->deadline_s + 0.2 + 2.0 < 10.0);
  CHECK(took < a.plan->deadline_s + 0.2 + 2.0);
  CHECK(a.status == Status::fail);
  REQUIRE(has_code(a, "CHECK_TIMEOUT"));
  CHECK(a.findings[0].injected);
  const auto& b = h.result(out, "b");
  CHECK(b.status == Status::skip);
  CHECK_THAT(b.skip_reason, Catch::Contains("not run: a did not return"));
  CHECK(h.state->abandoned_threads() == 1);
  CHECK(out.verdict.exit_code == 1);
}

TEST_CASE("runner: a check that overruns but honours cancellation times out and the run goes on") {
  Harness h;
  h.add("slow", Behaviour::cooperative_overrun);
  h.add("b", Behaviour::pass);
  const auto out = h.run();
  CHECK(has_code(h.result(out, "slow"), "CHECK_TIMEOUT"));
  CHECK(h.result(out, "b").status == Status::pass);
  CHECK(h.state->abandoned_threads() == 0);
}

TEST_CASE("runner: the global deadline stops the run and leaves RUN_INCOMPLETE") {
  Harness h;
  h.add("slow", Behaviour::cooperative_overrun);
  h.add("b", Behaviour::pass);
  h.timeout = 500ms;
  const auto out = h.run();
  const auto& slow = h.result(out, "slow");
  REQUIRE(has_code(slow, "CHECK_TIMEOUT"));
  CHECK_THAT(slow.findings[0].message, Catch::Contains("--timeout"));
  CHECK(h.result(out, "b").status == Status::skip);
  REQUIRE(out.verdict.findings.size() == 1);
  CHECK(out.verdict.findings[0].code == "RUN_INCOMPLETE");
  CHECK(out.verdict.verdict == Status::fail);
}

TEST_CASE("runner: a stop request interrupts the running check and skips the rest") {
  Harness h;
  h.add("a", Behaviour::pass);
  h.add("b", Behaviour::pass);
  h.fault_specs = {"hang@check=a"};
  // The stop comes once check a runs (it hangs: it runs until stopped).
  bool running = false;
  const auto out = h.run(nullptr, [&running](RunState& s) {
    running = eventually([&s] { return s.progress().running.has_value(); });
    s.request_stop(StopCause::signal, "SIGTERM");
  });
  REQUIRE(running);
  const auto& a = h.result(out, "a");
  REQUIRE(has_code(a, "CHECK_INTERRUPTED"));
  CHECK_THAT(a.findings[0].message, Catch::Contains("SIGTERM"));
  CHECK_THAT(h.result(out, "b").skip_reason, Catch::Contains("interrupted by SIGTERM"));
  CHECK_THAT(out.verdict.reason, Catch::Contains("SIGTERM"));
  CHECK(out.verdict.exit_code == 1);
  REQUIRE(out.verdict.findings.size() == 1);
  CHECK(out.verdict.findings[0].code == "RUN_INTERRUPTED");
}

TEST_CASE("runner: GPU checks are skipped with a reason on a node without GPUs") {
  Harness h;
  h.backend = std::make_unique<test::FakeBackend>(test::no_gpu_node());
  h.add("gpu-check", Behaviour::pass, /*needs_gpu=*/true);
  h.expect.gpus = 0;
  auto out = h.run();
  CHECK(h.result(out, "gpu-check").status == Status::skip);
  CHECK_THAT(h.result(out, "gpu-check").skip_reason, Catch::Contains("--expect-gpus 0"));

  h.expect.gpus.reset();
  out = h.run();
  CHECK_THAT(h.result(out, "gpu-check").skip_reason, Catch::Contains("no GPU visible"));
}

TEST_CASE("runner: discovery that never answers gives DISCOVERY_TIMEOUT and runs nothing") {
  Harness h;
  h.backend->hang_discovery = true;
  h.add("a", Behaviour::pass);
  const auto out = h.run();
  REQUIRE(out.verdict.findings.size() == 2);
  CHECK(out.verdict.findings[0].code == "DISCOVERY_TIMEOUT");
  CHECK(out.verdict.findings[1].code == "RUN_INCOMPLETE");
  CHECK(h.result(out, "a").status == Status::skip);
  CHECK(out.verdict.exit_code == 1);
}

TEST_CASE("runner: a signal while no check runs (during discovery) still fails the run") {
  Harness h;
  h.backend->hang_discovery = true;
  // Discovery would end by its budget only after the stop: the stop is what ends the run.
  h.discovery_budget = 20s;
  h.add("a", Behaviour::pass);
  // The stop comes once discovery has begun.
  bool discovering = false;
  test::FakeBackend& backend = *h.backend;
  const auto out = h.run(nullptr, [&discovering, &backend](RunState& s) {
    discovering = eventually([&backend] { return backend.discoveries.load() > 0; });
    s.request_stop(StopCause::signal, "SIGINT");
  });
  REQUIRE(discovering);
  REQUIRE(out.verdict.findings.size() == 1);
  CHECK(out.verdict.findings[0].code == "RUN_INTERRUPTED");
  CHECK_THAT(h.result(out, "a").skip_reason, Catch::StartsWith("not run: interrupted by SIGINT"));
  CHECK(out.verdict.verdict == Status::fail);
  CHECK(out.verdict.exit_code == 1);
  CHECK_THAT(out.verdict.reason, Catch::Contains("SIGINT"));
}

TEST_CASE("runner: a signal after the last check finished does not fail a healthy run") {
  CheckRegistry r;
  r.add(std::make_unique<FakeCheck>("a", Behaviour::pass));
  const auto plan = plan_checks(r, Profile::quick, {});
  RunState state(Verdict{}, plan, false);
  CheckResult done;
  done.name = "a";
  state.check_finished(0, done);
  state.request_stop(StopCause::signal, "SIGTERM");
  CHECK(state.compose().verdict == Status::pass);
}

TEST_CASE("runner: a fault aimed at a GPU the node lacks is invalid input") {
  test::FakeBackend backend(test::healthy_node(1));
  CheckRegistry full;
  register_builtin_checks(full);
  const auto plan = plan_checks(full, Profile::quick, {});
  FaultPlan faults({parse_fault("mig-on@gpu=5", full.fault_kinds())});
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 10s;
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  CHECK_THAT(out.invalid, Catch::Contains("no gpu5"));
}

TEST_CASE("runner: plans follow the profile, --checks, and always include required checks") {
  CheckRegistry r;
  r.add(std::make_unique<FakeCheck>("req", Behaviour::pass, false, true));
  r.add(std::make_unique<FakeCheck>("a", Behaviour::pass));
  auto plan = plan_checks(r, Profile::quick, {});
  CHECK(plan.size() == 2);
  plan = plan_checks(r, Profile::burnin, {});  // "a" has no burnin budget
  REQUIRE(plan.size() == 1);
  CHECK(plan[0].check->info().name == "req");
  plan = plan_checks(r, Profile::burnin, {"a"});
  REQUIRE(plan.size() == 2);
  CHECK(plan[1].budget == std::chrono::seconds(5));  // standard budget outside its profiles
  CHECK_THROWS_AS(plan_checks(r, Profile::quick, {"nope"}), InvalidInput);
}

TEST_CASE("runner: checks taking their modelled time fit a --timeout, their work sized to it") {
  Harness h;
  for (const char* name : {"a", "b", "c"}) h.add(std::make_unique<ModelledCheck>(name, 1.0));
  // 3 x 1 s of work needs 3 x 2 s with headroom; 6 s less the margin leaves about 5.
  h.timeout = 6s;
  h.timeout_given = true;
  const auto start = SteadyClock::now();
  const auto out = h.run();
  const double took = std::chrono::duration<double>(SteadyClock::now() - start).count();
  // Within the --timeout; 2 s past it for a busy machine.
  CHECK(took < 6.0 + 2.0);
  REQUIRE(out.invalid.empty());
  REQUIRE(out.verdict.plan);
  CHECK(out.verdict.plan->timeout_given);
  CHECK(out.verdict.plan->reduced);
  for (const char* name : {"a", "b", "c"}) {
    const auto& c = h.result(out, name);
    INFO(name);
    CHECK(c.status == Status::pass);
    REQUIRE(c.plan);
    CHECK(c.plan->reduced);
    CHECK(c.plan->coverage == "part");
    CHECK(c.plan->expected_s < 1.0);
    CHECK(c.plan->deadline_s >= 1.5 * c.plan->expected_s);
  }
  CHECK(out.verdict.exit_code == 0);
}

TEST_CASE("runner: with time to spare every check does its whole work") {
  Harness h;
  h.add(std::make_unique<ModelledCheck>("a", 0.2));
  h.timeout_given = true;
  const auto out = h.run();
  REQUIRE(out.invalid.empty());
  const auto& a = h.result(out, "a");
  REQUIRE(a.plan);
  CHECK_FALSE(a.plan->reduced);
  CHECK(a.plan->expected_s == Approx(0.2));
  CHECK(a.plan->deadline_s > 5.0);  // the spare time of the 10 s run
}

TEST_CASE("runner: a --timeout below the floor of the node found is refused, naming the floor") {
  Harness h;
  h.add(std::make_unique<ModelledCheck>("a", 5.0));
  h.add(std::make_unique<ModelledCheck>("b", 5.0));
  h.timeout = 2s;
  h.timeout_given = true;
  const auto out = h.run();
  CHECK_THAT(out.invalid, Catch::Contains("--timeout 2.0 s is below the"));
}

TEST_CASE("supervisor: past the hard deadline it composes the verdict without the runner") {
  CheckRegistry r;
  r.add(std::make_unique<FakeCheck>("a", Behaviour::pass));
  r.add(std::make_unique<FakeCheck>("b", Behaviour::pass));
  const auto plan = plan_checks(r, Profile::quick, {});
  RunState state(Verdict{}, plan, false);
  state.check_started(0);  // a runner stuck inside check a
  std::mutex m;
  std::optional<Verdict> written;
  {
    Supervisor sup(state, SteadyClock::now() + 100ms, 50ms, [&](const Verdict& v) {
      std::lock_guard<std::mutex> lock(m);
      written = v;
    });
    CHECK(eventually([&state] { return state.finalized(); }));
  }
  std::lock_guard<std::mutex> lock(m);
  REQUIRE(written);
  CHECK(written->checks[0].findings[0].code == "CHECK_TIMEOUT");
  CHECK(written->checks[1].status == Status::skip);
  CHECK_THAT(written->checks[1].skip_reason, Catch::Contains("--timeout"));
  CHECK(written->exit_code == 1);
  CHECK_FALSE(state.claim_finalize());  // exactly one writer
}
