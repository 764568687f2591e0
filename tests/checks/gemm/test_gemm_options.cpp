// The gemm check's options: defaults per profile, parsing, every refusal (one line naming the
// flag), the time budget and the matrix size chosen per GPU.
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "checks/gemm/gemm_options.hpp"
#include "model/byte_units.hpp"
#include "preflight/errors.hpp"

using preflight::CheckOptions;
using preflight::GemmDetector;
using preflight::GemmDtype;
using preflight::GemmSettings;
using preflight::InvalidInput;
using preflight::kGiB;
using preflight::Profile;

namespace {

GemmSettings parse(const std::vector<std::pair<std::string, std::string>>& flags,
                   Profile profile = Profile::quick) {
  CheckOptions options;
  for (const auto& [flag, value] : flags) options.set(flag, value);
  return preflight::parse_gemm_settings(profile, options);
}

// The message parse throws ("" when it does not throw).
std::string error_of(const std::string& flag, const std::string& value) {
  try {
    parse({{flag, value}});
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("gemm: defaults per profile") {
  CHECK(preflight::default_product_seconds(Profile::quick) == 3.0);
  CHECK(preflight::default_product_seconds(Profile::standard) == 60.0);
  CHECK(preflight::default_product_seconds(Profile::burnin) == 600.0);
  for (Profile profile : preflight::kAllProfiles) {
    INFO(preflight::to_string(profile));
    const GemmSettings s = parse({}, profile);
    CHECK(s.product_seconds == preflight::default_product_seconds(profile));
    CHECK_FALSE(s.product_seconds_given);
    CHECK(s.dtypes == std::vector<GemmDtype>{GemmDtype::bf16});
    CHECK_FALSE(s.size.has_value());
    CHECK(s.memory_limit_bytes == std::size_t{6144} << 20);
    CHECK(s.detectors.size() == 4);
    for (GemmDetector d : preflight::kAllGemmDetectors) CHECK(s.enabled(d));
  }
  // Other checks' options are not the gemm check's business.
  CHECK(parse({{"--nccl-bytes", "whatever"}}).dtypes.size() == 1);
}

TEST_CASE("gemm: option specs for --help") {
  const auto specs = preflight::gemm_option_specs();
  REQUIRE(specs.size() == 5);
  const std::vector<std::string> flags = {"--gemm-dtypes", "--gemm-seconds", "--gemm-size",
                                          "--gemm-memory-mib", "--gemm-detectors"};
  for (std::size_t i = 0; i < specs.size(); ++i) {
    INFO(specs[i].flag);
    CHECK(specs[i].flag == flags[i]);
    CHECK_FALSE(specs[i].value_name.empty());
    CHECK_FALSE(specs[i].description.empty());
    CHECK(specs[i].description.find('\n') == std::string::npos);
  }
  // The per-profile defaults are stated where an admin reads them.
  CHECK_THAT(specs[1].description, Catch::Contains("quick 3") && Catch::Contains("standard 60") &&
                                       Catch::Contains("burnin 600"));
}

TEST_CASE("gemm: detector names") {
  CHECK(preflight::to_string(GemmDetector::nan_inf) == "nan");
  CHECK(preflight::to_string(GemmDetector::checksum) == "checksum");
  CHECK(preflight::to_string(GemmDetector::repeatability) == "repeat");
  CHECK(preflight::to_string(GemmDetector::consensus) == "consensus");
}

TEST_CASE("gemm: parsing each option") {
  SECTION("dtypes, in the order given") {
    const auto s = parse({{"--gemm-dtypes", "fp64,bf16,tf32"}});
    CHECK(s.dtypes == std::vector<GemmDtype>{GemmDtype::fp64, GemmDtype::bf16, GemmDtype::tf32});
    CHECK(parse({{"--gemm-dtypes", "bf16,fp16,tf32,fp32,fp64"}}).dtypes.size() == 5);
    CHECK(parse({{"--gemm-dtypes", "fp16, fp32"}}).dtypes ==
          std::vector<GemmDtype>{GemmDtype::fp16, GemmDtype::fp32});
  }
  SECTION("seconds") {
    CHECK(parse({{"--gemm-seconds", "30"}}, Profile::burnin).product_seconds == 30.0);
    CHECK(parse({{"--gemm-seconds", "30"}}).product_seconds_given);
    CHECK(parse({{"--gemm-seconds", "2.5"}}).product_seconds == 2.5);
    CHECK(parse({{"--gemm-seconds", "1"}}).product_seconds == 1.0);
    CHECK(parse({{"--gemm-seconds", "604800"}}).product_seconds == 604800.0);
  }
  SECTION("size") {
    CHECK(parse({{"--gemm-size", "8192"}}).size == 8192);
    CHECK(parse({{"--gemm-size", "1024"}}).size == 1024);
    CHECK(parse({{"--gemm-size", "4352"}}).size == 4352);  // 17 * 256
  }
  SECTION("memory") {
    CHECK(parse({{"--gemm-memory-mib", "256"}}).memory_limit_bytes == std::size_t{256} << 20);
    CHECK(parse({{"--gemm-memory-mib", "40000"}}).memory_limit_bytes == std::size_t{40000} << 20);
    CHECK(parse({{"--gemm-memory-mib", "1048576"}}).memory_limit_bytes == std::size_t{1} << 40);
  }
  SECTION("detectors") {
    const auto s = parse({{"--gemm-detectors", "checksum,nan"}});
    CHECK(s.detectors == std::vector<GemmDetector>{GemmDetector::checksum, GemmDetector::nan_inf});
    CHECK(s.enabled(GemmDetector::checksum));
    CHECK(s.enabled(GemmDetector::nan_inf));
    CHECK_FALSE(s.enabled(GemmDetector::repeatability));
    CHECK_FALSE(s.enabled(GemmDetector::consensus));
    CHECK(parse({{"--gemm-detectors", "repeat,consensus"}}).detectors ==
          std::vector<GemmDetector>{GemmDetector::repeatability, GemmDetector::consensus});
  }
  SECTION("all together") {
    const auto s = parse({{"--gemm-dtypes", "fp32"},
                          {"--gemm-seconds", "12"},
                          {"--gemm-size", "4096"},
                          {"--gemm-memory-mib", "1024"},
                          {"--gemm-detectors", "consensus"}},
                         Profile::standard);
    CHECK(s.dtypes == std::vector<GemmDtype>{GemmDtype::fp32});
    CHECK(s.product_seconds == 12.0);
    CHECK(s.size == 4096);
    CHECK(s.memory_limit_bytes == std::size_t{1024} << 20);
    CHECK(s.detectors == std::vector<GemmDetector>{GemmDetector::consensus});
  }
}

TEST_CASE("gemm: bad option values are refused with one line naming the flag") {
  struct Bad {
    std::string flag, value, says;
  };
  const Bad cases[] = {
      {"--gemm-dtypes", "", "empty list"},
      {"--gemm-dtypes", "int8", "unknown dtype 'int8'"},
      {"--gemm-dtypes", "BF16", "unknown dtype"},
      {"--gemm-dtypes", "bf16,bf16", "twice"},
      {"--gemm-dtypes", "bf16,", "empty item"},
      {"--gemm-dtypes", ",fp16", "empty item"},
      {"--gemm-seconds", "", "not a number"},
      {"--gemm-seconds", "abc", "not a number"},
      {"--gemm-seconds", "5s", "not a number"},
      {"--gemm-seconds", "nan", "not a number"},
      {"--gemm-seconds", "inf", "outside"},
      {"--gemm-seconds", "0.5", "outside"},
      {"--gemm-seconds", "0", "outside"},
      {"--gemm-seconds", "-4", "outside"},
      {"--gemm-seconds", "604801", "outside"},
      {"--gemm-seconds", "1e400", "outside"},
      {"--gemm-size", "", "not a whole number"},
      {"--gemm-size", "8192.5", "not a whole number"},
      {"--gemm-size", "8k", "not a whole number"},
      {"--gemm-size", "1000", "outside"},
      {"--gemm-size", "65792", "outside"},
      {"--gemm-size", "-8192", "outside"},
      {"--gemm-size", "99999999999999999999999", "outside"},
      {"--gemm-size", "8000", "not a multiple of 256"},
      {"--gemm-memory-mib", "255", "outside"},
      {"--gemm-memory-mib", "1048577", "outside"},
      {"--gemm-memory-mib", "6 GiB", "not a whole number"},
      {"--gemm-detectors", "", "empty list"},
      {"--gemm-detectors", "ecc", "unknown detector 'ecc'"},
      {"--gemm-detectors", "nan,checksum,nan", "twice"},
  };
  for (const Bad& c : cases) {
    INFO(c.flag << " '" << c.value << "'");
    const std::string message = error_of(c.flag, c.value);
    CHECK_THAT(message, Catch::StartsWith(c.flag + ": ") && Catch::Contains(c.says));
    CHECK(message.find('\n') == std::string::npos);
  }
  // A control character in the value does not break the line.
  const std::string message = error_of("--gemm-dtypes", "bf16\nfp16");
  CHECK_THAT(message, Catch::Contains("\\x0a"));
  CHECK(message.find('\n') == std::string::npos);
}

TEST_CASE("gemm: a forced size must fit the memory limit for every dtype") {
  // fp64 at 16384 needs 6 GiB for A, B and C alone: above the default 6144 MiB.
  CHECK_THROWS_WITH(parse({{"--gemm-dtypes", "bf16,fp64"}, {"--gemm-size", "16384"}}),
                    Catch::StartsWith("--gemm-size: ") && Catch::Contains("fp64") &&
                        Catch::Contains("--gemm-memory-mib"));
  CHECK_NOTHROW(parse({{"--gemm-dtypes", "bf16"}, {"--gemm-size", "16384"}}));
  CHECK_NOTHROW(
      parse({{"--gemm-dtypes", "fp64"}, {"--gemm-size", "16384"}, {"--gemm-memory-mib", "7000"}}));
  // bf16 4096: 32 + 32 + 64 MiB plus 32 MiB of workspace and the vectors: above 160 MiB, so
  // above a 256 MiB limit only from 6144 on.
  CHECK_NOTHROW(parse({{"--gemm-size", "4096"}, {"--gemm-memory-mib", "256"}}));
  CHECK_THROWS_WITH(parse({{"--gemm-size", "6144"}, {"--gemm-memory-mib", "256"}}),
                    Catch::StartsWith("--gemm-size: "));
}

TEST_CASE("gemm: time budget") {
  GemmSettings s;                                                // quick: 3 s of bf16
  CHECK(preflight::gemm_budget(s) == std::chrono::seconds(28));  // 3 + 20 + 5
  s.dtypes = {GemmDtype::bf16, GemmDtype::fp64};
  s.product_seconds = 60;
  CHECK(preflight::gemm_budget(s) == std::chrono::seconds(150));  // 120 + 20 + 10
  s.dtypes = {GemmDtype::bf16};
  s.product_seconds = 2.25;
  CHECK(preflight::gemm_budget(s) == std::chrono::seconds(28));  // 27.25 rounded up
  // Three dtypes: 3.3 + 20 + 15 = 38.3 -> 39.
  s.dtypes = {GemmDtype::bf16, GemmDtype::fp16, GemmDtype::tf32};
  s.product_seconds = 1.1;
  CHECK(preflight::gemm_budget(s) == std::chrono::seconds(39));
  // burnin with all five dtypes: 3000 + 20 + 25.
  s.dtypes = {std::begin(preflight::kAllGemmDtypes), std::end(preflight::kAllGemmDtypes)};
  s.product_seconds = 600;
  CHECK(preflight::gemm_budget(s) == std::chrono::seconds(3045));
}

TEST_CASE("gemm: matrix size per GPU") {
  const GemmSettings defaults;
  const std::uint64_t h100 = 80 * kGiB;
  // bf16 16384 needs about 2 GiB + 32 MiB: fits 6144 MiB.
  CHECK(preflight::choose_gemm_size(GemmDtype::bf16, defaults, h100) == 16384);
  CHECK(preflight::choose_gemm_size(GemmDtype::fp32, defaults, h100) == 16384);
  // fp64 16384 needs over 6 GiB; 12288 needs 3.375 GiB.
  CHECK(preflight::choose_gemm_size(GemmDtype::fp64, defaults, h100) == 12288);
  // Unknown GPU memory: the limit alone.
  CHECK(preflight::choose_gemm_size(GemmDtype::bf16, defaults, 0) == 16384);

  // Half of a 4 GiB GPU is 2 GiB, under bf16 16384's 2 GiB + 32 MiB.
  CHECK(preflight::choose_gemm_size(GemmDtype::bf16, defaults, 4 * kGiB) == 12288);
  // With a large limit the GPU's half decides: 16384 fp64 on 80 GiB, 12288 on 8 GiB.
  GemmSettings roomy;
  roomy.memory_limit_bytes = std::size_t{65536} << 20;
  CHECK(preflight::choose_gemm_size(GemmDtype::fp64, roomy, h100) == 16384);
  CHECK(preflight::choose_gemm_size(GemmDtype::fp64, roomy, 8 * kGiB) == 12288);

  // A forced size is used as given.
  GemmSettings forced;
  forced.size = 5120;
  CHECK(preflight::choose_gemm_size(GemmDtype::fp64, forced, h100) == 5120);
  CHECK(preflight::choose_gemm_size(GemmDtype::bf16, forced, 4 * kGiB) == 5120);

  // Nothing fits: 4096 bf16 needs over 160 MiB.
  GemmSettings tiny;
  tiny.memory_limit_bytes = std::size_t{100} << 20;
  CHECK_FALSE(preflight::choose_gemm_size(GemmDtype::bf16, tiny, h100).has_value());
  CHECK_FALSE(preflight::choose_gemm_size(GemmDtype::bf16, defaults, 256u << 20).has_value());
  // 4096 fp64 (384 MiB + 32 MiB) is above the smallest limit --gemm-memory-mib allows.
  const GemmSettings smallest = parse({{"--gemm-memory-mib", "256"}});
  CHECK_FALSE(preflight::choose_gemm_size(GemmDtype::fp64, smallest, h100).has_value());
  CHECK(preflight::choose_gemm_size(GemmDtype::bf16, smallest, h100) == 4096);
}
