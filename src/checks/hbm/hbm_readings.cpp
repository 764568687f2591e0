// The hbm check's readings, their judgement and the pattern test's observation
// (hbm_readings.hpp).
#include "checks/hbm/hbm_readings.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

#include "checks/common/bandwidth_math.hpp"
#include "checks/common/entities.hpp"
#include "checks/hbm/hbm_findings.hpp"
#include "model/byte_units.hpp"
#include "model/json_fields.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

constexpr std::size_t kRangesInMessage = 4;

// GB/s at `key` of `j`: a number >= 0.
double gbps_at(const Json& j, const char* key, const std::string& field) {
  const double value = j.at(key).get<double>();
  if (!(value >= 0.0)) throw InvalidInput(field + "." + key + ": expected GB/s (>= 0)");
  return value;
}

void check_gpu_name(const std::string& name, const std::string& field) {
  const bool ok = name.size() > 3 && name.size() <= 9 && name.compare(0, 3, "gpu") == 0 &&
                  std::all_of(name.begin() + 3, name.end(),
                              [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!ok) throw InvalidInput(field + ": expected a GPU named gpuN, got \"" + name + "\"");
}

// A count that must be there. Read through Fields, never nlohmann's get<std::uint64_t>(): that
// casts whatever number it finds, and -1.5 or 1e30 cast to an integer is undefined behaviour (a
// verdict given to `preflight judge` is outside input; found by tests/fuzz, target verdict).
std::uint64_t required_count(const Fields& f, const char* key) {
  const auto value = f.count(key);
  if (!value) f.fail(key, "missing");
  return *value;
}

HbmPatternReading pattern_from_json(const Json& j, const std::string& field) {
  const Fields f(j, field);
  HbmPatternReading p;
  p.bytes = required_count(f, "bytes");
  p.passes = static_cast<int>(f.integer("passes", 0, std::numeric_limits<int>::max()).value_or(1));
  p.bad_words = required_count(f, "bad_words");
  if (const auto ranges = j.find("bad_ranges"); ranges != j.end()) {
    for (std::size_t i = 0; i < ranges->size(); ++i) {
      const Fields e((*ranges)[i], field + ".bad_ranges[" + std::to_string(i) + "]");
      BadRange range;
      range.begin = required_count(e, "begin");
      range.end = required_count(e, "end");
      range.bad_words = required_count(e, "bad_words");
      if (range.end < range.begin) {
        throw InvalidInput(field + ".bad_ranges[" + std::to_string(i) +
                           "]: end is before begin (offsets in bytes, end exclusive)");
      }
      p.bad_ranges.push_back(range);
    }
  }
  p.ranges_truncated = j.value("ranges_truncated", false);
  return p;
}

}  // namespace

void to_json(nlohmann::ordered_json& j, const HbmReadings& r) {
  j = Json::object();
  Json gpus = Json::array();
  for (const HbmGpuReading& g : r.gpus) {
    Json e = Json::object();
    e["gpu"] = g.gpu;
    if (g.copy) {
      e["copy"] = Json{{"copy_gbps", g.copy->copy_gbps},
                       {"traffic_gbps", g.copy->traffic_gbps},
                       {"samples", g.copy->samples}};
    }
    if (g.pattern) {
      Json ranges = Json::array();
      for (const BadRange& range : g.pattern->bad_ranges) {
        ranges.push_back(
            Json{{"begin", range.begin}, {"end", range.end}, {"bad_words", range.bad_words}});
      }
      e["pattern"] = Json{{"bytes", g.pattern->bytes},
                          {"passes", g.pattern->passes},
                          {"bad_words", g.pattern->bad_words},
                          {"bad_ranges", std::move(ranges)},
                          {"ranges_truncated", g.pattern->ranges_truncated}};
    }
    gpus.push_back(std::move(e));
  }
  j["gpus"] = std::move(gpus);
}

void from_json(const nlohmann::ordered_json& j, HbmReadings& r) {
  r = HbmReadings{};
  const Json& gpus = j.at("gpus");
  if (!gpus.is_array()) throw InvalidInput("gpus: expected a list of GPUs");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const Json& e = gpus[i];
    const std::string field = "gpus[" + std::to_string(i) + "]";
    HbmGpuReading g;
    g.gpu = e.at("gpu").get<std::string>();
    check_gpu_name(g.gpu, field + ".gpu");
    if (const auto copy = e.find("copy"); copy != e.end() && !copy->is_null()) {
      HbmCopyReading c;
      c.copy_gbps = gbps_at(*copy, "copy_gbps", field + ".copy");
      // A hand-written reading may give the copy rate alone: a copy's traffic is twice it.
      c.traffic_gbps = copy->contains("traffic_gbps")
                           ? gbps_at(*copy, "traffic_gbps", field + ".copy")
                           : 2.0 * c.copy_gbps;
      c.samples = Fields(*copy, field + ".copy").count("samples").value_or(0);
      g.copy = c;
    }
    if (const auto pattern = e.find("pattern"); pattern != e.end() && !pattern->is_null()) {
      g.pattern = pattern_from_json(*pattern, field + ".pattern");
    }
    r.gpus.push_back(std::move(g));
  }
}

std::vector<Finding> judge_hbm(const HbmReadings& r, const Thresholds& t) {
  std::vector<Finding> findings;
  const double peak = t.get("hbm.peak_gbps");
  if (peak <= 0) return findings;  // no datasheet figure for this SKU: nothing to hold it to
  const double fail = peak * t.get("hbm.fail_fraction");
  const double warn = peak * t.get("hbm.warn_fraction");
  for (const HbmGpuReading& g : r.gpus) {
    if (!g.copy) continue;
    const HbmCopyReading& c = *g.copy;
    const std::string text = "device-local copy " + format_gbps(c.copy_gbps) + " (memory traffic " +
                             format_gbps(c.traffic_gbps) + ", median of " +
                             std::to_string(c.samples) + "), SKU memory bandwidth " +
                             format_gbps(peak);
    if (c.traffic_gbps < fail) {
      findings.push_back(make_finding(hbm_findings(), "HBM_BANDWIDTH_LOW", g.gpu, text)
                             .measured(c.traffic_gbps, "GB/s", fail));
    } else if (c.traffic_gbps < warn) {
      findings.push_back(make_finding(hbm_findings(), "HBM_BANDWIDTH_MARGINAL", g.gpu, text)
                             .measured(c.traffic_gbps, "GB/s", warn));
    }
  }
  return findings;
}

std::optional<Finding> hbm_pattern_observation(const HbmGpuReading& g) {
  if (!g.pattern || g.pattern->bad_words == 0) return std::nullopt;
  const HbmPatternReading& p = *g.pattern;
  std::string where;
  for (std::size_t i = 0; i < p.bad_ranges.size() && i < kRangesInMessage; ++i) {
    where += (where.empty() ? "" : ", ") + describe_range(p.bad_ranges[i]) + " (" +
             std::to_string(p.bad_ranges[i].bad_words) + ")";
  }
  if (p.bad_ranges.size() > kRangesInMessage || p.ranges_truncated) where += ", ...";
  return make_finding(hbm_findings(), "HBM_PATTERN_MISMATCH", g.gpu,
                      std::to_string(p.bad_words) + " bad 32-bit words in " +
                          std::to_string(p.bad_ranges.size()) + (p.ranges_truncated ? "+" : "") +
                          " address ranges of the " + std::to_string(p.bytes / kMiB) +
                          " MiB tested (offsets in the test buffer): " + where)
      .measured(static_cast<double>(p.bad_words), "words");
}

}  // namespace preflight
