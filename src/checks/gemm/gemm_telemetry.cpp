// Condenses the NVML samples taken while a GPU ran its products into the few numbers that
// explain a slow GPU (clock, temperature, power, and which slowdown reasons were active), so a
// speed finding can say why and not only how much.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "checks/gemm/gemm_judge.hpp"
#include "checks/gemm/gemm_math.hpp"
#include "preflight/engine/node_backend.hpp"

namespace preflight {

namespace {

struct ReasonBit {
  std::uint64_t bit;
  const char* name;
};

// Only the reasons that lower clocks under load; idle, application clocks, sync boost and
// display settings say nothing about why a GPU was slow.
constexpr ReasonBit kSlowdownReasons[] = {
    {clock_event::kSwPowerCap, "SW power cap"},
    {clock_event::kHwSlowdown, "HW slowdown"},
    {clock_event::kSwThermalSlowdown, "SW thermal slowdown"},
    {clock_event::kHwThermalSlowdown, "HW thermal slowdown"},
    {clock_event::kHwPowerBrakeSlowdown, "HW power brake"},
};

std::string format_number(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

}  // namespace

TelemetrySummary summarize_telemetry(const std::vector<GpuTelemetry>& samples) {
  TelemetrySummary out;
  out.samples = samples.size();
  std::vector<double> clocks;
  std::vector<double> power;
  std::size_t with_reasons = 0;
  std::size_t counts[std::size(kSlowdownReasons)] = {};
  for (const GpuTelemetry& s : samples) {
    if (s.sm_clock_mhz) clocks.push_back(*s.sm_clock_mhz);
    if (s.power_w) power.push_back(*s.power_w);
    if (s.temperature_c) {
      out.temperature_c_max =
          std::max(out.temperature_c_max.value_or(*s.temperature_c), *s.temperature_c);
    }
    if (s.clock_event_reasons) {
      ++with_reasons;
      for (std::size_t i = 0; i < std::size(kSlowdownReasons); ++i) {
        if ((*s.clock_event_reasons & kSlowdownReasons[i].bit) != 0) ++counts[i];
      }
    }
  }
  if (!clocks.empty()) out.sm_clock_mhz_median = summarize(clocks).median;
  if (!power.empty()) out.power_w_median = summarize(power).median;
  // The share is of the samples that reported reasons: a sample without them is no evidence
  // that the GPU ran unthrottled.
  for (std::size_t i = 0; i < std::size(kSlowdownReasons); ++i) {
    if (counts[i] == 0) continue;
    out.reasons.emplace_back(kSlowdownReasons[i].name,
                             static_cast<double>(counts[i]) / static_cast<double>(with_reasons));
  }
  std::stable_sort(out.reasons.begin(), out.reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::string describe_telemetry(const TelemetrySummary& summary) {
  if (summary.samples == 0) return "no NVML telemetry";
  std::vector<std::string> readings;
  if (summary.sm_clock_mhz_median) {
    readings.push_back("SM clock " + format_number("%.0f", *summary.sm_clock_mhz_median) +
                       " MHz (median)");
  }
  if (summary.temperature_c_max) {
    readings.push_back(std::to_string(*summary.temperature_c_max) + " C max");
  }
  if (summary.power_w_median) {
    readings.push_back(format_number("%.0f", *summary.power_w_median) + " W (median)");
  }
  std::string text;
  for (const std::string& r : readings) text += (text.empty() ? "" : ", ") + r;
  if (text.empty()) text = "no NVML readings in " + std::to_string(summary.samples) + " samples";

  std::string reasons;
  for (const auto& [name, share] : summary.reasons) {
    const long pct = std::lround(100.0 * share);
    // A reason seen in a few samples of many must not read as "0%", which would contradict
    // listing it at all.
    const std::string shown = pct == 0 ? "<1" : std::to_string(pct);
    reasons += (reasons.empty() ? "" : ", ") + name + " in " + shown + "% of samples";
  }
  if (!reasons.empty()) text += "; " + reasons;
  return text;
}

}  // namespace preflight
