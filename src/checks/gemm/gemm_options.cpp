// The gemm check's options: parsing and validation (every bad value is one InvalidInput line
// naming the flag), defaults per profile, the time budget and the matrix size per GPU.
#include "checks/gemm/gemm_options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "checks/gemm/gemm_math.hpp"
#include "model/text_format.hpp"
#include "preflight/errors.hpp"

namespace preflight {
namespace {

constexpr std::string_view kDtypesFlag = "--gemm-dtypes";
constexpr std::string_view kSecondsFlag = "--gemm-seconds";
constexpr std::string_view kSizeFlag = "--gemm-size";
constexpr std::string_view kMemoryFlag = "--gemm-memory-mib";
constexpr std::string_view kDetectorsFlag = "--gemm-detectors";

constexpr double kMinSeconds = 1.0;
constexpr double kMaxSeconds = 604800.0;  // a week: anything longer is a typing mistake
constexpr int kMinSize = 1024;
constexpr int kMaxSize = 65536;
constexpr int kSizeStep = 256;  // cuBLAS's fastest tiles divide it
constexpr long long kMinMemoryMib = 256;
constexpr long long kMaxMemoryMib = 1048576;  // 1 TiB

// The budget's (profile membership's) setup, warm-up and drain; the time model's own figures are
// in gemm_plan.cpp.
constexpr double kFixedOverheadSeconds = 20.0;
constexpr double kOverheadSecondsPerDtype = 5.0;

constexpr int kCandidateSizes[] = {16384, 12288, 8192, 6144, 4096};

// User text echoed in an error: control characters escaped so the message stays one line,
// and long values cut.
std::string shown(std::string_view text) {
  constexpr std::size_t kMaxShown = 40;
  std::string out = "'";
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (i == kMaxShown) {
      out += "...";
      break;
    }
    append_printable(out, text[i]);
  }
  return out + "'";
}

[[noreturn]] void bad_option(std::string_view flag, const std::string& problem) {
  throw InvalidInput(std::string(flag) + ": " + problem);
}

std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

// A comma-separated list of names, each mapped by `parse`; empty, unknown and repeated items
// are refused. `known` lists the accepted names for the message.
template <typename T, typename Parse>
std::vector<T> parse_list(std::string_view flag, std::string_view text, std::string_view what,
                          std::string_view known, Parse parse) {
  std::vector<T> out;
  if (trim(text).empty())
    bad_option(flag, "empty list (expected one or more of " + std::string(known) + ")");
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item =
        trim(text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    if (item.empty()) bad_option(flag, "empty item in " + shown(text));
    const std::optional<T> value = parse(item);
    if (!value) {
      bad_option(flag, "unknown " + std::string(what) + " " + shown(item) + " (expected " +
                           std::string(known) + ")");
    }
    if (std::find(out.begin(), out.end(), *value) != out.end()) {
      bad_option(flag, std::string(what) + " " + shown(item) + " is given twice");
    }
    out.push_back(*value);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::optional<GemmDetector> parse_detector(std::string_view text) {
  for (GemmDetector d : kAllGemmDetectors) {
    if (to_string(d) == text) return d;
  }
  return std::nullopt;
}

// A whole number in [lo, hi]: decimal digits (no '+', spaces, fraction or exponent).
long long parse_integer(std::string_view flag, std::string_view text, long long lo, long long hi) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::invalid_argument || ptr != end) {
    bad_option(flag, shown(text) + " is not a whole number");
  }
  if (ec == std::errc::result_out_of_range || v < lo || v > hi) {
    bad_option(flag, shown(text) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return v;
}

double parse_seconds(std::string_view text) {
  double v = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  // from_chars accepts "inf" and "nan"; neither is a duration.
  if (text.empty() || ec == std::errc::invalid_argument || ptr != end || std::isnan(v)) {
    bad_option(kSecondsFlag, shown(text) + " is not a number");
  }
  if (ec == std::errc::result_out_of_range || !(v >= kMinSeconds && v <= kMaxSeconds)) {
    bad_option(kSecondsFlag, shown(text) + " is outside 1..604800 seconds");
  }
  return v;
}

std::string mib_text(std::size_t bytes) {
  return std::to_string((bytes + (std::size_t{1} << 20) - 1) >> 20) + " MiB";
}

// The cuBLAS workspace each job allocates (GemmJob's default).
std::size_t workspace_bytes() {
  return GemmJob{}.workspace_bytes;
}

}  // namespace

std::string_view to_string(GemmDetector detector) {
  switch (detector) {
    case GemmDetector::nan_inf:
      return "nan";
    case GemmDetector::checksum:
      return "checksum";
    case GemmDetector::repeatability:
      return "repeat";
    case GemmDetector::consensus:
      return "consensus";
  }
  return "nan";
}

bool GemmSettings::enabled(GemmDetector d) const {
  return std::find(detectors.begin(), detectors.end(), d) != detectors.end();
}

double default_product_seconds(Profile profile) {
  switch (profile) {
    case Profile::quick:
      // About 6 s for the whole check on one GPU (docs/plan.md, quick's targets).
      return 3.0;
    case Profile::standard:
      return 60.0;
    case Profile::burnin:
      return 600.0;
  }
  return 3.0;
}

std::vector<CheckOptionSpec> gemm_option_specs() {
  return {
      {std::string(kDtypesFlag), "LIST",
       "gemm: input types to test, comma-separated from bf16, fp16, tf32, fp32, fp64 "
       "(default bf16)"},
      {std::string(kSecondsFlag), "S",
       "gemm: seconds of matrix products per GPU and per type (default: quick 3, standard 60, "
       "burnin 600; less when --timeout does not allow them)"},
      {std::string(kSizeFlag), "N",
       "gemm: matrix size m = n = k, a multiple of 256 in 1024..65536 (default: the largest of "
       "16384..4096 that fits the memory limit and half the GPU's memory)"},
      {std::string(kMemoryFlag), "MIB",
       "gemm: most GPU memory the check may allocate per GPU, 256..1048576 (default 6144)"},
      {std::string(kDetectorsFlag), "LIST",
       "gemm: fault detectors to use, comma-separated from nan, checksum, repeat, consensus "
       "(default: all)"},
  };
}

GemmSettings parse_gemm_settings(Profile profile, const CheckOptions& options) {
  GemmSettings s;
  s.product_seconds = default_product_seconds(profile);

  if (const std::string* v = options.find(kDtypesFlag)) {
    s.dtypes = parse_list<GemmDtype>(kDtypesFlag, *v, "dtype", "bf16, fp16, tf32, fp32, fp64",
                                     [](std::string_view t) { return parse_gemm_dtype(t); });
  }
  if (const std::string* v = options.find(kSecondsFlag)) {
    s.product_seconds = parse_seconds(*v);
    s.product_seconds_given = true;
  }
  if (const std::string* v = options.find(kSizeFlag)) {
    const auto size = static_cast<int>(parse_integer(kSizeFlag, *v, kMinSize, kMaxSize));
    if (size % kSizeStep != 0)
      bad_option(kSizeFlag, std::to_string(size) + " is not a multiple of 256");
    s.size = size;
  }
  if (const std::string* v = options.find(kMemoryFlag)) {
    const long long mib = parse_integer(kMemoryFlag, *v, kMinMemoryMib, kMaxMemoryMib);
    s.memory_limit_bytes = static_cast<std::size_t>(mib) << 20;
  }
  if (const std::string* v = options.find(kDetectorsFlag)) {
    s.detectors = parse_list<GemmDetector>(kDetectorsFlag, *v, "detector",
                                           "nan, checksum, repeat, consensus", parse_detector);
  }

  // A forced size must fit the limit for every dtype asked for; refusing it here is better than
  // every GPU failing to allocate later.
  if (s.size) {
    for (GemmDtype dtype : s.dtypes) {
      const std::size_t need =
          gemm_footprint_bytes(dtype, *s.size, *s.size, *s.size, workspace_bytes());
      if (need > s.memory_limit_bytes) {
        bad_option(kSizeFlag, std::to_string(*s.size) + " needs " + mib_text(need) +
                                  " per GPU for " + std::string(to_string(dtype)) +
                                  ", above the memory limit of " + mib_text(s.memory_limit_bytes) +
                                  " (raise " + std::string(kMemoryFlag) + ")");
      }
    }
  }
  return s;
}

std::chrono::seconds gemm_budget(const GemmSettings& settings) {
  const auto dtypes = static_cast<double>(settings.dtypes.size());
  const double total =
      settings.product_seconds * dtypes + kFixedOverheadSeconds + kOverheadSecondsPerDtype * dtypes;
  return std::chrono::seconds(static_cast<long long>(std::ceil(total)));
}

std::optional<int> choose_gemm_size(GemmDtype dtype, const GemmSettings& settings,
                                    std::uint64_t memory_total_bytes) {
  if (settings.size) return settings.size;
  // Half the GPU: the rest is for the CUDA context, cuBLAS's own allocations and whatever
  // else the node keeps resident.
  std::uint64_t limit = settings.memory_limit_bytes;
  if (memory_total_bytes > 0) limit = std::min<std::uint64_t>(limit, memory_total_bytes / 2);
  for (int size : kCandidateSizes) {
    if (gemm_footprint_bytes(dtype, size, size, size, workspace_bytes()) <= limit) return size;
  }
  return std::nullopt;
}

}  // namespace preflight
