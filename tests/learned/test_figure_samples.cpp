// The figures with a limit a verdict recorded (src/learned/figure_samples.hpp): what
// `preflight baseline` learns from, in a verdict built in memory and in one read back from a
// file, where a metric's key is its whole name.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "learned/figure_samples.hpp"
#include "support/builtin_figures.hpp"

using namespace preflight;

namespace {

CheckResult fsamples_check(const std::string& name, Metrics metrics, Status status = Status::pass) {
  CheckResult check;
  check.name = name;
  check.status = status;
  check.metrics = std::move(metrics);
  return check;
}

std::vector<std::string> fsamples_keys(const std::vector<FigureSample>& samples) {
  std::vector<std::string> keys;
  for (const FigureSample& s : samples) keys.push_back(s.key());
  return keys;
}

}  // namespace

TEST_CASE("figure samples: the limited figures of the top-level checks, in order", "[baseline]") {
  Verdict v;
  v.checks = {
      fsamples_check("inventory", {{"gpu0", "temperature_c", 40, "C"}}),
      fsamples_check("gemm", {{"gpu0", "bf16.tflops_median", 700, "TFLOP/s"},
                              {"gpu0", "bf16.tflops_min", 650, "TFLOP/s"},
                              {"gpu0", "bf16.power_w_median", 690, "W"},
                              {"gpu1", "fp64.tflops_median", 55, "TFLOP/s"},
                              {"", "bf16.node_median_tflops", 700, "TFLOP/s"}}),
      fsamples_check("nvlink", {{"", "unidirectional_min_gbps", 370, "GB/s"}}),
      fsamples_check("nccl", {{"", "allgather.1048576.busbw_gbps", 120, "GB/s"}}),
      fsamples_check("rdma", {{"mlx5_0-mlx5_3", "pair_gbps", 390, "Gb/s"},
                              {"mlx5_0", "rate_gbps", 400, "Gb/s"}}),
  };
  const std::vector<FigureSample> samples = limited_figures(v, test::builtin_figures());
  CHECK(fsamples_keys(samples) == std::vector<std::string>{
                                      "gemm gpu0 bf16.tflops_median",
                                      "gemm gpu1 fp64.tflops_median",
                                      "nvlink unidirectional_min_gbps",
                                      "nccl allgather.1048576.busbw_gbps",
                                      "rdma mlx5_0-mlx5_3 pair_gbps",
                                  });
  REQUIRE(samples.size() == 5);
  CHECK(samples[0].check == "gemm");
  CHECK(samples[0].entity == "gpu0");
  CHECK(samples[0].metric == "bf16.tflops_median");
  CHECK(samples[0].unit == "TFLOP/s");
  CHECK(samples[0].value == 700);
  CHECK(samples[2].entity.empty());
}

TEST_CASE("figure samples: a verdict read back keeps each metric's key as its name", "[baseline]") {
  // verdict_reader.cpp: entity "" and the whole "<entity>.<name>" key as the name, no unit.
  Verdict v;
  v.checks = {
      fsamples_check("gemm", {{"", "gpu3.bf16.tflops_median", 701, ""},
                              {"", "bf16.tflops_median", 702, ""},  // no entity: not a GPU's
                              {"", ".bf16.tflops_median", 703, ""}}),
      fsamples_check("nvlink", {{"", "unidirectional_min_gbps", 371, ""},
                                {"", "gpu0.unidirectional_min_gbps", 372, ""}}),
      fsamples_check("rdma", {{"", "mlx5_0.loopback_gbps", 391, ""},
                              {"", "mlx5_0-mlx5_1.pair_gbps", 392, ""}}),
  };
  const std::vector<FigureSample> samples = limited_figures(v, test::builtin_figures());
  REQUIRE(fsamples_keys(samples) == std::vector<std::string>{
                                        "gemm gpu3 bf16.tflops_median",
                                        "nvlink unidirectional_min_gbps",
                                        "rdma mlx5_0 loopback_gbps",
                                        "rdma mlx5_0-mlx5_1 pair_gbps",
                                    });
  CHECK(samples[0].unit == "TFLOP/s");  // from the declaration, as the file has none
  CHECK(samples[0].value == 701);
  CHECK(samples[1].unit == "GB/s");
  CHECK(samples[2].unit == "Gb/s");
}

TEST_CASE("figure samples: skipped checks and unusable values give nothing", "[baseline]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Verdict v;
  v.checks = {
      fsamples_check("nvlink", {{"", "unidirectional_min_gbps", 370, "GB/s"}}, Status::skip),
      fsamples_check("gemm",
                     {{"gpu0", "bf16.tflops_median", nan, "TFLOP/s"},
                      {"gpu1", "bf16.tflops_median", inf, "TFLOP/s"},
                      {"gpu2", "bf16.tflops_median", 0, "TFLOP/s"},
                      {"gpu3", "bf16.tflops_median", -5, "TFLOP/s"},
                      {"gpu4", "bf16.tflops_median", 600, "TFLOP/s"}},
                     Status::fail),
      fsamples_check("hbm", {}),
      fsamples_check("nosuch", {{"gpu0", "bf16.tflops_median", 700, "TFLOP/s"}}),
  };
  // A failed check's finite figures still count: leaving unhealthy runs out is the caller's.
  CHECK(fsamples_keys(limited_figures(v, test::builtin_figures())) ==
        std::vector<std::string>{"gemm gpu4 bf16.tflops_median"});
}

TEST_CASE("figure samples: a repeated run gives its reported pass, the top level", "[baseline]") {
  Verdict v;
  v.checks = {fsamples_check("hbm", {{"gpu0", "hbm_traffic_gbps", 3000, "GB/s"}})};
  PassRecord other;
  other.index = 1;
  other.checks = {fsamples_check("hbm", {{"gpu0", "hbm_traffic_gbps", 2000, "GB/s"}})};
  v.passes = {other, other};
  v.burnin = BurninInfo{};
  const std::vector<FigureSample> samples = limited_figures(v, test::builtin_figures());
  REQUIRE(samples.size() == 1);
  CHECK(samples[0].value == 3000);
}

TEST_CASE("figure samples: the key names check, entity and metric", "[baseline]") {
  FigureSample s;
  s.check = "gemm";
  s.entity = "gpu3";
  s.metric = "bf16.tflops_median";
  CHECK(s.key() == "gemm gpu3 bf16.tflops_median");
  s.entity.clear();
  CHECK(s.key() == "gemm bf16.tflops_median");
}
