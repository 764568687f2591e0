// judge_gemm and its parts, fed runs made by hand: each detector must fire on the fault it is
// for, on the GPU that has it, and on no healthy GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "checks/gemm/gemm_judge.hpp"
#include "checks/gemm/gemm_math.hpp"
#include "preflight/engine/node_backend.hpp"
#include "support/builtin_thresholds.hpp"

using namespace preflight;
using Kind = ConsensusOutcome::Kind;

namespace {

constexpr int kSize = 8192;
constexpr double kProductMs = 1.5;  // 8192^3 in 1.5 ms: about 733 TFLOP/s
constexpr int kRepeats = 4;
const char* const kModel = "NVIDIA H100 80GB HBM3";

// A healthy run: `products` products, kRepeats per round, each round's repeats agreeing on a
// digest that every healthy GPU shares (digest_base + round).
GemmGpuRun make_run(int gpu, int products, double product_ms, std::uint64_t digest_base = 1000,
                    int sm_count = 132) {
  GemmGpuRun run;
  run.gpu_index = gpu;
  run.m = run.n = run.k = kSize;
  run.device_name = kModel;
  run.sm_count = sm_count;
  for (int i = 0; i < products; ++i) {
    GemmProductRecord p;
    p.round = i / kRepeats;
    p.repeat = i % kRepeats;
    p.product_ms = product_ms;
    p.verify_ms = product_ms / 10.0;
    p.digest = digest_base + static_cast<std::uint64_t>(p.round);
    run.products.push_back(p);
  }
  return run;
}

GemmGpuOutcome outcome_of(GemmGpuRun run, std::string model = kModel) {
  GemmGpuOutcome o;
  o.gpu_index = run.gpu_index;
  o.model = std::move(model);
  o.dtype = run.dtype;
  o.run = std::move(run);
  return o;
}

std::vector<GemmGpuOutcome> healthy_gemm_node(int gpus, int products = 12) {
  std::vector<GemmGpuOutcome> out;
  for (int g = 0; g < gpus; ++g) out.push_back(outcome_of(make_run(g, products, kProductMs)));
  return out;
}

// The bit flip the engine's injection makes: product (round 0, repeat 1) is wrong, and the
// checksum sees it.
void flip_bit(GemmGpuOutcome& o) {
  GemmProductRecord& p = o.run->products.at(1);
  p.digest ^= 0x8000;
  p.bad_columns = 1;
  p.first_bad_column = 513;
  p.first_bad_expected = 1234.0;
  p.first_bad_actual = 1234.0 + 4096.0;
}

std::set<std::string> codes_on(const GemmJudgement& j, const std::string& entity) {
  std::set<std::string> codes;
  for (const Finding& f : j.findings) {
    if (f.entity == entity) codes.insert(f.code);
  }
  return codes;
}

const Finding* find(const GemmJudgement& j, const std::string& entity, const std::string& code) {
  for (const Finding& f : j.findings) {
    if (f.entity == entity && f.code == code) return &f;
  }
  return nullptr;
}

bool has_metric(const GemmJudgement& j, const std::string& key) {
  return std::any_of(j.metrics.begin(), j.metrics.end(),
                     [&](const Metric& m) { return m.key() == key; });
}

// NaN when absent, so a missing metric fails any comparison.
double metric(const GemmJudgement& j, const std::string& key) {
  for (const Metric& m : j.metrics) {
    if (m.key() == key) return m.value;
  }
  return std::nan("");
}

// The limits these tests were written against, set through a thresholds document so they hold
// whatever values the SKU table carries: an H100 SXM has no sustained figure (judged against its
// peak), and a straggler warns at 5% and fails at 15% below the node's median.
const char* const kLimits = R"({"gemm": {
  "bf16_sustained_tflops": 0, "fp16_sustained_tflops": 0,
  "fail_fraction_of_peak": 0.5, "warn_fraction_of_peak": 0.6,
  "straggler_warn_pct": 5, "straggler_fail_pct": 15}})";

Thresholds generic() {
  Thresholds t = preflight::test::builtin_thresholds(nullptr, "test");
  t.apply_overrides(kLimits, "test");
  return t;
}
Thresholds h100_with_limits() {
  Thresholds t = preflight::test::builtin_thresholds(find_sku("h100-sxm5-80gb"), "test");
  t.apply_overrides(kLimits, "test");
  return t;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

}  // namespace

// --- vote -----------------------------------------------------------------------------------

TEST_CASE("gemm judge: vote unanimous and single") {
  const ConsensusOutcome all = vote({{0, 7}, {1, 7}, {2, 7}});
  CHECK(all.kind == Kind::unanimous);
  CHECK(all.majority_digest == 7);
  CHECK(all.majority == std::vector<int>{0, 1, 2});
  CHECK(all.minority.empty());

  const ConsensusOutcome one = vote({{5, 9}});
  CHECK(one.kind == Kind::single);
  CHECK(one.majority == std::vector<int>{5});
  CHECK(one.minority.empty());
}

TEST_CASE("gemm judge: vote 2-1 names the minority") {
  const ConsensusOutcome r = vote({{2, 7}, {0, 7}, {1, 8}});
  CHECK(r.kind == Kind::majority);
  CHECK(r.majority_digest == 7);
  CHECK(r.majority == std::vector<int>{0, 2});
  CHECK(r.minority == std::vector<int>{1});
  CHECK(r.tied.empty());
}

TEST_CASE("gemm judge: vote ties are never resolved") {
  const ConsensusOutcome one_one = vote({{1, 8}, {0, 7}});
  CHECK(one_one.kind == Kind::tie);
  CHECK(one_one.majority.empty());
  CHECK(one_one.tied == std::vector<std::vector<int>>{{0}, {1}});

  const ConsensusOutcome two_two = vote({{3, 5}, {0, 9}, {2, 9}, {1, 5}});
  CHECK(two_two.kind == Kind::tie);
  // Ordered by their first GPU, whatever the digests' order.
  CHECK(two_two.tied == std::vector<std::vector<int>>{{0, 2}, {1, 3}});
  CHECK(two_two.minority.empty());

  const ConsensusOutcome two_two_one = vote({{0, 1}, {1, 1}, {2, 2}, {3, 2}, {4, 3}});
  CHECK(two_two_one.kind == Kind::tie);
  CHECK(two_two_one.tied.size() == 2);
  CHECK(two_two_one.minority == std::vector<int>{4});
}

TEST_CASE("gemm judge: vote 2-1-1 plurality is a majority") {
  const ConsensusOutcome r = vote({{0, 7}, {1, 8}, {2, 7}, {3, 9}});
  CHECK(r.kind == Kind::majority);
  CHECK(r.majority_digest == 7);
  CHECK(r.majority == std::vector<int>{0, 2});
  CHECK(r.minority == std::vector<int>{1, 3});
}

// --- speed arithmetic -----------------------------------------------------------------------

TEST_CASE("gemm judge: percent_below edges") {
  CHECK(percent_below(90.0, 100.0) == Approx(10.0));
  CHECK(percent_below(100.0, 100.0) == 0.0);
  CHECK(percent_below(110.0, 100.0) == 0.0);
  CHECK(percent_below(50.0, 0.0) == 0.0);
  CHECK(percent_below(50.0, -1.0) == 0.0);
  CHECK(percent_below(0.0, 100.0) == Approx(100.0));
}

TEST_CASE("gemm judge: classify_straggler edges") {
  CHECK(classify_straggler(4.99, 5, 15) == StragglerClass::none);
  CHECK(classify_straggler(5.0, 5, 15) == StragglerClass::warn);
  CHECK(classify_straggler(14.99, 5, 15) == StragglerClass::warn);
  CHECK(classify_straggler(15.0, 5, 15) == StragglerClass::fail);
  CHECK(classify_straggler(0.0, 5, 15) == StragglerClass::none);
  // A limit of 0 disables its level.
  CHECK(classify_straggler(50.0, 0, 15) == StragglerClass::fail);
  CHECK(classify_straggler(10.0, 0, 15) == StragglerClass::none);
  CHECK(classify_straggler(50.0, 5, 0) == StragglerClass::warn);
  CHECK(classify_straggler(50.0, 0, 0) == StragglerClass::none);
}

// --- telemetry ------------------------------------------------------------------------------

TEST_CASE("gemm judge: telemetry summary and text") {
  std::vector<GpuTelemetry> samples(4);
  samples[0] = {0.1, 1400, 80, 680.0, clock_event::kSwPowerCap};
  samples[1] = {0.2, 1410, 83, 690.0, clock_event::kSwPowerCap | clock_event::kHwSlowdown};
  samples[2] = {0.3, 1420, 81, 700.0, clock_event::kGpuIdle};  // idle says nothing: not listed
  samples[3] = {0.4, std::nullopt, std::nullopt, std::nullopt, std::nullopt};
  const TelemetrySummary s = summarize_telemetry(samples);
  CHECK(s.samples == 4);
  REQUIRE(s.sm_clock_mhz_median);
  CHECK(*s.sm_clock_mhz_median == Approx(1410));
  CHECK(s.temperature_c_max == 83);
  REQUIRE(s.power_w_median);
  CHECK(*s.power_w_median == Approx(690));
  // Shares of the three samples that reported reasons, largest first, zero shares left out.
  REQUIRE(s.reasons.size() == 2);
  CHECK(s.reasons[0].first == "SW power cap");
  CHECK(s.reasons[0].second == Approx(2.0 / 3.0));
  CHECK(s.reasons[1].first == "HW slowdown");
  CHECK(s.reasons[1].second == Approx(1.0 / 3.0));
  CHECK(describe_telemetry(s) ==
        "SM clock 1410 MHz (median), 83 C max, 690 W (median); SW power cap in 67% of samples, "
        "HW slowdown in 33% of samples");

  const TelemetrySummary none = summarize_telemetry({});
  CHECK(none.samples == 0);
  CHECK_FALSE(none.sm_clock_mhz_median);
  CHECK(describe_telemetry(none) == "no NVML telemetry");

  std::vector<GpuTelemetry> thermal(2);
  thermal[0].clock_event_reasons = clock_event::kHwThermalSlowdown;
  thermal[1].clock_event_reasons =
      clock_event::kHwThermalSlowdown | clock_event::kHwPowerBrakeSlowdown;
  const TelemetrySummary t = summarize_telemetry(thermal);
  REQUIRE(t.reasons.size() == 2);
  CHECK(t.reasons[0] == std::make_pair(std::string("HW thermal slowdown"), 1.0));
  CHECK(t.reasons[1] == std::make_pair(std::string("HW power brake"), 0.5));
}

// --- judge_gemm -----------------------------------------------------------------------------

TEST_CASE("gemm judge: healthy GPUs give no findings and the expected metrics") {
  const GemmJudgement j = judge_gemm(healthy_gemm_node(2), h100_with_limits(), GemmSettings{});
  CHECK(j.findings.empty());
  const double tflops = gemm_tflops(kSize, kSize, kSize, kProductMs);
  CHECK(tflops == Approx(733.0).epsilon(0.01));
  for (const std::string gpu : {"gpu0", "gpu1"}) {
    INFO(gpu);
    CHECK(metric(j, gpu + ".bf16.tflops_median") == Approx(tflops));
    CHECK(metric(j, gpu + ".bf16.tflops_min") == Approx(tflops));
    CHECK(metric(j, gpu + ".bf16.tflops_max") == Approx(tflops));
    CHECK(metric(j, gpu + ".bf16.products") == Approx(12));
    CHECK(metric(j, gpu + ".bf16.verify_overhead_pct") == Approx(10.0));
    CHECK(metric(j, gpu + ".bf16.effective_tflops") == Approx(tflops / 1.1));
    CHECK_FALSE(has_metric(j, gpu + ".bf16.sm_clock_mhz_median"));  // no telemetry given
  }
  CHECK(metric(j, "bf16.node_median_tflops") == Approx(tflops));
  CHECK(j.summary ==
        "bf16 8192^3 on 2 GPUs: 733.0 TFLOP/s median (min 733.0 gpu0), 24 products "
        "verified");
}

TEST_CASE("gemm judge: a bit flip on one of 3 GPUs is found on that GPU only") {
  auto outcomes = healthy_gemm_node(3);
  flip_bit(outcomes[1]);
  const GemmJudgement j = judge_gemm(outcomes, generic(), GemmSettings{});
  CHECK(codes_on(j, "gpu1") == std::set<std::string>{"GEMM_CHECKSUM_MISMATCH",
                                                     "GEMM_NOT_REPEATABLE",
                                                     "GEMM_CONSENSUS_MINORITY"});
  CHECK(codes_on(j, "gpu0").empty());
  CHECK(codes_on(j, "gpu2").empty());
  for (const Finding& f : j.findings) {
    CHECK(f.severity == Severity::fail);
    CHECK_FALSE(f.judged);  // corruption is an observation: no threshold undoes it
    CHECK(starts_with(f.message, "bf16: "));
    CHECK_FALSE(f.remediation.empty());
  }
  const Finding* sum = find(j, "gpu1", "GEMM_CHECKSUM_MISMATCH");
  REQUIRE(sum);
  CHECK(sum->message.find("1 of 12 products") != std::string::npos);
  CHECK(sum->message.find("round 0 repeat 1") != std::string::npos);
  CHECK(sum->message.find("column 513 sums to 5330, expected 1234") != std::string::npos);
  CHECK(sum->value.value_or(-1) == Approx(1));
  CHECK(sum->unit == "columns");
  const Finding* rep = find(j, "gpu1", "GEMM_NOT_REPEATABLE");
  REQUIRE(rep);
  CHECK(rep->message.find("1 of 12 products") != std::string::npos);
  const Finding* minority = find(j, "gpu1", "GEMM_CONSENSUS_MINORITY");
  REQUIRE(minority);
  CHECK(minority->message ==
        "bf16: disagrees with 2 other NVIDIA H100 80GB HBM3 GPUs in 1 of 12 products; first "
        "round 0 repeat 1");
}

TEST_CASE("gemm judge: a bit flip on one of 2 GPUs is a consensus tie on both") {
  auto outcomes = healthy_gemm_node(2);
  flip_bit(outcomes[1]);
  const GemmJudgement j = judge_gemm(outcomes, generic(), GemmSettings{});
  CHECK(codes_on(j, "gpu0") == std::set<std::string>{"GEMM_CONSENSUS_TIE"});
  CHECK(codes_on(j, "gpu1") == std::set<std::string>{"GEMM_CHECKSUM_MISMATCH",
                                                     "GEMM_NOT_REPEATABLE", "GEMM_CONSENSUS_TIE"});
  const Finding* tie = find(j, "gpu0", "GEMM_CONSENSUS_TIE");
  REQUIRE(tie);
  CHECK(starts_with(tie->message,
                    "bf16: products split 1-1: gpu0 | gpu1; no majority to tell which is wrong"));
  CHECK_FALSE(tie->injected);

  // An injected flip makes the healthy side of the tie a drill finding too.
  outcomes[1].run->products[1].injected = true;
  const GemmJudgement drill = judge_gemm(outcomes, generic(), GemmSettings{});
  REQUIRE(find(drill, "gpu0", "GEMM_CONSENSUS_TIE"));
  CHECK(find(drill, "gpu0", "GEMM_CONSENSUS_TIE")->injected);
  CHECK(find(drill, "gpu1", "GEMM_CHECKSUM_MISMATCH")->injected);
}

TEST_CASE("gemm judge: each detector fires on its own and disabling it suppresses only its code") {
  const std::vector<std::pair<GemmDetector, std::string>> detectors = {
      {GemmDetector::nan_inf, "GEMM_NAN_INF"},
      {GemmDetector::checksum, "GEMM_CHECKSUM_MISMATCH"},
      {GemmDetector::repeatability, "GEMM_NOT_REPEATABLE"},
      {GemmDetector::consensus, "GEMM_CONSENSUS_MINORITY"},
  };
  auto outcomes = healthy_gemm_node(3);
  flip_bit(outcomes[1]);
  outcomes[1].run->products[1].nonfinite = 1;
  std::set<std::string> all;
  for (const auto& [d, code] : detectors) all.insert(code);
  REQUIRE(codes_on(judge_gemm(outcomes, generic(), GemmSettings{}), "gpu1") == all);

  for (const auto& [detector, code] : detectors) {
    INFO(code);
    GemmSettings without;
    without.detectors.clear();
    for (const auto& [d, c] : detectors) {
      if (d != detector) without.detectors.push_back(d);
    }
    std::set<std::string> expected = all;
    expected.erase(code);
    const GemmJudgement j = judge_gemm(outcomes, generic(), without);
    CHECK(codes_on(j, "gpu1") == expected);

    GemmSettings only;
    only.detectors = {detector};
    const GemmJudgement alone = judge_gemm(outcomes, generic(), only);
    CHECK(codes_on(alone, "gpu1") == std::set<std::string>{code});
    CHECK(alone.findings.size() == 1);
  }
}

TEST_CASE("gemm judge: NaN outputs") {
  auto outcomes = healthy_gemm_node(1);
  outcomes[0].run->products[5].nonfinite = 3;
  outcomes[0].run->products[9].nonfinite = 2;
  const GemmJudgement j = judge_gemm(outcomes, generic(), GemmSettings{});
  const Finding* f = find(j, "gpu0", "GEMM_NAN_INF");
  REQUIRE(f);
  CHECK(f->severity == Severity::fail);
  CHECK(f->value.value_or(-1) == Approx(5));
  CHECK(f->unit == "elements");
  CHECK(starts_with(f->message, "bf16: 2 of 12 products"));
  CHECK(f->message.find("first round 1 repeat 1 (3 elements)") != std::string::npos);
  // One GPU: no consensus, and the digests did not change, so only the NaN detector speaks.
  CHECK(j.findings.size() == 1);
}

TEST_CASE("gemm judge: a GPU at 0.9 speed among 4 is a straggler") {
  auto outcomes = healthy_gemm_node(4);
  outcomes[3] = outcome_of(make_run(3, 12, kProductMs / 0.9));
  outcomes[3].telemetry = {{0.1, 1300, 84, 700.0, clock_event::kSwPowerCap}};
  const GemmJudgement j = judge_gemm(outcomes, generic(), GemmSettings{});
  REQUIRE(j.findings.size() == 1);
  const Finding& f = j.findings[0];
  CHECK(f.entity == "gpu3");
  CHECK(f.code == "GEMM_STRAGGLER");
  CHECK(f.severity == Severity::warn);
  CHECK(f.judged);  // speed is judged from the readings; `preflight judge` makes it again
  CHECK(f.value.value_or(-1) == Approx(10.0));
  CHECK(f.unit == "%");
  CHECK(f.threshold.value_or(-1) == Approx(5.0));
  CHECK(starts_with(f.message,
                    "bf16: 10.0% slower than the median of the node's 4 NVIDIA H100 "
                    "80GB HBM3 GPUs (659.7 vs 733.0 TFLOP/s); SM clock 1300 MHz"));
  CHECK(f.message.find("SW power cap in 100% of samples") != std::string::npos);
  CHECK(metric(j, "gpu3.bf16.sm_clock_mhz_median") == Approx(1300));
  CHECK(metric(j, "gpu3.bf16.temperature_c_max") == Approx(84));
  CHECK(metric(j, "gpu3.bf16.power_w_median") == Approx(700));
  CHECK(j.summary.find("min 659.7 gpu3") != std::string::npos);

  outcomes[3] = outcome_of(make_run(3, 12, kProductMs / 0.8));
  const GemmJudgement severe = judge_gemm(outcomes, generic(), GemmSettings{});
  CHECK(codes_on(severe, "gpu3") == std::set<std::string>{"GEMM_STRAGGLER_SEVERE"});
  CHECK(find(severe, "gpu3", "GEMM_STRAGGLER_SEVERE")->threshold.value_or(-1) == Approx(15.0));
}

TEST_CASE("gemm judge: a slow GPU alone is judged against the SKU's peak only") {
  std::vector<GemmGpuOutcome> slow = {outcome_of(make_run(0, 12, kProductMs / 0.3))};
  slow[0].telemetry = {{0.1, 900, 90, 400.0, clock_event::kHwThermalSlowdown}};
  const GemmJudgement j = judge_gemm(slow, h100_with_limits(), GemmSettings{});
  REQUIRE(j.findings.size() == 1);
  const Finding& f = j.findings[0];
  CHECK(f.code == "GEMM_TFLOPS_LOW");
  CHECK(f.severity == Severity::fail);
  CHECK(f.judged);
  CHECK(f.value.value_or(-1) == Approx(733.0 * 0.3).epsilon(0.01));
  CHECK(f.unit == "TFLOP/s");
  CHECK(f.threshold.value_or(-1) == Approx(989.0 * 0.5));
  CHECK(starts_with(f.message, "bf16: 219.9 TFLOP/s median"));
  CHECK(f.message.find("HW thermal slowdown in 100% of samples") != std::string::npos);

  // Between the fail and warn shares: marginal.
  std::vector<GemmGpuOutcome> marginal = {outcome_of(make_run(0, 12, kProductMs * 733.0 / 550.0))};
  const GemmJudgement m = judge_gemm(marginal, h100_with_limits(), GemmSettings{});
  CHECK(codes_on(m, "gpu0") == std::set<std::string>{"GEMM_TFLOPS_MARGINAL"});
  CHECK(m.findings[0].severity == Severity::warn);

  // Generic thresholds have no peak: no absolute finding.
  CHECK(judge_gemm(slow, generic(), GemmSettings{}).findings.empty());
  // Healthy speed on the SKU: nothing.
  CHECK(judge_gemm(healthy_gemm_node(1), h100_with_limits(), GemmSettings{}).findings.empty());
}

TEST_CASE("gemm judge: timeout, timed_out, CUDA error and not tested") {
  std::vector<GemmGpuOutcome> outcomes = healthy_gemm_node(4);
  outcomes[0].run.reset();
  outcomes[1].run = make_run(1, 5, kProductMs);
  outcomes[1].run->timed_out = true;
  outcomes[2].run = make_run(2, 6, kProductMs);
  outcomes[2].run->error = "cudaErrorIllegalAddress: an illegal memory access was encountered";
  outcomes[2].run->error_stage = "product";
  outcomes[2].run->products[4].nonfinite = 1;  // products before the error are still judged
  outcomes[3].run.reset();
  outcomes[3].not_tested = "6144 MiB needed, 2048 MiB free: memory held by another process";

  const GemmJudgement j = judge_gemm(outcomes, generic(), GemmSettings{});
  CHECK(codes_on(j, "gpu0") == std::set<std::string>{"GEMM_TIMEOUT"});
  CHECK(find(j, "gpu0", "GEMM_TIMEOUT")->message ==
        "bf16: did not return before the check's deadline: hung in the driver?");
  CHECK(codes_on(j, "gpu1") == std::set<std::string>{"GEMM_TIMEOUT"});
  CHECK(find(j, "gpu1", "GEMM_TIMEOUT")->message.find("5 products were verified") !=
        std::string::npos);
  CHECK(codes_on(j, "gpu2") == std::set<std::string>{"GEMM_CUDA_ERROR", "GEMM_NAN_INF"});
  CHECK(starts_with(find(j, "gpu2", "GEMM_CUDA_ERROR")->message,
                    "bf16 product: cudaErrorIllegalAddress: an illegal memory access"));
  CHECK(codes_on(j, "gpu3") == std::set<std::string>{"GEMM_GPU_NOT_TESTED"});
  const Finding* nt = find(j, "gpu3", "GEMM_GPU_NOT_TESTED");
  CHECK(nt->severity == Severity::warn);
  CHECK(nt->message == "bf16: " + outcomes[3].not_tested);
  // The partial runs still give speed metrics.
  CHECK(metric(j, "gpu1.bf16.products") == Approx(5));
  CHECK(metric(j, "gpu2.bf16.products") == Approx(6));
  CHECK_FALSE(has_metric(j, "gpu0.bf16.products"));
  CHECK(j.summary.find("2 GPUs") != std::string::npos);
  CHECK(j.summary.find("products verified (1 GPU not tested, 1 GPU timed out)") !=
        std::string::npos);

  std::vector<GemmGpuOutcome> nothing = {outcomes[0], outcomes[3]};
  CHECK(judge_gemm(nothing, generic(), GemmSettings{}).summary ==
        "bf16: no products verified (1 GPU not tested, 1 GPU timed out)");
}

TEST_CASE("gemm judge: consensus compares only GPUs of one model and SM count") {
  // Every GPU computes different bits, as different kernels would: never compared.
  std::vector<GemmGpuOutcome> outcomes = {
      outcome_of(make_run(0, 12, kProductMs, 1000)),
      outcome_of(make_run(1, 12, kProductMs, 2000), "NVIDIA H100 PCIe"),
      outcome_of(make_run(2, 12, kProductMs, 3000, 114)),
  };
  const GemmJudgement j = judge_gemm(outcomes, generic(), GemmSettings{});
  CHECK(j.findings.empty());
  CHECK(judge_gemm_consensus(outcomes).empty());

  // Two of the same model and SM count are compared, the third is left out.
  outcomes.push_back(outcome_of(make_run(3, 12, kProductMs, 1001)));
  const ConsensusFindings c = judge_gemm_consensus(outcomes);
  REQUIRE(c.size() == 2);
  CHECK(c[0].gpu_index == 0);
  CHECK(c[0].finding.entity == "gpu0");
  CHECK(c[1].gpu_index == 3);
  CHECK(c[1].finding.entity == "gpu3");
  CHECK(c[0].finding.code == "GEMM_CONSENSUS_TIE");
  CHECK(c[0].dtype == GemmDtype::bf16);
}

TEST_CASE("gemm judge: one finding per GPU, dtype and code") {
  auto outcomes = healthy_gemm_node(3);
  for (GemmProductRecord& p : outcomes[2].run->products) {
    p.nonfinite = 1;
    p.bad_columns = 2;
  }
  GemmGpuOutcome fp16 = outcome_of(make_run(2, 8, kProductMs * 4));
  fp16.dtype = GemmDtype::fp16;
  fp16.run->dtype = GemmDtype::fp16;
  fp16.run->products[0].nonfinite = 1;
  outcomes.push_back(fp16);
  GemmSettings settings;
  settings.dtypes = {GemmDtype::bf16, GemmDtype::fp16};
  const GemmJudgement j = judge_gemm(outcomes, generic(), settings);
  const auto count = [&](const std::string& code, const std::string& prefix) {
    return std::count_if(j.findings.begin(), j.findings.end(), [&](const Finding& f) {
      return f.entity == "gpu2" && f.code == code && starts_with(f.message, prefix);
    });
  };
  CHECK(count("GEMM_NAN_INF", "bf16: 12 of 12 products") == 1);
  CHECK(count("GEMM_CHECKSUM_MISMATCH", "bf16: ") == 1);
  CHECK(find(j, "gpu2", "GEMM_CHECKSUM_MISMATCH")->value.value_or(-1) == Approx(24));
  CHECK(count("GEMM_NAN_INF", "fp16: 1 of 8 products") == 1);
  // Each dtype has its own summary line; fp16 ran on one GPU.
  CHECK(j.summary.find("; fp16 8192^3 on 1 GPU: ") != std::string::npos);
  CHECK_FALSE(has_metric(j, "fp16.node_median_tflops"));
}

TEST_CASE("gemm judge: repeats that split evenly count every product of their round") {
  auto outcomes = healthy_gemm_node(1);
  // Round 1: repeats 0 and 1 agree, 2 and 3 agree on another digest: 2-2, no majority.
  outcomes[0].run->products[6].digest = 77;
  outcomes[0].run->products[7].digest = 77;
  // Round 2: repeat 3 alone differs: only it counts.
  outcomes[0].run->products[11].digest = 78;
  const GemmJudgement j = judge_gemm(outcomes, generic(), GemmSettings{});
  const Finding* f = find(j, "gpu0", "GEMM_NOT_REPEATABLE");
  REQUIRE(f);
  CHECK(f->value.value_or(-1) == Approx(5));
  CHECK(starts_with(f->message,
                    "bf16: 5 of 12 products differ from other repeats of the same "
                    "inputs (2 of 3 rounds); first round 1 repeat 0"));
  CHECK(f->message.find("; 1 round split evenly, so all its products count") != std::string::npos);
}
