// The bandwidth checks' host arithmetic (src/checks/common/bandwidth_math.hpp) and the
// memory pattern words shared with the kernels (src/kernels/memory_patterns.hpp). Expected
// values are worked out by hand in the comments, not recomputed with the code under test.
#include <algorithm>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "checks/common/bandwidth_math.hpp"
#include "kernels/memory_patterns.hpp"
#include "model/byte_units.hpp"
#include "preflight/thresholds.hpp"
#include "support/builtin_thresholds.hpp"

using preflight::BadRange;
using preflight::BandwidthMatrix;
using preflight::ChunkMismatch;
using preflight::kMiB;
using preflight::MemoryPattern;
using preflight::PairClass;
using preflight::PairJudgement;

namespace {

// An n-GPU matrix with every off-diagonal cell measured at `value`, and full peer access.
struct UniformMatrix {
  BandwidthMatrix cells;
  std::vector<std::vector<bool>> access;
  UniformMatrix(int n, double value)
      : cells(n, std::vector<std::optional<double>>(n, value)),
        access(n, std::vector<bool>(n, true)) {
    for (int i = 0; i < n; ++i) cells[i][i] = std::nullopt;
  }
};

// Fail below 270, warn below 315: 0.6 and 0.7 of an H100 SXM's 450 GB/s.
std::vector<PairJudgement> classify(const UniformMatrix& m, double fail = 270, double warn = 315) {
  return preflight::classify_matrix(m.cells, m.access, fail, warn);
}

using Texts = std::vector<std::string>;

// "1->2 fail 100 < 270": one line per judgement, so a whole result compares at once.
Texts pairs(const std::vector<PairJudgement>& judgements) {
  static const char* const kNames[] = {"ok", "warn", "fail", "no_peer_access", "not_measured"};
  Texts out;
  for (const PairJudgement& j : judgements) {
    std::ostringstream text;
    text << j.from << "->" << j.to << ' ' << kNames[static_cast<int>(j.kind)];
    if (j.kind == PairClass::fail || j.kind == PairClass::warn) {
      text << ' ' << j.value << " < " << j.limit;
    } else if (j.kind == PairClass::no_peer_access) {
      text << ' ' << j.value;
    }
    out.push_back(text.str());
  }
  return out;
}

// "[40,44) 1": byte range and bad words of each merged range.
Texts ranges(const preflight::MergedRanges& merged) {
  Texts out;
  for (const BadRange& r : merged.ranges) {
    out.push_back("[" + std::to_string(r.begin) + "," + std::to_string(r.end) + ") " +
                  std::to_string(r.bad_words));
  }
  return out;
}

ChunkMismatch chunk(std::uint64_t number, std::uint64_t bad, std::uint64_t first,
                    std::uint64_t last) {
  return ChunkMismatch{number, bad, first, last};
}

std::uint32_t word(int pattern, std::uint64_t index, std::uint64_t seed = 1, int pass = 0) {
  return preflight::memory_pattern_word(pattern, index, seed, pass);
}

}  // namespace

TEST_CASE("bandwidth math: GB/s from bytes and milliseconds") {
  // 256 MiB = 268435456 bytes in 5 ms: 268435456 / 0.005 s = 53.687 GB/s (decimal).
  CHECK(preflight::gbps(256 * kMiB, 5.0) == Approx(53.6870912).epsilon(1e-12));
  CHECK(preflight::gbps(1'000'000'000, 1000.0) == Approx(1.0));
  CHECK(preflight::gbps(2'000'000, 0.5) == Approx(4.0));
  CHECK(preflight::gbps(0, 5.0) == 0.0);
  CHECK(preflight::gbps(256 * kMiB, 0.0) == 0.0);
  CHECK(preflight::gbps(256 * kMiB, -1.0) == 0.0);
  CHECK(preflight::gbps(256 * kMiB, std::nan("")) == 0.0);
}

TEST_CASE("bandwidth math: sample statistics") {
  struct Case {
    std::vector<double> samples;
    std::size_t count;
    double median, min, max;
  };
  const Case cases[] = {
      {{30.0, 10.0, 20.0}, 3, 20.0, 10.0, 30.0},        // odd: the middle value
      {{40.0, 10.0, 30.0, 20.0}, 4, 25.0, 10.0, 40.0},  // even: mean of the middle two
      {{7.5}, 1, 7.5, 7.5, 7.5},
      {{}, 0, 0.0, 0.0, 0.0},                        // empty: all zero
      {{std::nan(""), 5.0, 3.0}, 2, 4.0, 3.0, 5.0},  // NaN samples are left out
  };
  for (const Case& c : cases) {
    INFO(c.samples.size() << " samples");
    const auto s = preflight::bandwidth_stats(c.samples);
    CHECK(s.count == c.count);
    CHECK(s.median == c.median);
    CHECK(s.min == c.min);
    CHECK(s.max == c.max);
  }
}

TEST_CASE("bandwidth math: PCIe lane and link rates, link names") {
  // Lane: GT/s * code efficiency / 8 bits; link: lane * width, one direction.
  struct Row {
    int generation;
    double lane, x16, x8;
  };
  const Row rows[] = {
      {1, 0.25, 4.0, 2.0},                  // 2.5 * 8/10 / 8
      {2, 0.5, 8.0, 4.0},                   // 5 * 8/10 / 8
      {3, 0.984615, 15.753846, 7.876923},   // 8 * 128/130 / 8
      {4, 1.969231, 31.507692, 15.753846},  // 16 * 128/130 / 8
      {5, 3.938462, 63.015385, 31.507692},  // 32 * 128/130 / 8
      {6, 7.5625, 121.0, 60.5},             // 64 / 8 * 242/256
      // Unknown generations.
      {0, 0, 0, 0},
      {-1, 0, 0, 0},
      {7, 0, 0, 0},
      {100, 0, 0, 0},
  };
  for (const Row& row : rows) {
    INFO("Gen" << row.generation);
    CHECK(preflight::pcie_lane_gbps(row.generation) == Approx(row.lane).epsilon(1e-6));
    CHECK(preflight::pcie_link_gbps(row.generation, 16) == Approx(row.x16).epsilon(1e-6));
    CHECK(preflight::pcie_link_gbps(row.generation, 8) == Approx(row.x8).epsilon(1e-6));
    CHECK(preflight::pcie_link_gbps(row.generation, 0) == 0.0);  // unknown width
    CHECK(preflight::pcie_link_gbps(row.generation, -16) == 0.0);
  }
  CHECK(preflight::pcie_link_gbps(1, 1) == Approx(0.25));

  CHECK(preflight::pcie_link_name(5, 16) == "Gen5 x16");
  CHECK(preflight::pcie_link_name(4, 8) == "Gen4 x8");
  CHECK(preflight::pcie_link_name(0, 16) == "Gen? x16");
  CHECK(preflight::pcie_link_name(5, 0) == "Gen5 x?");
  CHECK(preflight::pcie_link_name(0, 0) == "Gen? x?");
}

TEST_CASE("bandwidth math: PCIe expectation") {
  SECTION("H100 SKU Gen5 x16 trained at Gen4 x16") {
    const auto e = preflight::pcie_expectation(5, 16, 5, 16, 4, 16, 0.6, 0.7);
    CHECK(e.expected_generation == 5);
    CHECK(e.expected_width == 16);
    CHECK(e.current_generation == 4);
    CHECK(e.current_width == 16);
    CHECK(e.expected_link_gbps == Approx(63.0).margin(0.05));     // 3.938462 * 16 = 63.015
    CHECK(e.fail_below_gbps == Approx(37.809231).epsilon(1e-6));  // 0.6 * 63.015
    CHECK(e.warn_below_gbps == Approx(44.110769).epsilon(1e-6));  // 0.7 * 63.015
    CHECK(e.degraded == "Gen5 x16 running Gen4 x16");
  }
  SECTION("expected link from the SKU, else the device's maximum; degraded text") {
    struct Case {
      int sku_gen, sku_width, max_gen, max_width, cur_gen, cur_width;
      int gen, width;  // expected
      double link_gbps, fail_gbps;
      const char* degraded;
    };
    const Case cases[] = {
        // Healthy: nothing degraded.
        {5, 16, 5, 16, 5, 16, 5, 16, 63.015385, 37.809231, ""},
        // The SKU wins over the device's maximum.
        {5, 16, 4, 8, 4, 8, 5, 16, 63.015385, 37.809231, "Gen5 x16 running Gen4 x8"},
        // No SKU: the device's maximum.
        {0, 0, 4, 16, 4, 16, 4, 16, 31.507692, 18.904615, ""},
        {0, 0, 5, 16, 3, 16, 5, 16, 63.015385, 37.809231, "Gen5 x16 running Gen3 x16"},
        // Only the width from the SKU: the generation still comes from the device.
        {0, 16, 4, 8, 4, 8, 4, 16, 31.507692, 18.904615, "Gen4 x16 running Gen4 x8"},
        // Unknown current link: no degraded text; a known part below is still reported.
        {5, 16, 5, 16, 0, 0, 5, 16, 63.015385, 37.809231, ""},
        {5, 16, 5, 16, 0, 8, 5, 16, 63.015385, 37.809231, "Gen5 x16 running Gen? x8"},
        {5, 16, 5, 16, 3, 0, 5, 16, 63.015385, 37.809231, "Gen5 x16 running Gen3 x?"},
        // Width x8 at full generation: still held to the expected x16 link.
        {5, 16, 5, 16, 5, 8, 5, 16, 63.015385, 37.809231, "Gen5 x16 running Gen5 x8"},
        // A link above the expectation is not degraded.
        {4, 16, 5, 16, 5, 16, 4, 16, 31.507692, 18.904615, ""},
        // Nothing known: no expectation at all.
        {0, 0, 0, 0, 4, 16, 0, 0, 0.0, 0.0, ""},
    };
    for (const Case& c : cases) {
      INFO("sku Gen" << c.sku_gen << " x" << c.sku_width << ", max Gen" << c.max_gen << " x"
                     << c.max_width << ", current Gen" << c.cur_gen << " x" << c.cur_width);
      const auto e = preflight::pcie_expectation(c.sku_gen, c.sku_width, c.max_gen, c.max_width,
                                                 c.cur_gen, c.cur_width, 0.6, 0.7);
      CHECK(e.expected_generation == c.gen);
      CHECK(e.expected_width == c.width);
      CHECK(e.current_generation == c.cur_gen);
      CHECK(e.current_width == c.cur_width);
      CHECK(e.expected_link_gbps == Approx(c.link_gbps));
      CHECK(e.fail_below_gbps == Approx(c.fail_gbps));
      CHECK(e.warn_below_gbps == Approx(c.link_gbps * 0.7));
      CHECK(e.degraded == c.degraded);
    }
  }
}

TEST_CASE("bandwidth math: PCIe expectation capped at what the path above carries") {
  // An H100 (SKU Gen5 x16) behind a Gen4 switch, its link at Gen4: held to Gen4, not degraded.
  auto e = preflight::pcie_expectation_on_path(5, 16, 5, 16, 4, 16, 4, 16, 0.6, 0.7);
  CHECK(e.path_limited);
  CHECK(e.expected_generation == 4);
  CHECK(e.expected_width == 16);
  CHECK(e.expected_link_gbps == Approx(31.507692));
  CHECK(e.fail_below_gbps == Approx(0.6 * 31.507692));
  CHECK(e.degraded.empty());
  // Trained below the path: still degraded, against the path's link.
  e = preflight::pcie_expectation_on_path(5, 16, 5, 16, 3, 16, 4, 16, 0.6, 0.7);
  CHECK(e.degraded == "Gen4 x16 running Gen3 x16");
  // A path as fast as the SKU's link, or not read: exactly pcie_expectation.
  for (int path : {5, 6, 0}) {
    e = preflight::pcie_expectation_on_path(5, 16, 5, 16, 4, 16, path, 16, 0.6, 0.7);
    CHECK_FALSE(e.path_limited);
    CHECK(e.expected_generation == 5);
    CHECK(e.degraded == "Gen5 x16 running Gen4 x16");
  }
  // A narrower path caps the width alone.
  e = preflight::pcie_expectation_on_path(5, 16, 5, 16, 5, 8, 0, 8, 0.6, 0.7);
  CHECK(e.path_limited);
  CHECK(e.expected_generation == 5);
  CHECK(e.expected_width == 8);
  CHECK(e.degraded.empty());
}

TEST_CASE("bandwidth math: a GPU's fair share of a shared PCIe uplink") {
  const double gen4 = preflight::pcie_link_gbps(4, 16);
  const double gen5 = preflight::pcie_link_gbps(5, 16);
  // DGX A100: two Gen4 GPUs behind one Gen4 x16 switch uplink get half of it each.
  CHECK(preflight::pcie_fair_share(gen4, gen4, 2) == Approx(gen4 / 2));
  // A switch per GPU (DGX H100): the GPU's own link.
  CHECK(preflight::pcie_fair_share(gen5, gen5, 1) == Approx(gen5));
  // Never more than the GPU's own link, however wide the uplink.
  CHECK(preflight::pcie_fair_share(gen4, gen5, 1) == Approx(gen4));
  CHECK(preflight::pcie_fair_share(gen4, gen5, 2) == Approx(gen4));
  // Unknown figures leave the other; both unknown: no expectation.
  CHECK(preflight::pcie_fair_share(0.0, gen4, 2) == Approx(gen4 / 2));
  CHECK(preflight::pcie_fair_share(gen4, 0.0, 2) == Approx(gen4));
  CHECK(preflight::pcie_fair_share(gen4, gen4, 0) == Approx(gen4));
  CHECK(preflight::pcie_fair_share(0.0, 0.0, 2) == 0.0);

  CHECK(preflight::pcie_uplink_capacity(gen4, {gen4, gen4}) == Approx(gen4));
  // A Gen5 uplink above one Gen4 GPU carries what that GPU's link does.
  CHECK(preflight::pcie_uplink_capacity(gen5, {gen4}) == Approx(gen4));
  CHECK(preflight::pcie_uplink_capacity(gen5, {gen4, gen4}) == Approx(gen5));
  CHECK(preflight::pcie_uplink_capacity(gen5, {gen4, 0.0}) == Approx(gen5));
  CHECK(preflight::pcie_uplink_capacity(gen5, {}) == Approx(gen5));
  CHECK(preflight::pcie_uplink_capacity(0.0, {gen4, gen4}) == 0.0);
}

TEST_CASE("bandwidth math: classify the NVLink matrix") {
  SECTION("4 GPUs all good") {
    CHECK(pairs(classify(UniformMatrix(4, 380))).empty());
  }
  SECTION("one slow pair fails with its value and limit") {
    UniformMatrix m(4, 380);
    m.cells[1][2] = 100.0;
    CHECK(pairs(classify(m)) == Texts{"1->2 fail 100 < 270"});
  }
  SECTION("warn band: at or above fail, below warn") {
    UniformMatrix m(4, 380);
    m.cells[2][3] = 300.0;
    m.cells[3][2] = 270.0;  // exactly the fail limit is not below it
    m.cells[0][1] = 315.0;  // exactly the warn limit is ok
    CHECK(pairs(classify(m)) == Texts{"2->3 warn 300 < 315", "3->2 warn 270 < 315"});
  }
  SECTION("no peer access, measured or not") {
    UniformMatrix m(4, 380);
    m.access[0][3] = false;
    m.access[3][0] = false;
    m.cells[3][0] = std::nullopt;
    // The value is kept where the pair was measured anyway.
    CHECK(pairs(classify(m)) == Texts{"0->3 no_peer_access 380", "3->0 no_peer_access 0"});
  }
  SECTION("not measured with access") {
    UniformMatrix m(4, 380);
    m.cells[2][1] = std::nullopt;
    m.cells[3].resize(2);  // a short row: [3][2] and [3][3] missing
    CHECK(pairs(classify(m)) == Texts{"2->1 not_measured", "3->2 not_measured"});
  }
  SECTION("the diagonal is ignored") {
    UniformMatrix m(4, 380);
    for (int i = 0; i < 4; ++i) {
      m.cells[i][i] = 1.0;
      m.access[i][i] = false;
    }
    CHECK(pairs(classify(m)).empty());
  }
  SECTION("row-major order") {
    UniformMatrix m(4, 380);
    m.cells[3][1] = 10.0;
    m.cells[0][2] = 300.0;
    m.access[2][0] = false;
    m.cells[1][3] = std::nullopt;
    m.cells[0][1] = 20.0;
    CHECK(pairs(classify(m)) == Texts{"0->1 fail 20 < 270", "0->2 warn 300 < 315",
                                      "1->3 not_measured", "2->0 no_peer_access 380",
                                      "3->1 fail 10 < 270"});
  }
  SECTION("a level of 0 is disabled") {
    UniformMatrix m(4, 380);
    m.cells[1][0] = 100.0;
    m.cells[2][0] = 300.0;
    CHECK(pairs(classify(m, 0, 315)) == Texts{"1->0 warn 100 < 315", "2->0 warn 300 < 315"});
    CHECK(pairs(classify(m, 270, 0)) == Texts{"1->0 fail 100 < 270"});
    CHECK(pairs(classify(m, 0, 0)).empty());
    // Access and measurement are still reported with both levels off.
    m.access[0][1] = false;
    CHECK(pairs(classify(m, 0, 0)) == Texts{"0->1 no_peer_access 380"});
  }
  SECTION("pairs missing from peer_access have no access") {
    const UniformMatrix m(3, 380);
    const auto j = preflight::classify_matrix(m.cells, {}, 270, 315);
    CHECK(j.size() == 6);  // 3 * 2 ordered pairs
    for (const auto& pair : j) CHECK(pair.kind == PairClass::no_peer_access);
  }
  SECTION("one GPU or none: no pairs") {
    CHECK(classify(UniformMatrix(1, 380)).empty());
    CHECK(classify(UniformMatrix(0, 380)).empty());
  }
}

TEST_CASE("bandwidth math: merge bad chunks into byte ranges") {
  using preflight::merge_bad_chunks;
  SECTION("nothing bad") {
    const auto m = merge_bad_chunks({}, 0);
    CHECK(ranges(m).empty());
    CHECK_FALSE(m.truncated);
    CHECK(m.bad_words == 0);
  }
  SECTION("one word") {
    const auto m = merge_bad_chunks({chunk(0, 1, 10, 10)}, 0);
    CHECK(ranges(m) == Texts{"[40,44) 1"});  // word 10 * 4 bytes
    CHECK(m.bad_words == 1);
    CHECK_FALSE(m.truncated);
  }
  SECTION("adjacent chunks merge with no gap allowed") {
    // Chunk 0 bad up to its last word 1023, chunk 1 bad from its first word 1024.
    const auto m = merge_bad_chunks({chunk(0, 5, 1000, 1023), chunk(1, 3, 1024, 1030)}, 0);
    CHECK(ranges(m) == Texts{"[4000,4124) 8"});  // (1030 + 1) * 4
    CHECK(m.bad_words == 8);
  }
  SECTION("the gap is the count of good words between") {
    // Good words 101..104 (4 of them) separate the two chunks.
    const std::vector<ChunkMismatch> chunks = {chunk(0, 2, 90, 100), chunk(1, 1, 105, 105)};
    CHECK(ranges(merge_bad_chunks(chunks, 4)) == Texts{"[360,424) 3"});
    const auto apart = merge_bad_chunks(chunks, 3);
    CHECK(ranges(apart) == Texts{"[360,404) 2", "[420,424) 1"});
    CHECK(apart.bad_words == 3);
  }
  SECTION("the same chunk from two patterns merges and the counts add up") {
    const auto m = merge_bad_chunks(
        {chunk(2, 3, 2050, 2060), chunk(2, 5, 2048, 2055), chunk(2, 1, 2052, 2052)}, 0);
    CHECK(ranges(m) == Texts{"[8192,8244) 9"});  // words 2048..2060
    CHECK(m.bad_words == 9);
  }
  SECTION("unsorted input gives ranges sorted by address") {
    const auto m = merge_bad_chunks(
        {chunk(9, 1, 9000, 9000), chunk(1, 2, 1000, 1001), chunk(5, 1, 5000, 5000)}, 16);
    CHECK(ranges(m) == Texts{"[4000,4008) 2", "[20000,20004) 1", "[36000,36004) 1"});
    CHECK(m.bad_words == 4);
  }
  SECTION("truncation keeps the lowest addresses and the total count") {
    std::vector<ChunkMismatch> chunks;
    for (std::uint64_t i = 70; i-- > 0;) chunks.push_back(chunk(i, 2, i * 1000, i * 1000 + 1));
    const auto m = merge_bad_chunks(chunks, 0);
    REQUIRE(m.ranges.size() == preflight::kMaxBadRanges);  // 64
    CHECK(m.truncated);
    CHECK(m.ranges.front().begin == 0);
    CHECK(m.ranges.back().begin == 63 * 1000 * 4);
    CHECK(m.bad_words == 140);  // all 70 chunks, 6 of them not in a range

    const auto two = merge_bad_chunks(chunks, 0, 2);
    CHECK(ranges(two) == Texts{"[0,8) 2", "[4000,4008) 2"});
    CHECK(two.truncated);
    CHECK(two.bad_words == 140);
  }
  SECTION("exactly max_ranges ranges are not truncated") {
    const auto m = merge_bad_chunks({chunk(0, 1, 0, 0), chunk(1, 1, 100, 100)}, 0, 2);
    CHECK(m.ranges.size() == 2);
    CHECK_FALSE(m.truncated);
  }
  SECTION("a gap as large as it gets does not overflow") {
    const std::uint64_t high = std::uint64_t{1} << 40;  // a 4 TiB region's last words
    const auto m = merge_bad_chunks({chunk(0, 1, high, high), chunk(1, 1, high + 2, high + 2)},
                                    std::numeric_limits<std::uint64_t>::max());
    REQUIRE(m.ranges.size() == 1);
    CHECK(m.ranges[0].begin == high * 4);
    CHECK(m.ranges[0].end == (high + 3) * 4);
  }
}

TEST_CASE("bandwidth math: describe a bad range") {
  CHECK(preflight::describe_range(BadRange{0x1f4000000, 0x1f4001000, 1}) ==
        "0x1f4000000-0x1f4000fff");
  CHECK(preflight::describe_range(BadRange{0, 4, 1}) == "0x0-0x3");
  CHECK(preflight::describe_range(BadRange{40, 44, 1}) == "0x28-0x2b");
  CHECK(preflight::describe_range(BadRange{8, 8, 0}) == "0x8-0x8");
}

TEST_CASE("bandwidth math: pattern test bytes") {
  constexpr std::uint64_t kAlign = 2 * kMiB;
  // 81559 MiB free * 0.75 = 61169.25 MiB, rounded down to 2 MiB: 61168 MiB.
  CHECK(preflight::pattern_test_bytes(81559 * kMiB, 0.75, 0) == 61168 * kMiB);
  // The same under a 2048 MiB cap (the quick profile).
  CHECK(preflight::pattern_test_bytes(81559 * kMiB, 0.75, 2048 * kMiB) == 2048 * kMiB);
  // A cap above the share changes nothing.
  CHECK(preflight::pattern_test_bytes(1000 * kMiB, 0.5, 2048 * kMiB) == 500 * kMiB);
  // 0.9 is inexact in binary: the result is the largest 2 MiB multiple not above the share.
  const std::uint64_t free = 80 * 1024 * kMiB + 12345;
  const std::uint64_t nine_tenths = preflight::pattern_test_bytes(free, 0.9, 0);
  CHECK(nine_tenths % kAlign == 0);
  CHECK(static_cast<double>(nine_tenths) <= static_cast<double>(free) * 0.9);
  CHECK(static_cast<double>(nine_tenths + kAlign) > static_cast<double>(free) * 0.9);
  // Less than one alignment unit, no share or a nonsense one: nothing.
  CHECK(preflight::pattern_test_bytes(kMiB, 0.9, 0) == 0);
  CHECK(preflight::pattern_test_bytes(1000 * kMiB, 0.0, 0) == 0);
  CHECK(preflight::pattern_test_bytes(1000 * kMiB, -0.5, 0) == 0);
  CHECK(preflight::pattern_test_bytes(1000 * kMiB, std::nan(""), 0) == 0);
  CHECK(preflight::pattern_test_bytes(0, 0.9, 0) == 0);
  // More than all free memory cannot be had.
  CHECK(preflight::pattern_test_bytes(100 * kMiB, 2.0, 0) == 100 * kMiB);
  // Other alignments, and none.
  CHECK(preflight::pattern_test_bytes(1000, 0.5, 0, 64) == 448);
  CHECK(preflight::pattern_test_bytes(1001, 0.5, 0, 0) == 500);
}

TEST_CASE("bandwidth math: pattern names and ids") {
  struct Row {
    MemoryPattern pattern;
    const char* name;
    int id;  // memory_patterns.hpp
  };
  const Row rows[] = {
      {MemoryPattern::zeros, "zeros", preflight::kPatternZeros},
      {MemoryPattern::ones, "ones", preflight::kPatternOnes},
      {MemoryPattern::checkerboard, "checkerboard", preflight::kPatternCheckerboard},
      {MemoryPattern::address, "address", preflight::kPatternAddress},
      {MemoryPattern::inverse_address, "inverse-address", preflight::kPatternInverseAddress},
      {MemoryPattern::random, "random", preflight::kPatternRandom},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    CHECK(preflight::to_string(row.pattern) == row.name);
    CHECK(static_cast<int>(row.pattern) == row.id);
  }
}

TEST_CASE("bandwidth math: memory pattern words") {
  using namespace preflight;
  const std::vector<std::uint64_t> indices = {
      0, 1, 2, 12345, 0xFFFFFFFFu, std::uint64_t{1} << 32, (std::uint64_t{7} << 32) + 99};

  SECTION("zeros and ones are constant") {
    for (std::uint64_t i : indices) {
      INFO(i);
      for (int pass : {0, 1}) {
        CHECK(word(kPatternZeros, i, 3, pass) == 0u);
        CHECK(word(kPatternOnes, i, 3, pass) == 0xFFFFFFFFu);
      }
    }
  }
  SECTION("checkerboard alternates per word and flips with the pass") {
    CHECK(word(kPatternCheckerboard, 0) == 0x55555555u);
    CHECK(word(kPatternCheckerboard, 1) == 0xAAAAAAAAu);
    CHECK(word(kPatternCheckerboard, 2) == 0x55555555u);
    CHECK(word(kPatternCheckerboard, 0, 1, 1) == 0xAAAAAAAAu);
    CHECK(word(kPatternCheckerboard, 1, 1, 1) == 0x55555555u);
    for (std::uint64_t i = 0; i < 1000; ++i) {
      INFO(i);
      const std::uint32_t w = word(kPatternCheckerboard, i);
      // Neighbouring bits differ within the word, neighbouring words differ in every bit, and
      // the other pass writes every bit the other way.
      CHECK(((w ^ (w >> 1)) & 0x7FFFFFFFu) == 0x7FFFFFFFu);
      CHECK((w ^ word(kPatternCheckerboard, i + 1)) == 0xFFFFFFFFu);
      CHECK((w ^ word(kPatternCheckerboard, i, 1, 1)) == 0xFFFFFFFFu);
      CHECK(word(kPatternCheckerboard, i, 99) == w);  // the seed plays no part
    }
  }
  SECTION("address is the word's index below 2^32; inverse is its complement") {
    for (std::uint64_t i : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{12345},
                            std::uint64_t{0x80000000u}, std::uint64_t{0xFFFFFFFFu}}) {
      INFO(i);
      CHECK(word(kPatternAddress, i) == static_cast<std::uint32_t>(i));
      CHECK(word(kPatternInverseAddress, i) == static_cast<std::uint32_t>(~i));
    }
    for (std::uint64_t i : indices) {
      INFO(i);
      CHECK(word(kPatternInverseAddress, i, 5, 1) == ~word(kPatternAddress, i, 5, 1));
      CHECK(word(kPatternAddress, i, 5) == word(kPatternAddress, i, 6));  // no seed
    }
    // Above 4 Gi words the index is folded, so words 4 Gi apart still differ.
    for (std::uint64_t i : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{777}}) {
      INFO(i);
      CHECK(word(kPatternAddress, i + (std::uint64_t{1} << 32)) != word(kPatternAddress, i));
    }
  }
  SECTION("random is deterministic per seed and differs between seeds and neighbours") {
    constexpr std::uint64_t kWords = 65536;
    for (std::uint64_t seed : {std::uint64_t{1}, std::uint64_t{0xDEADBEEFCAFEull}}) {
      INFO(seed);
      std::vector<std::uint32_t> words(kWords);
      std::uint64_t bits_set = 0;
      std::uint64_t neighbour_bits = 0;
      std::uint64_t same_as_other_seed = 0;
      for (std::uint64_t i = 0; i < kWords; ++i) {
        words[i] = word(kPatternRandom, i, seed);
        bits_set += std::bitset<32>(words[i]).count();
        if (i > 0) neighbour_bits += std::bitset<32>(words[i] ^ words[i - 1]).count();
        if (words[i] == word(kPatternRandom, i, seed + 1)) ++same_as_other_seed;
      }
      CHECK(word(kPatternRandom, 12345, seed) == words[12345]);
      CHECK(word(kPatternRandom, 12345, seed, 1) == words[12345]);  // the pass plays no part
      // About one equal word in 2^32 for unrelated values: none in 65536.
      CHECK(same_as_other_seed == 0);
      // Unrelated neighbours differ in about half their bits, and half of all bits are set.
      CHECK(static_cast<double>(neighbour_bits) / (kWords - 1) == Approx(16.0).margin(0.5));
      CHECK(static_cast<double>(bits_set) / (kWords * 32) == Approx(0.5).margin(0.01));
      // A bijection of the low index for a fixed seed: no two of the words are equal.
      std::sort(words.begin(), words.end());
      CHECK(std::adjacent_find(words.begin(), words.end()) == words.end());
    }
    // The seed's high half and the index's high half count too.
    CHECK(word(kPatternRandom, 5, 1) != word(kPatternRandom, 5, 1 + (std::uint64_t{1} << 32)));
    CHECK(word(kPatternRandom, 5, 1) != word(kPatternRandom, 5 + (std::uint64_t{1} << 32), 1));
  }
}

TEST_CASE("bandwidth math: SKU thresholds give the bandwidth expectations") {
  using preflight::Thresholds;
  const Thresholds generic = preflight::test::builtin_thresholds(nullptr, "no GPU");
  const std::pair<const char*, double> generic_values[] = {
      {"pcie.fail_fraction", 0.6},   {"pcie.warn_fraction", 0.7},   {"nvlink.expected_gbps", 0},
      {"nvlink.fail_fraction", 0.6}, {"nvlink.warn_fraction", 0.7}, {"hbm.peak_gbps", 0},
      {"hbm.fail_fraction", 0.6},    {"hbm.warn_fraction", 0.7},    {"hbm.quick_test_mib", 2048},
      {"hbm.test_fraction", 0.9},
  };
  for (const auto& [key, value] : generic_values) {
    INFO(key);
    CHECK(generic.get(key) == value);
  }

  struct Expected {
    const char* id;
    double nvlink, hbm;
  };
  const Expected expected[] = {
      {"a100-sxm4-40gb", 300, 1555}, {"a100-sxm4-80gb", 300, 2039}, {"a100-pcie-40gb", 0, 1555},
      {"a100-pcie-80gb", 0, 1935},   {"h100-sxm5-80gb", 450, 3350}, {"h100-pcie-80gb", 0, 2000},
      {"h200-sxm-141gb", 450, 4800}, {"h200-nvl-141gb", 0, 4800},
  };
  for (const Expected& e : expected) {
    INFO(e.id);
    const auto* sku = preflight::find_sku(e.id);
    REQUIRE(sku != nullptr);
    const Thresholds t = preflight::test::builtin_thresholds(sku, "--sku");
    CHECK(t.get("nvlink.expected_gbps") == e.nvlink);
    CHECK(t.get("hbm.peak_gbps") == e.hbm);
    CHECK(t.get("pcie.fail_fraction") == 0.6);  // policy: the same for every SKU
    CHECK(t.get("hbm.test_fraction") == 0.9);
  }
}

TEST_CASE("bandwidth math: the NVLink bandwidth a pair should have") {
  preflight::GpuReading a;
  a.pci_bus_id = "00000000:1B:00.0";
  preflight::GpuReading b;
  b.pci_bus_id = "00000000:43:00.0";
  // Topology not read: the SKU's figure.
  auto e = preflight::nvlink_pair_expectation(450, 18, a, b);
  CHECK(e.gbps == 450);
  CHECK_THAT(e.basis, Catch::Contains("topology not read"));
  // No NVLink on the SKU: nothing expected, whatever the topology.
  CHECK(preflight::nvlink_pair_expectation(0, 0, a, b).gbps == 0);
  // NVSwitch on both ends.
  a.nvlink_switch_links = 18;
  b.nvlink_switch_links = 18;
  e = preflight::nvlink_pair_expectation(450, 18, a, b);
  CHECK(e.gbps == 450);
  CHECK(e.basis == "NVSwitch");
  // Direct links: the lower of the two ends' counts.
  a.nvlink_switch_links = 0;
  b.nvlink_switch_links = 0;
  a.nvlink_peer_bus_ids.assign(6, b.pci_bus_id);
  b.nvlink_peer_bus_ids.assign(5, a.pci_bus_id);
  e = preflight::nvlink_pair_expectation(450, 18, a, b);
  CHECK(e.direct_links == 5);
  CHECK(e.gbps == Approx(125.0));
  CHECK(e.basis == "5 direct links");
  // No link between them: peer copies go over PCIe and are not held to NVLink.
  b.nvlink_peer_bus_ids.clear();
  e = preflight::nvlink_pair_expectation(450, 18, a, b);
  CHECK(e.gbps == 0);
  CHECK(e.basis == "no NVLink between them");
}
