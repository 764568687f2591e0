// The gemm check on a real GPU: a healthy run passes with verified products and figures, every
// dtype runs, and each injected fault is detected on the GPU it targets, each detector on its
// own (--gemm-detectors). main.cpp skips these tests (exit 77) where no GPU is visible.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

// `run --checks gemm EXTRA --json -`; nullopt (with a failed CHECK) unless it exited 0 or 1
// with a verdict on stdout.
std::optional<json> gemm_verdict(const std::vector<std::string>& extra, RunResult& r) {
  std::vector<std::string> args = {"run", "--checks", "gemm"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--json", "-"});
  RunOptions options;
  options.timeout_s = 280;
  r = run_preflight(args, options);
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exited());
  CHECK((r.exit_code == 0 || r.exit_code == 1));
  if (!r.exited() || (r.exit_code != 0 && r.exit_code != 1)) return std::nullopt;
  return parse_json(r.out, "verdict");
}

std::size_t gpu_count(const json& verdict) {
  return verdict["system"]["gpus"].size();
}

// The gemm check's findings as "CODE@entity" (injected ones only when asked).
std::vector<std::string> gemm_findings(const json& verdict, bool injected_only = false) {
  std::vector<std::string> out;
  const json* gemm = find_check(verdict, "gemm");
  if (gemm == nullptr) return out;
  for (const auto& f : (*gemm)["findings"]) {
    if (injected_only && !f.value("injected", false)) continue;
    out.push_back(f.value("code", "") + "@" + f.value("entity", ""));
  }
  return out;
}

bool has(const std::vector<std::string>& items, const std::string& item) {
  for (const auto& i : items) {
    if (i == item) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("gpu gemm: a healthy GPU passes with verified products and its figures", "[gpu]") {
  RunResult r;
  const auto verdict = gemm_verdict({"--gemm-seconds", "10"}, r);
  REQUIRE(verdict);
  const json* gemm = find_check(*verdict, "gemm");
  REQUIRE(gemm != nullptr);
  WARN("gemm check:\n" << gemm->dump(2) << "\ntable:\n" << r.err);
  CHECK((*gemm)["status"] == "pass");
  CHECK((*gemm)["findings"].empty());
  const json& m = (*gemm)["metrics"];
  for (std::size_t i = 0; i < gpu_count(*verdict); ++i) {
    const std::string gpu =
        "gpu" + std::to_string((*verdict)["system"]["gpus"][i]["index"].get<int>());
    INFO(gpu);
    REQUIRE(m.contains(gpu + ".bf16.tflops_median"));
    CHECK(m[gpu + ".bf16.tflops_median"].get<double>() > 10.0);
    CHECK(m[gpu + ".bf16.products"].get<double>() >= 8);
    // The issue's budget for verification: at most 5% of the product time.
    CHECK(m[gpu + ".bf16.verify_overhead_pct"].get<double>() < 5.0);
  }
}

TEST_CASE("gpu gemm: every dtype runs clean", "[gpu]") {
  RunResult r;
  const auto verdict =
      gemm_verdict({"--gemm-dtypes", "bf16,fp16,tf32,fp32,fp64", "--gemm-seconds", "3"}, r);
  REQUIRE(verdict);
  const json* gemm = find_check(*verdict, "gemm");
  REQUIRE(gemm != nullptr);
  WARN("gemm check, all dtypes:\n" << gemm->dump(2));
  CHECK((*gemm)["status"] == "pass");
  for (const char* dtype : {"bf16", "fp16", "tf32", "fp32", "fp64"}) {
    INFO(dtype);
    CHECK((*gemm)["metrics"].contains(std::string("gpu0.") + dtype + ".tflops_median"));
  }
}

TEST_CASE("gpu gemm: each injected fault is found by its detector on its GPU", "[gpu][faults]") {
  struct Case {
    std::vector<std::string> args;
    std::string expected;  // CODE@gpu0, marked injected
  };
  const std::vector<Case> cases = {
      // A bit flip caught by the checksum alone on a single GPU, on the first product it hits.
      {{"--inject-fault", "gemm-bitflip@gpu=0", "--gemm-detectors", "checksum"},
       "GEMM_CHECKSUM_MISMATCH@gpu0"},
      // The lowest mantissa bit: still a different column sum, since the product is exact.
      {{"--inject-fault", "gemm-bitflip:0@gpu=0", "--gemm-detectors", "repeat"},
       "GEMM_NOT_REPEATABLE@gpu0"},
      {{"--inject-fault", "gemm-nan@gpu=0", "--gemm-detectors", "nan"}, "GEMM_NAN_INF@gpu0"},
      {{"--inject-fault", "gemm-slow:0.3@gpu=0"}, "GEMM_TFLOPS_LOW@gpu0"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--gemm-seconds", "3"});
    RunResult r;
    const auto verdict = gemm_verdict(args, r);
    REQUIRE(verdict);
    INFO(c.args[1] << "\n" << r.out);
    const auto found = gemm_findings(*verdict, true);
    CHECK(has(found, c.expected));
    CHECK(r.exit_code == 1);
    CHECK((*verdict)["reason"].get<std::string>().rfind("injected fault: ", 0) == 0);
  }
}

TEST_CASE("gpu gemm: consensus names the GPU that disagrees", "[gpu][faults]") {
  RunResult probe;
  const auto baseline = gemm_verdict({"--gemm-seconds", "1"}, probe);
  REQUIRE(baseline);
  if (gpu_count(*baseline) < 3) {
    WARN("consensus needs 3 GPUs of one model to name a minority; this node has "
         << gpu_count(*baseline) << " (covered by the unit tests with a fake engine)");
    return;
  }
  RunResult r;
  const auto verdict = gemm_verdict({"--inject-fault", "gemm-bitflip@gpu=1", "--gemm-detectors",
                                     "consensus", "--gemm-seconds", "3"},
                                    r);
  REQUIRE(verdict);
  CHECK(has(gemm_findings(*verdict, true), "GEMM_CONSENSUS_MINORITY@gpu1"));
}

}  // namespace preflight::test
