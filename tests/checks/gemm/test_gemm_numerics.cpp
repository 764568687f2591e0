// A CPU model of what the gemm check's kernels compute, built only from the functions the
// kernels share (src/kernels/gemm_numerics.hpp) and the range and tolerance of gemm_math: the
// inputs, a float-accumulated product, the fp64 column-sum checksum and the digest. It shows
// that a healthy product passes bit for bit and which corruptions each detector sees.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "checks/gemm/gemm_math.hpp"
#include "kernels/gemm_numerics.hpp"

using preflight::GemmDtype;

namespace {

constexpr std::uint64_t kSeed = 0x5EEDF00D;

std::uint32_t bits_of(float v) {
  std::uint32_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

float from_bits(std::uint32_t b) {
  float v = 0;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

std::uint64_t bits_of(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// The float a bf16 conversion (round to nearest even) gives for v.
float to_bf16(float v) {
  std::uint32_t b = bits_of(v);
  b += 0x7FFFu + ((b >> 16) & 1u);
  return from_bits(b & 0xFFFF0000u);
}

// One column-major product C (m x n) = A (m x k) * B (k x n) with the check's inputs, its
// checksum references and the tolerance gemm_math gives for it.
struct Product {
  int m, n, k, range;
  std::vector<int> a, b;              // the inputs
  std::vector<float> c;               // float products, accumulated in float in order of l
  std::vector<std::int64_t> exact;    // the same in 64-bit integers
  std::vector<double> reference;      // ref_j = sum_l a_l B(l,j), a_l = sum_i A(i,l)
  std::vector<double> abs_reference;  // sum_l (sum_i |A(i,l)|) |B(l,j)|
  preflight::GemmTolerance tolerance;

  std::size_t at(int i, int j) const { return static_cast<std::size_t>(i) + std::size_t(j) * m; }
};

Product make_product(GemmDtype dtype, int m, int n, int k, int range, std::uint64_t seed = kSeed) {
  Product p{m, n, k, range, {}, {}, {}, {}, {}, {}, {}};
  p.a.resize(std::size_t(m) * k);
  p.b.resize(std::size_t(k) * n);
  for (std::size_t idx = 0; idx < p.a.size(); ++idx) {
    p.a[idx] = preflight::gemm_input_value(seed, preflight::kGemmMatrixA, idx, range);
  }
  for (std::size_t idx = 0; idx < p.b.size(); ++idx) {
    p.b[idx] = preflight::gemm_input_value(seed, preflight::kGemmMatrixB, idx, range);
  }
  p.c.assign(std::size_t(m) * n, 0.0f);
  p.exact.assign(std::size_t(m) * n, 0);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      float acc = 0.0f;
      std::int64_t sum = 0;
      for (int l = 0; l < k; ++l) {
        const int x = p.a[std::size_t(i) + std::size_t(l) * m];
        const int y = p.b[std::size_t(l) + std::size_t(j) * k];
        acc += static_cast<float>(x) * static_cast<float>(y);
        sum += std::int64_t{x} * y;
      }
      p.c[p.at(i, j)] = acc;
      p.exact[p.at(i, j)] = sum;
    }
  }
  std::vector<double> col_a(k, 0.0);
  std::vector<double> col_abs_a(k, 0.0);
  for (int l = 0; l < k; ++l) {
    for (int i = 0; i < m; ++i) {
      col_a[l] += p.a[std::size_t(i) + std::size_t(l) * m];
      col_abs_a[l] += std::abs(p.a[std::size_t(i) + std::size_t(l) * m]);
    }
  }
  p.reference.assign(n, 0.0);
  p.abs_reference.assign(n, 0.0);
  for (int j = 0; j < n; ++j) {
    for (int l = 0; l < k; ++l) {
      const int y = p.b[std::size_t(l) + std::size_t(j) * k];
      p.reference[j] += col_a[l] * y;
      p.abs_reference[j] += col_abs_a[l] * std::abs(y);
    }
  }
  p.tolerance = preflight::gemm_tolerance(dtype, m, k, range);
  return p;
}

double column_sum(const Product& p, const std::vector<float>& c, int j) {
  double s = 0.0;
  for (int i = 0; i < p.m; ++i) s += c[p.at(i, j)];
  return s;
}

// The columns the checksum rejects, as the verification kernel decides.
std::vector<int> bad_columns(const Product& p, const std::vector<float>& c) {
  std::vector<int> bad;
  for (int j = 0; j < p.n; ++j) {
    double abs_sum = 0.0;
    for (int i = 0; i < p.m; ++i) abs_sum += std::fabs(c[p.at(i, j)]);
    const double tol = preflight::gemm_checksum_tolerance(
        p.tolerance.output_roundoff, p.tolerance.accumulation_gamma, abs_sum, p.abs_reference[j]);
    if (!preflight::gemm_column_ok(column_sum(p, c, j), p.reference[j], tol)) bad.push_back(j);
  }
  return bad;
}

std::uint64_t digest(const std::vector<float>& c) {
  std::uint64_t d = 0;
  for (std::size_t idx = 0; idx < c.size(); ++idx)
    d += preflight::gemm_digest_term(idx, bits_of(c[idx]));
  return d;
}

}  // namespace

TEST_CASE("gemm: CPU reference product is exact and every column checks bit for bit") {
  const int m = 96, n = 80, k = 128;
  const int range = preflight::gemm_input_range(GemmDtype::bf16, m, k);
  // 2^22 / 128 = 32768 -> 181 (181^2 = 32761), below bf16's 255.
  REQUIRE(range == 181);
  REQUIRE(preflight::gemm_is_exact(GemmDtype::bf16, m, k, range));
  const Product p = make_product(GemmDtype::bf16, m, n, k, range);
  CHECK(p.tolerance.output_roundoff == 0.0);
  CHECK(p.tolerance.accumulation_gamma == 0.0);

  // Every input survives conversion to bf16 (while 257 would not: bf16 has 8 significant bits).
  for (int v : p.a) REQUIRE(to_bf16(static_cast<float>(v)) == static_cast<float>(v));
  for (int v : p.b) REQUIRE(to_bf16(static_cast<float>(v)) == static_cast<float>(v));
  CHECK(to_bf16(257.0f) != 257.0f);

  for (std::size_t idx = 0; idx < p.c.size(); ++idx) {
    INFO("element " << idx);
    REQUIRE(std::floor(p.c[idx]) == p.c[idx]);
    REQUIRE(static_cast<std::int64_t>(p.c[idx]) == p.exact[idx]);
  }
  for (int j = 0; j < n; ++j) {
    INFO("column " << j);
    CHECK(bits_of(column_sum(p, p.c, j)) == bits_of(p.reference[j]));
  }
  CHECK(bad_columns(p, p.c).empty());
  // The digest is a sum, so the order the GPU's threads add in does not matter.
  std::uint64_t reversed = 0;
  for (std::size_t idx = p.c.size(); idx-- > 0;) {
    reversed += preflight::gemm_digest_term(idx, bits_of(p.c[idx]));
  }
  CHECK(reversed == digest(p.c));
}

TEST_CASE("gemm: default flip bit per element") {
  CHECK(preflight::gemm_default_flip_bit(bits_of(0.0f), false) == 30);
  CHECK(preflight::gemm_default_flip_bit(bits_of(-0.0f), false) == 30);
  CHECK(preflight::gemm_default_flip_bit(bits_of(3.0f), false) == 22);
  CHECK(preflight::gemm_default_flip_bit(bits_of(-7.0f), false) == 22);
  CHECK(preflight::gemm_default_flip_bit(bits_of(0.0), true) == 62);
  CHECK(preflight::gemm_default_flip_bit(bits_of(1.0), true) == 51);
  // What the flips do: 0 becomes 2, and 3 = 1.1b * 2 loses its top mantissa bit, becoming 2.
  CHECK(from_bits(bits_of(0.0f) ^ (1u << 30)) == 2.0f);
  CHECK(from_bits(bits_of(3.0f) ^ (1u << 22)) == 2.0f);
  CHECK(from_bits(bits_of(2.0f) ^ (1u << 22)) == 3.0f);
}

TEST_CASE("gemm: a flipped bit fails exactly its column and changes the digest") {
  const int m = 96, n = 80, k = 128;
  const Product p =
      make_product(GemmDtype::bf16, m, n, k, preflight::gemm_input_range(GemmDtype::bf16, m, k));
  const std::uint64_t healthy = digest(p.c);
  const int row = 17, col = 33;
  const std::size_t idx = p.at(row, col);
  REQUIRE(p.c[idx] != 0.0f);

  SECTION("the default bit") {
    const int bit = preflight::gemm_default_flip_bit(bits_of(p.c[idx]), false);
    CHECK(bit == 22);
    std::vector<float> c = p.c;
    c[idx] = from_bits(bits_of(c[idx]) ^ (1u << bit));
    CHECK(bad_columns(p, c) == std::vector<int>{col});
    CHECK(digest(c) != healthy);
  }
  SECTION("any bit of a nonzero element") {
    // With a zero tolerance even the lowest mantissa bit moves the column sum.
    for (int bit = 0; bit < 32; ++bit) {
      INFO("bit " << bit);
      std::vector<float> c = p.c;
      c[idx] = from_bits(bits_of(c[idx]) ^ (1u << bit));
      CHECK(bad_columns(p, c) == std::vector<int>{col});
      CHECK(digest(c) != healthy);
    }
  }
}

TEST_CASE("gemm: a zero element gets its exponent flipped; its sign bit only the digest sees") {
  // Inputs in [-1, 1] make zero outputs common.
  const Product p = make_product(GemmDtype::bf16, 32, 16, 8, 1);
  const auto zero = std::find(p.c.begin(), p.c.end(), 0.0f);
  REQUIRE(zero != p.c.end());
  const auto idx = static_cast<std::size_t>(zero - p.c.begin());
  const int col = static_cast<int>(idx / 32);
  REQUIRE(bad_columns(p, p.c).empty());

  std::vector<float> c = p.c;
  const int bit = preflight::gemm_default_flip_bit(bits_of(c[idx]), false);
  REQUIRE(bit == 30);
  c[idx] = from_bits(bits_of(c[idx]) ^ (1u << bit));
  CHECK(c[idx] == 2.0f);
  CHECK(bad_columns(p, c) == std::vector<int>{col});

  // 0 -> -0 leaves every sum as it was: a limitation of the checksum the digest covers.
  std::vector<float> negated = p.c;
  negated[idx] = -0.0f;
  CHECK(bad_columns(p, negated).empty());
  CHECK(digest(negated) != digest(p.c));
}

TEST_CASE("gemm: swapped elements: the checksum misses a swap within a column, not the digest") {
  const int m = 96, n = 80, k = 128;
  const Product p =
      make_product(GemmDtype::bf16, m, n, k, preflight::gemm_input_range(GemmDtype::bf16, m, k));
  const std::uint64_t healthy = digest(p.c);

  SECTION("within one column") {
    const std::size_t x = p.at(3, 10), y = p.at(50, 10);
    REQUIRE(p.c[x] != p.c[y]);
    std::vector<float> c = p.c;
    std::swap(c[x], c[y]);
    CHECK(bad_columns(p, c).empty());  // the sum of the column is the same
    CHECK(digest(c) != healthy);
  }
  SECTION("across two columns") {
    const std::size_t x = p.at(3, 10), y = p.at(3, 60);
    REQUIRE(p.c[x] != p.c[y]);
    std::vector<float> c = p.c;
    std::swap(c[x], c[y]);
    CHECK(bad_columns(p, c) == std::vector<int>{10, 60});
    CHECK(digest(c) != healthy);
  }
}

TEST_CASE("gemm: NaN or Inf in an element fails its column") {
  const Product p = make_product(GemmDtype::bf16, 64, 24, 64,
                                 preflight::gemm_input_range(GemmDtype::bf16, 64, 64));
  for (float poison :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
        -std::numeric_limits<float>::infinity()}) {
    INFO("value " << poison);
    std::vector<float> c = p.c;
    c[p.at(5, 7)] = poison;
    CHECK(bad_columns(p, c) == std::vector<int>{7});
  }
  // NaN compares false against any tolerance; Inf exceeds any finite one.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double big = std::numeric_limits<double>::max();
  CHECK_FALSE(preflight::gemm_column_ok(nan, 0.0, big));
  CHECK_FALSE(preflight::gemm_column_ok(0.0, nan, big));
  CHECK_FALSE(preflight::gemm_column_ok(std::numeric_limits<double>::infinity(), 0.0, big));
  CHECK(preflight::gemm_column_ok(5.0, 3.0, 2.0));
  CHECK_FALSE(preflight::gemm_column_ok(5.0, 3.0, 1.9));
}

TEST_CASE("gemm: the input generator is deterministic and covers [-R, R]") {
  for (int range : {1, 3, 181, 4096}) {
    INFO("range " << range);
    const std::size_t samples = std::size_t(2 * range + 1) * 40;
    std::set<int> seen;
    for (std::size_t idx = 0; idx < samples; ++idx) {
      const int v = preflight::gemm_input_value(kSeed, preflight::kGemmMatrixA, idx, range);
      REQUIRE(v >= -range);
      REQUIRE(v <= range);
      REQUIRE(v == preflight::gemm_input_value(kSeed, preflight::kGemmMatrixA, idx, range));
      seen.insert(v);
    }
    CHECK(seen.count(-range) == 1);
    CHECK(seen.count(range) == 1);
    CHECK(seen.size() == std::size_t(2 * range + 1));
  }
  // Close to uniform: each of the 7 values of [-3, 3] within 10% of 10000 in 70000 draws.
  std::vector<int> counts(7, 0);
  for (std::uint64_t idx = 0; idx < 70000; ++idx) {
    ++counts[preflight::gemm_input_value(kSeed, preflight::kGemmMatrixB, idx, 3) + 3];
  }
  for (int count : counts) {
    CHECK(count > 9000);
    CHECK(count < 11000);
  }
}

TEST_CASE("gemm: the inputs differ between seeds and between A and B") {
  const auto draw = [](std::uint64_t seed, int matrix) {
    std::vector<int> v;
    for (std::uint64_t idx = 0; idx < 256; ++idx) {
      v.push_back(preflight::gemm_input_value(seed, matrix, idx, 16));
    }
    return v;
  };
  const auto a = draw(kSeed, preflight::kGemmMatrixA);
  CHECK(a == draw(kSeed, preflight::kGemmMatrixA));
  CHECK(a != draw(kSeed + 1, preflight::kGemmMatrixA));
  CHECK(a != draw(kSeed, preflight::kGemmMatrixB));
  // Not merely shifted: the next round's seed does not reuse this round's values one index on.
  const auto next = draw(kSeed + 1, preflight::kGemmMatrixA);
  CHECK(std::vector<int>(a.begin() + 1, a.end()) != std::vector<int>(next.begin(), next.end() - 1));
}

TEST_CASE("gemm: beyond the exact range float sums round and the tolerance admits them") {
  // fp16's largest integers with k = 4096: products (< 2^22) are exact in float, but partial
  // sums pass 2^24 and round. The column sums stay exact in fp64 (integers below 2^41), so the
  // only error is the float accumulation, which Higham's gamma_k bounds.
  const int m = 64, n = 32, k = 4096, range = 2047;
  REQUIRE_FALSE(preflight::gemm_is_exact(GemmDtype::fp16, m, k, range));
  const Product p = make_product(GemmDtype::fp16, m, n, k, range);

  std::size_t rounded = 0;
  for (std::size_t idx = 0; idx < p.c.size(); ++idx) {
    if (static_cast<double>(p.c[idx]) != static_cast<double>(p.exact[idx])) ++rounded;
  }
  CHECK(rounded > 0);
  // A bit-for-bit comparison would reject this healthy product.
  Product strict = p;
  strict.tolerance = {};
  CHECK_FALSE(bad_columns(strict, strict.c).empty());
  // The tolerance of gemm_tolerance accepts it.
  CHECK(p.tolerance.accumulation_gamma > 0.0);
  CHECK(bad_columns(p, p.c).empty());
}
