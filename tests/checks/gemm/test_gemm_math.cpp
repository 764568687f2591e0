// The gemm check's host arithmetic: precision per dtype, the input range that keeps products
// exact, the checksum tolerance, memory footprint, TFLOP/s and sample statistics. Expected
// values are worked out by hand in the comments, not recomputed with the code under test.
#include <cmath>
#include <cstddef>
#include <vector>

#include <catch2/catch.hpp>

#include "checks/gemm/gemm_math.hpp"

using preflight::GemmDtype;

TEST_CASE("gemm: precision table per dtype") {
  struct Row {
    GemmDtype dtype;
    int input, accumulate, output;
    bool tensor;
    int exact;
  };
  const Row rows[] = {
      {GemmDtype::bf16, 8, 24, 24, true, 22},   {GemmDtype::fp16, 11, 24, 24, true, 22},
      {GemmDtype::tf32, 11, 24, 24, true, 22},  {GemmDtype::fp32, 24, 24, 24, false, 24},
      {GemmDtype::fp64, 53, 53, 53, false, 53},
  };
  for (const Row& row : rows) {
    INFO(preflight::to_string(row.dtype));
    const auto p = preflight::gemm_precision(row.dtype);
    CHECK(p.input_bits == row.input);
    CHECK(p.accumulate_bits == row.accumulate);
    CHECK(p.output_bits == row.output);
    CHECK(p.tensor_cores == row.tensor);
    CHECK(preflight::gemm_exact_accumulate_bits(row.dtype) == row.exact);
  }
}

TEST_CASE("gemm: input range at the default size") {
  // bf16/fp16/tf32: k R^2 <= 2^22 with k = 2^14 -> R^2 <= 2^8 -> 16.
  CHECK(preflight::gemm_input_range(GemmDtype::bf16, 16384, 16384) == 16);
  CHECK(preflight::gemm_input_range(GemmDtype::fp16, 16384, 16384) == 16);
  CHECK(preflight::gemm_input_range(GemmDtype::tf32, 16384, 16384) == 16);
  // fp32: k R^2 <= 2^24 -> R^2 <= 2^10 -> 32.
  CHECK(preflight::gemm_input_range(GemmDtype::fp32, 16384, 16384) == 32);
  // fp64: the partial sums would allow 2^19.5, but m k R^2 <= 2^50 -> R^2 <= 2^22 -> 2048.
  CHECK(preflight::gemm_input_range(GemmDtype::fp64, 16384, 16384) == 2048);
  // Not a power of two: 2^22 / 12288 = 341.33 -> R^2 <= 341 -> 18 (18^2 = 324, 19^2 = 361).
  CHECK(preflight::gemm_input_range(GemmDtype::bf16, 12288, 12288) == 18);
  // The largest size --gemm-size allows: 2^22 / 2^16 = 64 -> 8.
  CHECK(preflight::gemm_input_range(GemmDtype::bf16, 65536, 65536) == 8);
}

TEST_CASE("gemm: input range on small sizes hits the type and the cap") {
  // bf16 k = 64: 2^22 / 64 = 2^16 -> 256, but bf16 holds integers exactly only up to 2^8 - 1.
  CHECK(preflight::gemm_input_range(GemmDtype::bf16, 64, 64) == 255);
  // fp16 k = 64: 256 by the sum, below 2^11 - 1: the sum binds.
  CHECK(preflight::gemm_input_range(GemmDtype::fp16, 64, 64) == 256);
  // fp16 k = 1: 2^11 by the sum, 2047 by the type.
  CHECK(preflight::gemm_input_range(GemmDtype::fp16, 1, 1) == 2047);
  // fp32 k = 16: 2^24 / 16 = 2^20 -> 1024.
  CHECK(preflight::gemm_input_range(GemmDtype::fp32, 16, 16) == 1024);
  // fp32 k = 1 would allow 4096 by the sum: the cap is 4096 too; fp64 at k = 1 is capped.
  CHECK(preflight::gemm_input_range(GemmDtype::fp32, 1, 1) == 4096);
  CHECK(preflight::gemm_input_range(GemmDtype::fp64, 1024, 1024) == 4096);
  // Never below 1, even where nothing is exact (k > 2^22 for bf16).
  CHECK(preflight::gemm_input_range(GemmDtype::bf16, 1, 1 << 23) == 1);
}

TEST_CASE("gemm: the chosen range is exact and one more is not where the sum binds") {
  struct Case {
    GemmDtype dtype;
    int m, k;
  };
  const Case cases[] = {
      {GemmDtype::bf16, 16384, 16384}, {GemmDtype::fp16, 16384, 16384},
      {GemmDtype::tf32, 12288, 12288}, {GemmDtype::fp32, 16384, 16384},
      {GemmDtype::fp32, 4096, 8192},   {GemmDtype::fp64, 16384, 16384},
      {GemmDtype::fp16, 64, 64},
  };
  for (const Case& c : cases) {
    INFO(preflight::to_string(c.dtype) << " m=" << c.m << " k=" << c.k);
    const int r = preflight::gemm_input_range(c.dtype, c.m, c.k);
    CHECK(preflight::gemm_is_exact(c.dtype, c.m, c.k, r));
    CHECK_FALSE(preflight::gemm_is_exact(c.dtype, c.m, c.k, r + 1));
  }
  // Each rule on its own: the partial sums (bf16, k 2^14: 16 ok, 17 not), the column sums
  // (fp64, m = k = 2^14: 2048 ok, 2049 not) and the type (bf16, k = 64: 255 ok, 256 not, though
  // the sums would allow 256).
  CHECK(preflight::gemm_is_exact(GemmDtype::bf16, 1024, 16384, 16));
  CHECK_FALSE(preflight::gemm_is_exact(GemmDtype::bf16, 1024, 16384, 17));
  CHECK(preflight::gemm_is_exact(GemmDtype::fp64, 16384, 16384, 2048));
  CHECK_FALSE(preflight::gemm_is_exact(GemmDtype::fp64, 16384, 16384, 2049));
  CHECK(preflight::gemm_is_exact(GemmDtype::bf16, 64, 64, 255));
  CHECK_FALSE(preflight::gemm_is_exact(GemmDtype::bf16, 64, 64, 256));
  // The 4096 cap is a choice, not an exactness rule.
  CHECK(preflight::gemm_is_exact(GemmDtype::fp64, 64, 64, 100000));
}

TEST_CASE("gemm: tolerance is zero when exact, positive and growing with k when not") {
  const auto exact = preflight::gemm_tolerance(GemmDtype::bf16, 16384, 16384, 16);
  CHECK(exact.output_roundoff == 0.0);
  CHECK(exact.accumulation_gamma == 0.0);

  // fp32 k = 4096, range 100: k R^2 = 2^12 * 10^4 > 2^24, not exact. u = 2^-24,
  // gamma = k u / (1 - k u) = 2^-12 / (1 - 2^-12) = 1 / 4095; CUDA cores: not doubled.
  REQUIRE_FALSE(preflight::gemm_is_exact(GemmDtype::fp32, 64, 4096, 100));
  const auto fp32 = preflight::gemm_tolerance(GemmDtype::fp32, 64, 4096, 100);
  CHECK(fp32.output_roundoff == std::ldexp(1.0, -24));
  CHECK(fp32.accumulation_gamma == Approx(1.0 / 4095).epsilon(1e-12));

  // fp16 at the same k and the type's largest integers (2047): tensor cores, doubled.
  REQUIRE_FALSE(preflight::gemm_is_exact(GemmDtype::fp16, 64, 4096, 2047));
  const auto fp16 = preflight::gemm_tolerance(GemmDtype::fp16, 64, 4096, 2047);
  CHECK(fp16.output_roundoff == std::ldexp(1.0, -24));
  CHECK(fp16.accumulation_gamma == Approx(2.0 / 4095).epsilon(1e-12));

  // fp64: u = 2^-53, output 2^-53.
  const auto fp64 = preflight::gemm_tolerance(GemmDtype::fp64, 16384, 16384, 4096);
  CHECK(fp64.output_roundoff == std::ldexp(1.0, -53));
  CHECK(fp64.accumulation_gamma == Approx(16384 * std::ldexp(1.0, -53)).epsilon(1e-9));

  // Grows with k.
  double previous = 0.0;
  for (int k : {1024, 4096, 16384, 65536}) {
    INFO("k=" << k);
    const auto t = preflight::gemm_tolerance(GemmDtype::fp32, 64, k, 4096);
    CHECK(t.accumulation_gamma > previous);
    previous = t.accumulation_gamma;
  }

  // k u >= 1 (bf16 path, k = 2^24): no bound exists; the factor admits any finite sum.
  const auto none = preflight::gemm_tolerance(GemmDtype::bf16, 1, 1 << 24, 1);
  CHECK(std::isfinite(none.accumulation_gamma));
  CHECK(none.accumulation_gamma > 1e300);
}

TEST_CASE("gemm: element sizes and device footprint") {
  CHECK(preflight::gemm_input_bytes(GemmDtype::bf16) == 2);
  CHECK(preflight::gemm_input_bytes(GemmDtype::fp16) == 2);
  CHECK(preflight::gemm_input_bytes(GemmDtype::tf32) == 4);
  CHECK(preflight::gemm_input_bytes(GemmDtype::fp32) == 4);
  CHECK(preflight::gemm_input_bytes(GemmDtype::fp64) == 8);
  CHECK(preflight::gemm_output_bytes(GemmDtype::bf16) == 4);
  CHECK(preflight::gemm_output_bytes(GemmDtype::tf32) == 4);
  CHECK(preflight::gemm_output_bytes(GemmDtype::fp64) == 8);

  constexpr std::size_t kMi = std::size_t{1} << 20;
  constexpr std::size_t kGi = std::size_t{1} << 30;
  // bf16 16384^3: A 512 Mi, B 512 Mi, C (fp32) 1 Gi, vectors (2 * 16384 + 4 * 16384) doubles,
  // result slots, workspace 32 Mi.
  CHECK(preflight::gemm_footprint_bytes(GemmDtype::bf16, 16384, 16384, 16384, 32 * kMi) ==
        512 * kMi + 512 * kMi + kGi + 6 * 16384 * 8 + 256 + 32 * kMi);
  // fp64 16384^3: 2 Gi each, above 6 GiB before vectors and workspace.
  CHECK(preflight::gemm_footprint_bytes(GemmDtype::fp64, 16384, 16384, 16384, 0) ==
        6 * kGi + 6 * 16384 * 8 + 256);
  // Rectangular, so m, n and k must each land in the right term: A 100x30, B 30x7, C 100x7.
  CHECK(preflight::gemm_footprint_bytes(GemmDtype::fp32, 100, 7, 30, 5) ==
        100 * 30 * 4 + 30 * 7 * 4 + 100 * 7 * 4 + (60 + 28) * 8 + 256 + 5);
}

TEST_CASE("gemm: flops and TFLOP/s") {
  CHECK(preflight::gemm_flops(16384, 16384, 16384) == 2.0 * 16384.0 * 16384.0 * 16384.0);
  CHECK(preflight::gemm_flops(2, 3, 5) == 60.0);
  // 2 * 16384^3 = 8.796e12 flops in 10 ms = 879.6 TFLOP/s.
  CHECK(preflight::gemm_tflops(16384, 16384, 16384, 10.0) == Approx(879.609302).epsilon(1e-6));
  CHECK(preflight::gemm_tflops(16384, 16384, 16384, 0.0) == 0.0);
  CHECK(preflight::gemm_tflops(16384, 16384, 16384, -1.0) == 0.0);
}

TEST_CASE("gemm: summarize odd, even and empty samples") {
  const auto odd = preflight::summarize({5.0, 1.0, 3.0});
  CHECK(odd.count == 3);
  CHECK(odd.median == 3.0);
  CHECK(odd.min == 1.0);
  CHECK(odd.max == 5.0);

  const auto even = preflight::summarize({4.0, 1.0, 10.0, 2.0});
  CHECK(even.count == 4);
  CHECK(even.median == 3.0);  // (2 + 4) / 2
  CHECK(even.min == 1.0);
  CHECK(even.max == 10.0);

  const auto one = preflight::summarize({7.5});
  CHECK(one.count == 1);
  CHECK(one.median == 7.5);

  const auto none = preflight::summarize({});
  CHECK(none.count == 0);
  CHECK(none.median == 0.0);
  CHECK(none.min == 0.0);
  CHECK(none.max == 0.0);
}
