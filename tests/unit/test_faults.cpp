// Fault specs: parsing, the plan, and drills that tested nothing (run/drill_coverage.hpp).
#include <catch2/catch.hpp>

#include "checks/inventory/inventory_faults.hpp"
#include "checks/inventory/inventory_findings.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "preflight/faults.hpp"
#include "run/burnin.hpp"
#include "run/drill_coverage.hpp"

using namespace preflight;

namespace {

std::vector<FaultKindSpec> kinds() {
  auto k = runner_fault_kinds();
  for (const auto& i : inventory_fault_kinds()) k.push_back(i);
  FaultKindSpec slow;
  slow.kind = "nvlink-slow";
  slow.targets = {TargetType::pair};
  slow.value = FaultValue::number;
  slow.min_value = 0.01;
  slow.max_value = 1;
  k.push_back(slow);
  FaultKindSpec down;
  down.kind = "rdma-down";
  down.targets = {TargetType::nic};
  k.push_back(down);
  return k;
}

std::string error_of(const std::string& spec) {
  try {
    parse_fault(spec, kinds());
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("faults: valid specs parse into kind, value and target") {
  auto f = parse_fault("hang@check=inventory", kinds());
  CHECK(f.kind == "hang");
  CHECK(f.target.type == TargetType::check);
  CHECK(f.target.name == "inventory");
  CHECK(f.target.entity() == "inventory");

  f = parse_fault("ecc-uncorrectable:3@gpu=7", kinds());
  CHECK(f.number == Approx(3));
  CHECK(f.target.entity() == "gpu7");

  f = parse_fault("ecc-uncorrectable@gpu=0", kinds());
  CHECK_FALSE(f.number.has_value());

  f = parse_fault("nvlink-slow:0.5@pair=1-3", kinds());
  CHECK(f.target.index == 1);
  CHECK(f.target.index2 == 3);
  CHECK(f.target.entity() == "gpu1-gpu3");

  f = parse_fault("rdma-down@nic=mlx5_1", kinds());
  CHECK(f.target.entity() == "mlx5_1");

  f = parse_fault("throttle:hw-thermal@gpu=2", kinds());
  CHECK(f.word == "hw-thermal");
  CHECK(f.spec == "throttle:hw-thermal@gpu=2");
}

TEST_CASE("faults: malformed specs are rejected with a message naming the problem") {
  struct Case {
    const char* spec;
    const char* expect;
  };
  const Case cases[] = {
      {"", "empty fault spec"},
      {"mig-on", "exactly one '@'"},
      {"mig-on@gpu=0@gpu=1", "exactly one '@'"},
      {"bogus@gpu=0", "unknown kind 'bogus'"},
      {"MIG-ON@gpu=0", "malformed kind"},
      {"mig-on@disk=0", "unknown target type 'disk'"},
      {"mig-on@gpu", "must be TYPE=VALUE"},
      {"mig-on@gpu=-1", "non-negative whole number"},
      {"mig-on@gpu=x", "non-negative whole number"},
      {"mig-on@check=inventory", "takes a gpu target, not check"},
      {"hang@gpu=0", "takes a check target, not gpu"},
      {"mig-on:3@gpu=0", "takes no value"},
      {"temperature@gpu=0", "needs a value"},
      {"temperature:hot@gpu=0", "is not a number"},
      {"temperature:900@gpu=0", "outside 0..200"},
      {"temperature:nan@gpu=0", "is not a number"},
      {"throttle:fast@gpu=0", "is not one of"},
      {"nvlink-slow:0.5@pair=1-1", "two different GPUs"},
      {"nvlink-slow:0.5@pair=1", "pair=I-J"},
      {"rdma-down@nic=mlx5;rm", "must be 1-64 letters"},
  };
  for (const auto& c : cases) {
    INFO("spec: " << c.spec);
    CHECK_THAT(error_of(c.spec), Catch::Contains(c.expect));
  }
  CHECK_THAT(error_of(std::string(300, 'a')), Catch::Contains("longer than 200"));
}

TEST_CASE("faults: the plan finds faults by kind and target, the last one winning") {
  FaultPlan plan({parse_fault("temperature:80@gpu=1", kinds()),
                  parse_fault("temperature:95@gpu=1", kinds()),
                  parse_fault("hang@check=inventory", kinds())});
  REQUIRE(plan.for_gpu("temperature", 1) != nullptr);
  CHECK(*plan.for_gpu("temperature", 1)->number == Approx(95));
  CHECK(plan.for_gpu("temperature", 0) == nullptr);
  CHECK(plan.for_check("hang", "inventory") != nullptr);
  CHECK(plan.for_check("hang", "gemm") == nullptr);
  CHECK(plan.of_kind("temperature").size() == 2);
  CHECK_FALSE(plan.empty());
}

TEST_CASE("faults: every fault kind names the finding codes it must produce") {
  for (const auto& k : kinds()) {
    if (k.kind == "nvlink-slow" || k.kind == "rdma-down") continue;  // test-only kinds
    INFO(k.kind);
    CHECK_FALSE(k.codes.empty());
    CHECK_FALSE(k.description.empty());
  }
}

namespace {

// A pass whose checks ran (status pass) or were skipped with a reason ("" = ran).
Verdict pass_of(const std::vector<std::pair<std::string, std::string>>& checks) {
  Verdict v;
  for (const auto& [name, skip] : checks) {
    CheckResult c;
    c.name = name;
    if (!skip.empty()) {
      c.status = Status::skip;
      c.skip_reason = skip;
    }
    v.checks.push_back(c);
  }
  aggregate(v, false);
  return v;
}

std::vector<DrilledFault> drilled(const std::vector<std::string>& specs) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  std::vector<InjectedFault> faults;
  for (const auto& spec : specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  return drilled_checks(FaultPlan(faults), registry);
}

const std::string kNoGpu = "no GPU on this node (--expect-gpus 0)";

}  // namespace

TEST_CASE("faults: each fault acts in the check it names or the check that owns its kind") {
  const auto d = drilled({"hang@check=gemm", "gemm-nan@gpu=0", "mig-on@gpu=1", "rdma-down@nic=x"});
  REQUIRE(d.size() == 4);
  CHECK(d[0].check == "gemm");
  CHECK(d[1].check == "gemm");
  CHECK(d[2].check == "inventory");
  CHECK(d[3].check == "rdma");
  CHECK(d[3].fault.spec == "rdma-down@nic=x");
}

TEST_CASE("faults: a fault whose check was skipped was not exercised; one that ran was") {
  const auto d = drilled({"hang@check=gemm", "mig-on@gpu=0", "gemm-slow:0.5@gpu=0"});
  const std::vector<Verdict> run = {pass_of({{"inventory", ""}, {"gemm", kNoGpu}})};
  const auto found = unexercised_faults(d, run);
  REQUIRE(found.size() == 2);
  CHECK(found[0].code == "INJECTED_FAULT_NOT_EXERCISED");
  CHECK(found[0].severity == Severity::warn);
  CHECK(found[0].entity == "node");
  CHECK(found[0].injected);
  CHECK_FALSE(found[0].judged);
  CHECK(found[0].message ==
        "--inject-fault 'hang@check=gemm' was not exercised: gemm was skipped (no GPU on this "
        "node (--expect-gpus 0))");
  CHECK_THAT(found[0].remediation, Catch::StartsWith("Run the drill where the check runs"));
  CHECK_THAT(found[1].message, Catch::StartsWith("--inject-fault 'gemm-slow:0.5@gpu=0' was not"));

  // Whatever its result: a check that failed (the hang's CHECK_TIMEOUT) was exercised.
  Verdict hung = pass_of({{"inventory", ""}});
  hung.checks[0].status = Status::fail;
  CHECK(unexercised_faults(drilled({"hang@check=inventory"}), {hung}).empty());
  // Not run because an earlier check hung: said with the runner's reason.
  const auto not_run = unexercised_faults(
      d, {pass_of({{"inventory", ""}, {"gemm", "not run: inventory did not return"}})});
  REQUIRE(not_run.size() == 2);
  CHECK_THAT(not_run[0].message,
             Catch::EndsWith("not exercised: gemm was not run (inventory did not return)"));
}

TEST_CASE("faults: a drill that tested nothing makes the verdict warn, or fail with --strict") {
  const auto d = drilled({"hang@check=gemm"});
  const std::vector<Verdict> run = {pass_of({{"inventory", ""}, {"gemm", kNoGpu}})};
  for (const bool strict : {false, true}) {
    Verdict v = run.back();
    v.injected_faults = {"hang@check=gemm"};
    add_unexercised_faults(v, d, run, strict);
    CHECK(v.verdict == Status::warn);
    CHECK(v.exit_code == (strict ? 1 : 0));
    REQUIRE(v.findings.size() == 1);
    CHECK_THAT(v.reason, Catch::StartsWith("injected fault: INJECTED_FAULT_NOT_EXERCISED "
                                           "--inject-fault hang@check=gemm was not exercised"));
  }
  // A real failure still leads and fails the node.
  Verdict failing = pass_of({{"inventory", ""}, {"gemm", kNoGpu}});
  failing.checks[0].findings.push_back(
      make_finding(inventory_findings(), "MIG_ENABLED", "gpu0", "MIG mode is on"));
  failing.checks[0].status = Status::fail;
  add_unexercised_faults(failing, d, {failing}, false);
  CHECK(failing.verdict == Status::fail);
  CHECK_THAT(failing.reason, Catch::StartsWith("inventory: gpu0 MIG_ENABLED"));
  // Nothing to say: the verdict is left as it was.
  Verdict clean = pass_of({{"inventory", ""}, {"gemm", ""}});
  add_unexercised_faults(clean, d, {clean}, true);
  CHECK(clean.findings.empty());
  CHECK(clean.exit_code == 0);
}

TEST_CASE("faults: a burn-in judges a fault over every pass it was active in, once") {
  const Verdict skipped = pass_of({{"inventory", ""}, {"gemm", kNoGpu}});
  const Verdict ran = pass_of({{"inventory", ""}, {"gemm", ""}});
  const auto every = drilled({"hang@check=gemm"});
  const auto found = unexercised_faults(every, {skipped, skipped, skipped});
  REQUIRE(found.size() == 1);
  CHECK_THAT(found[0].message,
             Catch::EndsWith("gemm was skipped in all 3 passes (" + kNoGpu + ")"));
  // Ran in one pass: exercised.
  CHECK(unexercised_faults(every, {skipped, ran, skipped}).empty());
  // Only the passes from from-pass on count.
  const auto later = drilled({"hang@check=gemm,from-pass=2"});
  const auto from2 = unexercised_faults(later, {ran, skipped, skipped});
  REQUIRE(from2.size() == 1);
  CHECK_THAT(from2[0].message, Catch::Contains("gemm was skipped in passes 2 to 3 ("));
  CHECK_THAT(unexercised_faults(later, {ran, skipped})[0].message,
             Catch::Contains("gemm was skipped in pass 2 ("));
  // --duration or --stop-on-fail ended the run before the fault's pass.
  const auto never = unexercised_faults(drilled({"mig-on@gpu=0,from-pass=3"}), {ran, ran});
  REQUIRE(never.size() == 1);
  CHECK(never[0].message ==
        "--inject-fault 'mig-on@gpu=0,from-pass=3' was not exercised: pass 3 never ran (the run "
        "ended after 2 passes)");

  // One finding on the combined verdict; each pass keeps its own verdict.
  BurninRequest request;
  request.repeat = 3;
  Verdict v = combine_passes({skipped, skipped, skipped}, request, "repeat", 30, false);
  add_unexercised_faults(v, every, {skipped, skipped, skipped}, false);
  CHECK(v.verdict == Status::warn);
  CHECK(v.findings.size() == 1);
  for (const auto& p : v.passes) {
    CHECK(p.verdict == Status::pass);
    CHECK(p.findings.empty());
  }
}
