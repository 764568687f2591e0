// `preflight judge` and the observations a check's readings prove (Check::observe): a verdict
// whose readings record corrupted data, or a transfer or a job that failed, but whose findings
// were removed (by hand, or lost) fails judge with the finding on the entity the run named; one
// that still has them gains nothing, and neither does a healthy one. The checks run end to end on
// fake engines, so what judge makes again is compared with what the run made.
#include <catch2/catch.hpp>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "checks/nccl/nccl_readings.hpp"
#include "preflight/errors.hpp"
#include "report/report.hpp"
#include "report/verdict_reader.hpp"
#include "run/rejudge.hpp"
#include "run/runner.hpp"
#include "support/bandwidth_readings.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"
#include "support/fake_collective_engine.hpp"
#include "support/fake_gemm_engine.hpp"
#include "support/fake_rdma_engine.hpp"

// A namespace of its own: the unit tests are one unity build in CI, where helpers of the same
// name in two files' anonymous namespaces clash.
namespace preflight::test::restored {

using namespace std::chrono_literals;
using readings::described;
using Json = nlohmann::ordered_json;

// The engines a run is given; the checks of those left null skip.
struct Fakes {
  FakeBandwidthEngine* bandwidth = nullptr;
  FakeCollectiveEngine* collective = nullptr;
  FakeRdmaEngine* rdma = nullptr;
  FakeGemmEngine* gemm = nullptr;
};

// One check (and inventory, which every run has) run as `preflight run` runs it.
Verdict run_check(const std::string& check, const Fakes& fakes,
                  const std::vector<std::string>& fault_specs = {},
                  const CheckOptions& options = {}) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {check}, options);
  std::vector<InjectedFault> faults;
  for (const auto& spec : fault_specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan fault_plan(faults);
  FakeBackend backend(healthy_node(4));
  backend.bandwidth = fakes.bandwidth;
  backend.collective = fakes.collective;
  backend.rdma = fakes.rdma;
  backend.gemm = fakes.gemm;
  Verdict skeleton;
  skeleton.injected_faults = fault_specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 60s;
  settings.options = options;
  Runner runner(backend.engines(), fault_plan);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  REQUIRE(check_of(out.verdict, check).status != Status::skip);
  return out.verdict;
}

// `preflight judge --recorded-thresholds` on the verdict as its file holds it.
Verdict judge_file(const Verdict& v) {
  const Verdict read = verdict_from_json(Json::parse(verdict_to_json_text(v)), "node.json");
  CheckRegistry registry;
  register_builtin_checks(registry);
  std::vector<std::string> unknown;
  const Thresholds thresholds =
      thresholds_from_record(registry.threshold_specs(), *read.thresholds, "node.json", unknown);
  RejudgeSettings settings;
  settings.thresholds = &thresholds;
  settings.thresholds_by = "recorded";
  settings.source = "node.json";
  settings.judged_at = "2026-01-01T00:00:00Z";
  settings.fault_kinds = registry.fault_kinds();
  return rejudge(read, registry, settings);
}

std::vector<Finding> observations_of(const CheckResult& c) {
  std::vector<Finding> out;
  for (const Finding& f : c.findings) {
    if (!f.judged) out.push_back(f);
  }
  return out;
}

// The verdict with the check's findings of these codes removed, as a hand edit would (no code:
// every observation of the check); its statuses and verdict made again to match.
Verdict removed(Verdict v, const std::string& check, const std::vector<std::string>& codes = {}) {
  for (CheckResult& c : v.checks) {
    if (c.name != check) continue;
    c.findings.erase(std::remove_if(c.findings.begin(), c.findings.end(),
                                    [&](const Finding& f) {
                                      return codes.empty() ? !f.judged
                                                           : std::find(codes.begin(), codes.end(),
                                                                       f.code) != codes.end();
                                    }),
                     c.findings.end());
    c.status = status_from_findings(c.findings);
  }
  aggregate(v, false);
  return v;
}

// Judged again with its findings removed: the run's observations come back, whole (code,
// entity, severity, message, value), and fail the node; with them present nothing is added.
void require_restored(const Verdict& run, const std::string& check) {
  const std::vector<Finding> observed = observations_of(check_of(run, check));
  REQUIRE_FALSE(observed.empty());
  const Verdict edited = removed(run, check);
  REQUIRE(observations_of(check_of(edited, check)).empty());
  const Verdict again = judge_file(edited);
  const CheckResult& judged = check_of(again, check);
  CHECK(described(observations_of(judged)) == described(observed));
  CHECK(judged.status == Status::fail);
  CHECK(again.verdict == Status::fail);
  CHECK(again.exit_code == kExitUnhealthy);
  REQUIRE(again.rejudged);
  CHECK(again.rejudged->observations_restored == static_cast<int>(observed.size()));

  const Verdict intact = judge_file(run);
  CHECK(described(check_of(intact, check).findings) == described(check_of(run, check).findings));
  CHECK(intact.rejudged->observations_restored == 0);
}

// A healthy run judged again: the same findings (none of the check's), nothing restored.
void require_nothing_added(const Verdict& run, const std::string& check) {
  REQUIRE(check_of(run, check).findings.empty());
  const Verdict again = judge_file(run);
  CHECK(check_of(again, check).findings.empty());
  CHECK(check_of(again, check).status == Status::pass);
  CHECK(again.rejudged->observations_restored == 0);
}

}  // namespace preflight::test::restored

using namespace preflight;
using namespace preflight::test::restored;
using preflight::test::check_of;
using preflight::test::codes;

TEST_CASE("rejudge observations: hbm bad words removed from the verdict come back on the GPU") {
  test::FakeBandwidthEngine engine;
  engine.bad_memory = {2};
  const Verdict run = run_check("hbm", {&engine});
  CHECK(codes(observations_of(check_of(run, "hbm"))) ==
        std::set<std::string>{"HBM_PATTERN_MISMATCH@gpu2"});
  require_restored(run, "hbm");

  test::FakeBandwidthEngine healthy;
  require_nothing_added(run_check("hbm", {&healthy}), "hbm");
}

TEST_CASE("rejudge observations: a drill's observation made again stays marked injected") {
  test::FakeBandwidthEngine engine;
  const Verdict run = run_check("hbm", {&engine}, {"hbm-corrupt@gpu=1"});
  const std::vector<Finding> observed = observations_of(check_of(run, "hbm"));
  REQUIRE(codes(observed) == std::set<std::string>{"HBM_PATTERN_MISMATCH@gpu1"});
  REQUIRE(observed.front().injected);
  const Verdict again = judge_file(removed(run, "hbm"));
  CHECK(described(observations_of(check_of(again, "hbm"))) == described(observed));
  CHECK(again.rejudged->observations_restored == 1);
}

TEST_CASE("rejudge observations: nccl corrupted data comes back on whom the run blamed") {
  test::FakeCollectiveEngine engine;
  engine.corrupt_senders = {2};
  const Verdict run = run_check("nccl", {nullptr, &engine});
  // The all-gather names the sender; an all-reduce's sums cannot, so every GPU's are wrong.
  CHECK(codes(observations_of(check_of(run, "nccl"))) ==
        std::set<std::string>{"NCCL_DATA_MISMATCH@gpu2", "NCCL_DATA_MISMATCH@node"});
  require_restored(run, "nccl");

  // One path: the pair, as the run names it.
  test::FakeCollectiveEngine link;
  link.corrupt_links = {{3, 1}};
  const Verdict pair = run_check("nccl", {nullptr, &link});
  CHECK(codes(observations_of(check_of(pair, "nccl"))).count("NCCL_DATA_MISMATCH@gpu1-gpu3") == 1);
  require_restored(pair, "nccl");

  test::FakeCollectiveEngine healthy;
  require_nothing_added(run_check("nccl", {nullptr, &healthy}), "nccl");
}

TEST_CASE(
    "rejudge observations: nccl readings of an older version, the total alone, fail on "
    "node") {
  test::FakeCollectiveEngine engine;
  engine.corrupt_senders = {2};
  Verdict run = run_check("nccl", {nullptr, &engine});
  for (CheckResult& c : run.checks) {
    if (c.name != "nccl") continue;
    for (auto& item : c.readings["collectives"].items()) item.value().erase("corrupt_from");
  }
  // Every finding removed: the node, for each collective.
  const Verdict bare = judge_file(removed(run, "nccl"));
  const std::vector<Finding> restored = observations_of(check_of(bare, "nccl"));
  CHECK(codes(restored) == std::set<std::string>{"NCCL_DATA_MISMATCH@node"});
  REQUIRE(restored.size() == 2);
  CHECK_THAT(restored[0].message, Catch::StartsWith("all-gather: 24 elements arrived wrong"));
  CHECK_THAT(restored[1].message, Catch::StartsWith("all-reduce: "));
  CHECK(bare.verdict == Status::fail);
  CHECK(bare.rejudged->observations_restored == 2);
  // The GPU's finding kept: a total that cannot say where is already accounted for by it.
  Verdict kept = run;
  for (CheckResult& c : kept.checks) {
    if (c.name != "nccl") continue;
    c.findings.erase(std::remove_if(c.findings.begin(), c.findings.end(),
                                    [](const Finding& f) { return f.entity == "node"; }),
                     c.findings.end());
  }
  const Verdict again = judge_file(kept);
  CHECK(codes(observations_of(check_of(again, "nccl"))) ==
        std::set<std::string>{"NCCL_DATA_MISMATCH@gpu2"});
  CHECK(again.rejudged->observations_restored == 0);
}

TEST_CASE("rejudge observations: nccl timeouts and failures recorded in the readings come back") {
  test::FakeCollectiveEngine engine;
  engine.run_error = "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  const Verdict run = run_check("nccl", {nullptr, &engine});
  CHECK(codes(observations_of(check_of(run, "nccl"))) == std::set<std::string>{"NCCL_ERROR@node"});
  require_restored(run, "nccl");
}

TEST_CASE("rejudge observations: rdma transfers that corrupted data or failed come back") {
  test::FakeRdmaEngine engine(4, true);
  engine.corrupting = {"mlx5_1"};
  engine.no_connect = {"mlx5_3"};
  const CheckOptions options = test::options_of({{"--expect-rnics", "4"}});
  const Verdict run = run_check("rdma", {nullptr, nullptr, &engine}, {}, options);
  const std::set<std::string> observed = codes(observations_of(check_of(run, "rdma")));
  CHECK(observed.count("RDMA_DATA_MISMATCH@mlx5_1") == 1);  // its loopback
  CHECK(observed.count("RDMA_CONNECT_FAILED@mlx5_3") == 1);
  require_restored(run, "rdma");

  // Only the corruption removed: it alone comes back, the failures kept are not doubled.
  const Verdict again = judge_file(removed(run, "rdma", {"RDMA_DATA_MISMATCH"}));
  CHECK(described(observations_of(check_of(again, "rdma"))).size() ==
        observations_of(check_of(run, "rdma")).size());
  CHECK(codes(observations_of(check_of(again, "rdma"))) == observed);

  test::FakeRdmaEngine healthy(4, true);
  require_nothing_added(run_check("rdma", {nullptr, nullptr, &healthy}, {}, options), "rdma");
}

TEST_CASE("rejudge observations: gemm jobs that timed out or failed come back on their GPU") {
  const CheckOptions options = test::options_of({{"--gemm-seconds", "1"}});
  test::FakeGemmEngine engine;
  engine.behaviour[1].timed_out = true;
  const Verdict run = run_check("gemm", {nullptr, nullptr, nullptr, &engine}, {}, options);
  CHECK(codes(observations_of(check_of(run, "gemm"))) ==
        std::set<std::string>{"GEMM_TIMEOUT@gpu1"});
  // The message too: the readings keep what it says (the products verified before).
  require_restored(run, "gemm");

  // A CUDA error: its text is not in the readings, the finding is, on the same GPU.
  test::FakeGemmEngine failing;
  failing.behaviour[3].error = "CUDA error: an illegal memory access was encountered";
  const Verdict failed = run_check("gemm", {nullptr, nullptr, nullptr, &failing}, {}, options);
  const Verdict again = judge_file(removed(failed, "gemm"));
  const std::vector<Finding> restored = observations_of(check_of(again, "gemm"));
  CHECK(codes(restored) == std::set<std::string>{"GEMM_CUDA_ERROR@gpu3"});
  CHECK(restored.front().severity == Severity::fail);
  CHECK(again.verdict == Status::fail);
  CHECK(judge_file(failed).rejudged->observations_restored == 0);

  test::FakeGemmEngine healthy;
  require_nothing_added(run_check("gemm", {nullptr, nullptr, nullptr, &healthy}, {}, options),
                        "gemm");
}

TEST_CASE("rejudge observations: the count is written and read back with the verdict") {
  test::FakeBandwidthEngine engine;
  engine.bad_memory = {0, 3};
  const Verdict again = judge_file(removed(run_check("hbm", {&engine}), "hbm"));
  REQUIRE(again.rejudged->observations_restored == 2);
  const std::string text = verdict_to_json_text(again);
  CHECK(Json::parse(text)["rejudged"]["observations_restored"] == 2);
  CHECK(verdict_from_json(Json::parse(text), "again.json").rejudged->observations_restored == 2);
  // A verdict judged by a version before the field: none.
  Json old = Json::parse(text);
  old["rejudged"].erase("observations_restored");
  CHECK(verdict_from_json(old, "old.json").rejudged->observations_restored == 0);
}

TEST_CASE("nccl readings: a blame matrix of another shape than the GPUs' is refused") {
  const auto with = [](const char* matrix) {
    return Json::parse(std::string(R"({"gpus": ["gpu0", "gpu1"], "collectives": {"allgather":
      {"sizes": [{"bytes": 1048576, "busbw_gbps": 100}], "corrupt_elements": 3,
       "corrupt_from": )") +
                       matrix + "}}}");
  };
  CHECK(with("[[0, 3], [0, 0]]").get<NcclReadings>().collectives.at(0).corrupt_from.at(0).at(1) ==
        3);
  CHECK_THROWS_WITH(with("[[0, 3]]").get<NcclReadings>(),
                    Catch::Contains("collectives.allgather.corrupt_from: expected 2 rows"));
  CHECK_THROWS_WITH(with("[[0, 3], [0]]").get<NcclReadings>(),
                    Catch::Contains("collectives.allgather.corrupt_from[1]: expected 2 rows"));
  CHECK_THROWS_WITH(with("[[0, -3], [0, 0]]").get<NcclReadings>(),
                    Catch::Contains("corrupt_from[0][1]: expected a count"));
}
