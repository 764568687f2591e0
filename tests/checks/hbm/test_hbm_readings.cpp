// The hbm check's readings apart from its judgement: judge_hbm on readings written from a
// published measurement, the JSON round trip, and `preflight judge` (rejudge()) keeping the
// pattern test's observation while it judges the copies again.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "checks/hbm/hbm_readings.hpp"
#include "preflight/errors.hpp"
#include "support/bandwidth_readings.hpp"

using namespace preflight;
using namespace preflight::test::readings;
using Json = nlohmann::ordered_json;

TEST_CASE("hbm readings: H100 SXM at a published copy bandwidth passes, at half fails") {
  // Azure ND H100 v5 (H100 80GB HBM3): BabelStream Copy 2.90 TB/s, which counts the bytes read
  // and written:
  // https://github.com/samuel-bohman/AI-benchmarking-guide/blob/main/Azure_Results/ND_H100_v5_results.md
  const auto healthy = Json::parse(R"({"gpus": [
    {"gpu": "gpu0", "copy": {"copy_gbps": 1450.0, "traffic_gbps": 2900.0, "samples": 3}},
    {"gpu": "gpu1", "copy": {"copy_gbps": 1450.0}}
  ]})");
  const auto r = healthy.get<HbmReadings>();
  CHECK(r.gpus.at(1).copy->traffic_gbps == Approx(2900.0));  // twice the copy rate
  CHECK(judge_hbm(r, sku("h100-sxm5-80gb")).empty());

  auto half = healthy;
  half["gpus"][1]["copy"]["copy_gbps"] = 725.0;
  const auto findings = judge_hbm(half.get<HbmReadings>(), sku("h100-sxm5-80gb"));
  REQUIRE(codes(findings) == std::set<std::string>{"HBM_BANDWIDTH_LOW@gpu1"});
  CHECK(*findings.front().value == Approx(1450.0));
  CHECK(*findings.front().threshold == Approx(3350.0 * 0.6));
  // No datasheet figure for the SKU: nothing to hold it to.
  CHECK(judge_hbm(half.get<HbmReadings>(), sku("generic")).empty());
}

TEST_CASE("hbm readings: bad readings are InvalidInput naming the field") {
  auto j = Json::parse(R"({"gpus": [{"gpu": "gpu0", "copy": {"copy_gbps": -1}}]})");
  CHECK_THROWS_AS(j.get<HbmReadings>(), InvalidInput);
  CHECK_THROWS_WITH(j.get<HbmReadings>(), Catch::Contains("gpus[0].copy.copy_gbps"));
  j = Json::parse(R"({"gpus": [{"gpu": "gpu0", "pattern": {"bytes": 4096, "bad_words": 1,
    "bad_ranges": [{"begin": 64, "end": 32, "bad_words": 1}]}}]})");
  CHECK_THROWS_WITH(j.get<HbmReadings>(), Catch::Contains("gpus[0].pattern.bad_ranges[0]"));
  j = Json::parse(R"({"gpus": [{"gpu": "0"}]})");
  CHECK_THROWS_WITH(j.get<HbmReadings>(), Catch::Contains("gpus[0].gpu"));
}

TEST_CASE("hbm readings: round trip, and a pattern mismatch stays a finding when judged again") {
  test::FakeBandwidthEngine engine;
  const Run run = run_checks(test::healthy_node(4), engine, {"hbm"}, {"hbm-corrupt@gpu=2"});
  const CheckResult& hbm = run.check("hbm");
  REQUIRE(codes(hbm.findings) == std::set<std::string>{"HBM_PATTERN_MISMATCH@gpu2"});
  const Finding& bad = hbm.findings.front();
  CHECK_FALSE(bad.judged);
  CHECK(bad.injected);
  for (const char* key :
       {"gpu0.hbm_copy_gbps", "gpu0.hbm_traffic_gbps", "gpu2.pattern_bad_words"}) {
    CHECK(std::any_of(hbm.metrics.begin(), hbm.metrics.end(),
                      [&](const Metric& m) { return m.key() == key; }));
  }

  // The readings hold what the observation says; JSON text round trip unchanged.
  const Readings& recorded = hbm.readings;
  CHECK(recorded["gpus"][2]["pattern"]["bad_words"].get<std::uint64_t>() > 0);
  CHECK(recorded["gpus"][0]["copy"]["traffic_gbps"].get<double>() == Approx(2900.0));
  const auto back = Readings::parse(recorded.dump()).get<HbmReadings>();
  // The error counters' window is the counters' own (test_counters.cpp), not HbmReadings'.
  REQUIRE(recorded.contains("counters"));
  Readings own = recorded;
  own.erase("counters");
  CHECK(Readings(back) == own);
  CHECK(described({*hbm_pattern_observation(back.gpus.at(2))}) == described({[&] {
          Finding f = bad;
          f.injected = false;  // the runner's mark, not the observation's
          return f;
        }()}));
  CHECK(judge_hbm(back, sku("h100-sxm5-80gb")).empty());

  // Judged again with its own thresholds: the same findings; with a stricter copy limit the
  // copies fail on every GPU, and the mismatch stays, as recorded.
  const Verdict same = rejudged(run.verdict, sku("h100-sxm5-80gb"));
  CHECK(described(check_of(same, "hbm").findings) == described(hbm.findings));
  Thresholds strict = sku("h100-sxm5-80gb");
  strict.apply_overrides(R"({"hbm": {"fail_fraction": 0.9, "warn_fraction": 0.95}})", "test");
  const Verdict after = rejudged(run.verdict, strict);
  const CheckResult& judged = check_of(after, "hbm");
  CHECK(codes(judged.findings) ==
        std::set<std::string>{"HBM_PATTERN_MISMATCH@gpu2", "HBM_BANDWIDTH_LOW@gpu0",
                              "HBM_BANDWIDTH_LOW@gpu1", "HBM_BANDWIDTH_LOW@gpu2",
                              "HBM_BANDWIDTH_LOW@gpu3"});
  CHECK(described(judged_of(judged.findings, false)) == described({bad}));
  CHECK(judged.status == Status::fail);
  // Even thresholds that judge nothing cannot undo it.
  Thresholds none = sku("generic");
  const Verdict none_verdict = rejudged(run.verdict, none);
  const CheckResult& lenient = check_of(none_verdict, "hbm");
  CHECK(codes(lenient.findings) == std::set<std::string>{"HBM_PATTERN_MISMATCH@gpu2"});
  CHECK(lenient.status == Status::fail);
}
