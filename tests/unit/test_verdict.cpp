#include <catch2/catch.hpp>

#include "checks/common/findings.hpp"
#include "checks/inventory/inventory_findings.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "preflight/verdict.hpp"

using namespace preflight;

namespace {

CheckResult check(std::string name, Status status, std::vector<Finding> findings = {}) {
  CheckResult r;
  r.name = std::move(name);
  r.status = status;
  r.findings = std::move(findings);
  return r;
}

Verdict verdict_of(std::vector<CheckResult> checks) {
  Verdict v;
  v.checks = std::move(checks);
  return v;
}

}  // namespace

TEST_CASE("verdict: all pass or skip gives pass, exit 0, empty reason") {
  Verdict v = verdict_of({check("a", Status::pass), check("b", Status::skip)});
  aggregate(v, false);
  CHECK(v.verdict == Status::pass);
  CHECK(v.exit_code == kExitHealthy);
  CHECK(v.reason.empty());
}

TEST_CASE("verdict: info findings do not change a status") {
  std::vector<Finding> f = {make_finding(inventory_findings(), "NO_GPU_EXPECTED", "node", "none")};
  CHECK(status_from_findings(f) == Status::pass);
}

TEST_CASE("verdict: warn gives warn and exit 0, or exit 1 with strict") {
  auto warn = make_finding(inventory_findings(), "TEMPERATURE_HIGH", "gpu2", "78 C at idle");
  Verdict v = verdict_of({check("inventory", Status::warn, {warn}), check("b", Status::pass)});
  aggregate(v, false);
  CHECK(v.verdict == Status::warn);
  CHECK(v.exit_code == kExitHealthy);
  CHECK(v.reason == "inventory: gpu2 TEMPERATURE_HIGH 78 C at idle");
  aggregate(v, true);
  CHECK(v.verdict == Status::warn);
  CHECK(v.exit_code == kExitUnhealthy);
}

TEST_CASE("verdict: any fail gives fail and exit 1, reason names check, entity and code") {
  auto fail = make_finding(inventory_findings(), "ECC_UNCORRECTABLE_VOLATILE", "gpu3",
                           "2 uncorrectable ECC errors");
  auto warn =
      make_finding(inventory_findings(), "PERSISTENCE_MODE_OFF", "gpu1", "persistence mode is off");
  Verdict v = verdict_of({check("inventory", Status::fail, {warn, fail})});
  aggregate(v, false);
  CHECK(v.verdict == Status::fail);
  CHECK(v.exit_code == kExitUnhealthy);
  CHECK(v.reason == "inventory: gpu3 ECC_UNCORRECTABLE_VOLATILE 2 uncorrectable ECC errors");
}

TEST_CASE("verdict: error alone gives fail with exit 3; error plus a real fail gives exit 1") {
  auto err = make_finding(runner_findings(), "CHECK_ERROR", "node", "boom");
  Verdict only_error = verdict_of({check("gemm", Status::error, {err})});
  aggregate(only_error, false);
  CHECK(only_error.verdict == Status::fail);
  CHECK(only_error.exit_code == kExitInternalError);

  auto fail = make_finding(inventory_findings(), "MIG_ENABLED", "gpu0", "MIG mode is on");
  Verdict both =
      verdict_of({check("gemm", Status::error, {err}), check("inventory", Status::fail, {fail})});
  aggregate(both, false);
  CHECK(both.exit_code == kExitUnhealthy);
  CHECK_THAT(both.reason, Catch::Contains("(+1 more)"));
}

TEST_CASE("verdict: run-level fail findings fail the node") {
  Verdict v = verdict_of({check("inventory", Status::skip)});
  v.findings.push_back(
      make_finding(runner_findings(), "DISCOVERY_TIMEOUT", "node", "no answer within 20 s"));
  aggregate(v, false);
  CHECK(v.verdict == Status::fail);
  CHECK(v.exit_code == kExitUnhealthy);
  CHECK(v.reason == "DISCOVERY_TIMEOUT no answer within 20 s");
}

TEST_CASE("verdict: injected runs say so in the reason") {
  auto fail = make_finding(inventory_findings(), "MIG_ENABLED", "gpu0", "MIG mode is on");
  Verdict v = verdict_of({check("inventory", Status::fail, {fail})});
  v.injected_faults = {"mig-on@gpu=0"};
  aggregate(v, false);
  CHECK(v.reason.rfind("injected fault: ", 0) == 0);
}

TEST_CASE("verdict: reason is drain-safe and at most 200 characters") {
  auto fail = make_finding(
      inventory_findings(), "GPU_UNRESPONSIVE", "gpu0",
      "probe failed: \"quoted\" 'single' `tick` back\\slash\nnew\tline " + std::string(300, 'x'));
  std::vector<CheckResult> checks = {check("inventory", Status::fail, {fail})};
  for (int i = 0; i < 5; ++i) {
    checks.push_back(check(
        "c" + std::to_string(i), Status::fail,
        {make_finding(inventory_findings(), "MIG_ENABLED", "gpu" + std::to_string(i), "on")}));
  }
  Verdict v = verdict_of(checks);
  aggregate(v, false);
  CHECK(v.reason.size() <= kMaxReasonLength);
  CHECK_THAT(v.reason, Catch::EndsWith("(+5 more)"));
  for (char c : v.reason) {
    INFO("character " << static_cast<int>(c));
    CHECK(c >= 0x20);
    CHECK(c < 0x7f);
    CHECK(c != '"');
    CHECK(c != '\'');
    CHECK(c != '`');
    CHECK(c != '\\');
  }
}

TEST_CASE("verdict: sanitize_reason collapses blanks and replaces control and non-ASCII bytes") {
  CHECK(sanitize_reason("  a\n\nb\t c  ") == "a b c");
  CHECK(sanitize_reason("gpu0 \xc3\xa9t\xc3\xa9") == "gpu0 t");
  CHECK(sanitize_reason(std::string(250, 'y')).size() == kMaxReasonLength);
  CHECK(sanitize_reason("").empty());
}

TEST_CASE("verdict: a fail check without findings still explains itself") {
  Verdict v = verdict_of({check("nvlink", Status::fail)});
  aggregate(v, false);
  CHECK(v.reason == "nvlink: fail");
}

TEST_CASE("verdict: failures that blame the tool's installation make the check error, exit 3") {
  const Finding missing =
      make_finding(shared_findings(), "TOOL_LIBRARY_MISSING", "node", "cuBLAS not found");
  const Finding too_old =
      make_finding(inventory_findings(), "CUDA_DRIVER_TOO_OLD", "node", "driver too old");
  const Finding node_fault =
      make_finding(inventory_findings(), "ECC_UNCORRECTABLE_VOLATILE", "gpu0", "2 errors");
  const Finding warn = make_finding(inventory_findings(), "ECC_CORRECTABLE_HIGH", "gpu1", "many");
  CHECK(missing.blame == Blame::tool);
  CHECK(too_old.blame == Blame::tool);
  CHECK(node_fault.blame == Blame::node);

  CHECK(status_from_findings({missing}) == Status::error);
  CHECK(status_from_findings({too_old, warn}) == Status::error);
  // A real fault beside it: the node is unhealthy whatever else is wrong.
  CHECK(status_from_findings({missing, node_fault}) == Status::fail);

  Verdict tool_only = verdict_of({check("inventory", status_from_findings({too_old}), {too_old}),
                                  check("gemm", status_from_findings({missing}), {missing})});
  aggregate(tool_only, false);
  CHECK(tool_only.verdict == Status::fail);
  CHECK(tool_only.exit_code == kExitInternalError);
  CHECK_THAT(tool_only.reason, Catch::Contains("CUDA_DRIVER_TOO_OLD"));

  Verdict with_fault =
      verdict_of({check("inventory", status_from_findings({node_fault}), {node_fault}),
                  check("gemm", status_from_findings({missing}), {missing})});
  aggregate(with_fault, false);
  CHECK(with_fault.exit_code == kExitUnhealthy);
}

TEST_CASE("verdict: the node's action is the heaviest of its warn and fail findings") {
  const auto f = [](const char* code, const char* entity) {
    return make_finding(inventory_findings(), code, entity, "x");
  };
  Verdict v = verdict_of({check("inventory", Status::pass)});
  aggregate(v, false);
  CHECK(v.action == Action::none);
  // A warn asks for nothing; a fail's reset wins; a run-level reboot outweighs it; a heavier
  // action of another check wins again.
  v = verdict_of({check("inventory", Status::fail,
                        {f("PERSISTENCE_MODE_OFF", "gpu0"), f("ROW_REMAP_PENDING", "gpu1")})});
  aggregate(v, false);
  CHECK(v.action == Action::reset_gpu);
  v.findings.push_back(make_finding(runner_findings(), "DISCOVERY_TIMEOUT", "node", "x"));
  aggregate(v, false);
  CHECK(v.action == Action::reboot);
  v.checks.push_back(check("other", Status::fail, {f("ROW_REMAP_FAILED", "gpu2")}));
  aggregate(v, false);
  CHECK(v.action == Action::service);
  CHECK(node_action(v) == Action::service);
  // Info findings do not count, whatever their action.
  Finding info = f("NO_GPU_EXPECTED", "node");
  info.action = Action::service;
  v = verdict_of({check("inventory", Status::pass, {info})});
  aggregate(v, false);
  CHECK(v.action == Action::none);
}
