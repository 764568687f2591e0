// The gemm readings as JSON. Written by hand in the corpus (tests/data/nodes/), so every field
// is read on its own and a bad one is named by its path ("gpus[2].tflops.median: ..."), which
// points a corpus author at the typo rather than at nlohmann's message.
#include "checks/gemm/gemm_readings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <tuple>

#include "checks/common/entities.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

constexpr GemmRunStatus kStatuses[] = {GemmRunStatus::completed, GemmRunStatus::not_tested,
                                       GemmRunStatus::timeout, GemmRunStatus::error};

[[noreturn]] void bad_gemm_reading(const std::string& path, const std::string& why) {
  throw InvalidInput(path.empty() ? why : path + ": " + why);
}

const Json* member(const Json& object, const std::string& path, const char* key) {
  if (!object.is_object()) bad_gemm_reading(path, "expected an object");
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string join(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}

const Json& required(const Json& object, const std::string& path, const char* key) {
  const Json* value = member(object, path, key);
  if (value == nullptr) bad_gemm_reading(join(path, key), "missing");
  return *value;
}

std::string text_of(const Json& value, const std::string& path) {
  if (!value.is_string()) bad_gemm_reading(path, "expected a string, got " + value.dump());
  return value.get<std::string>();
}

double number_of(const Json& value, const std::string& path, double min, double max) {
  if (!value.is_number()) bad_gemm_reading(path, "expected a number, got " + value.dump());
  const double v = value.get<double>();
  if (!std::isfinite(v) || v < min || v > max) {
    bad_gemm_reading(path, "expected a number in [" + Json(min).dump() + ", " + Json(max).dump() +
                               "], got " + value.dump());
  }
  return v;
}

std::int64_t whole_of(const Json& value, const std::string& path, std::int64_t min,
                      std::int64_t max) {
  if (!value.is_number_integer())
    bad_gemm_reading(path, "expected a whole number, got " + value.dump());
  const std::int64_t v =
      value.is_number_unsigned()
          ? static_cast<std::int64_t>(std::min<std::uint64_t>(
                value.get<std::uint64_t>(),
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())))
          : value.get<std::int64_t>();
  if (v < min || v > max) {
    bad_gemm_reading(path, "expected a whole number in [" + std::to_string(min) + ", " +
                               std::to_string(max) + "], got " + value.dump());
  }
  return v;
}

// "gpu3" -> 3: the entity name the findings use.
int gpu_index_of(const Json& value, const std::string& path) {
  const std::string name = text_of(value, path);
  const bool digits =
      name.size() > 3 && name.size() <= 7 && name.compare(0, 3, "gpu") == 0 &&
      std::all_of(name.begin() + 3, name.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits)
    bad_gemm_reading(path, "expected a GPU entity such as \"gpu0\", got " + value.dump());
  return std::stoi(name.substr(3));
}

GemmDtype dtype_of(const Json& value, const std::string& path) {
  const auto dtype = parse_gemm_dtype(text_of(value, path));
  if (!dtype)
    bad_gemm_reading(path, "expected bf16, fp16, tf32, fp32 or fp64, got " + value.dump());
  return *dtype;
}

GemmRunStatus status_of(const Json& value, const std::string& path) {
  const std::string text = text_of(value, path);
  for (GemmRunStatus s : kStatuses) {
    if (to_string(s) == text) return s;
  }
  bad_gemm_reading(path, "expected completed, not_tested, timeout or error, got " + value.dump());
}

Json telemetry_json(const TelemetrySummary& t) {
  Json j = Json::object();
  j["samples"] = t.samples;
  if (t.sm_clock_mhz_median) j["sm_clock_mhz_median"] = *t.sm_clock_mhz_median;
  if (t.temperature_c_max) j["temperature_c_max"] = *t.temperature_c_max;
  if (t.power_w_median) j["power_w_median"] = *t.power_w_median;
  if (!t.reasons.empty()) {
    Json reasons = Json::object();
    for (const auto& [name, share] : t.reasons) reasons[name] = share;
    j["slowdown_reasons"] = std::move(reasons);
  }
  return j;
}

TelemetrySummary telemetry_of(const Json& j, const std::string& path) {
  TelemetrySummary t;
  t.samples = static_cast<std::size_t>(
      whole_of(required(j, path, "samples"), join(path, "samples"), 0, 100000000));
  if (const Json* v = member(j, path, "sm_clock_mhz_median")) {
    t.sm_clock_mhz_median = number_of(*v, join(path, "sm_clock_mhz_median"), 0, 100000);
  }
  if (const Json* v = member(j, path, "temperature_c_max")) {
    t.temperature_c_max =
        static_cast<int>(whole_of(*v, join(path, "temperature_c_max"), -100, 1000));
  }
  if (const Json* v = member(j, path, "power_w_median")) {
    t.power_w_median = number_of(*v, join(path, "power_w_median"), 0, 100000);
  }
  if (const Json* v = member(j, path, "slowdown_reasons")) {
    const std::string where = join(path, "slowdown_reasons");
    if (!v->is_object())
      bad_gemm_reading(where, "expected an object of reason: share, got " + v->dump());
    for (auto it = v->begin(); it != v->end(); ++it) {
      t.reasons.emplace_back(it.key(), number_of(it.value(), where + "." + it.key(), 0, 1));
    }
    // Largest first, as summarize_telemetry orders them, so a hand-written file in any order
    // reads the same in messages; stable, so equal shares keep the file's order.
    std::stable_sort(t.reasons.begin(), t.reasons.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
  }
  if (t.samples == 0 &&
      (t.sm_clock_mhz_median || t.temperature_c_max || t.power_w_median || !t.reasons.empty())) {
    bad_gemm_reading(join(path, "samples"), "0, yet readings are given");
  }
  return t;
}

GemmGpuReading gpu_of(const Json& j, const std::string& path) {
  if (!j.is_object()) bad_gemm_reading(path, "expected an object, got " + j.dump());
  GemmGpuReading r;
  r.gpu_index = gpu_index_of(required(j, path, "gpu"), join(path, "gpu"));
  if (const Json* v = member(j, path, "model")) r.model = text_of(*v, join(path, "model"));
  r.dtype = dtype_of(required(j, path, "dtype"), join(path, "dtype"));
  if (const Json* v = member(j, path, "status")) r.status = status_of(*v, join(path, "status"));
  if (const Json* v = member(j, path, "products")) {
    r.products = static_cast<std::size_t>(whole_of(*v, join(path, "products"), 0, 1000000000000));
  }
  // A shape is needed to compare GPUs with each other, and only where products were verified.
  int* const dims[] = {&r.m, &r.n, &r.k};
  const char* const names[] = {"m", "n", "k"};
  for (int d = 0; d < 3; ++d) {
    const Json* v = r.products > 0 ? &required(j, path, names[d]) : member(j, path, names[d]);
    if (v != nullptr) *dims[d] = static_cast<int>(whole_of(*v, join(path, names[d]), 1, 1 << 20));
  }
  if (r.products > 0 || member(j, path, "tflops") != nullptr) {
    const std::string where = join(path, "tflops");
    const Json& t = required(j, path, "tflops");
    if (!t.is_object()) bad_gemm_reading(where, "expected an object with median, min and max");
    GemmTflops tf;
    tf.median = number_of(required(t, where, "median"), where + ".median", 0, 1e7);
    tf.min = number_of(required(t, where, "min"), where + ".min", 0, 1e7);
    tf.max = number_of(required(t, where, "max"), where + ".max", 0, 1e7);
    if (tf.min > tf.median || tf.median > tf.max)
      bad_gemm_reading(where, "expected min <= median <= max");
    if (r.products == 0) bad_gemm_reading(join(path, "products"), "0, yet TFLOP/s are given");
    r.tflops = tf;
  }
  if (const Json* v = member(j, path, "telemetry")) {
    r.telemetry = telemetry_of(*v, join(path, "telemetry"));
  }
  if (const Json* v = member(j, path, "injected")) {
    if (!v->is_boolean())
      bad_gemm_reading(join(path, "injected"), "expected true or false, got " + v->dump());
    r.injected = v->get<bool>();
  }
  return r;
}

}  // namespace

std::string_view to_string(GemmRunStatus status) {
  switch (status) {
    case GemmRunStatus::completed:
      return "completed";
    case GemmRunStatus::not_tested:
      return "not_tested";
    case GemmRunStatus::timeout:
      return "timeout";
    case GemmRunStatus::error:
      return "error";
  }
  return "completed";
}

void to_json(nlohmann::ordered_json& j, const GemmReadings& readings) {
  Json gpus = Json::array();
  for (const GemmGpuReading& r : readings.gpus) {
    Json g = Json::object();
    g["gpu"] = gpu_entity(r.gpu_index);
    if (!r.model.empty()) g["model"] = r.model;
    g["dtype"] = std::string(to_string(r.dtype));
    g["status"] = std::string(to_string(r.status));
    if (r.m > 0 && r.n > 0 && r.k > 0) {
      g["m"] = r.m;
      g["n"] = r.n;
      g["k"] = r.k;
    }
    g["products"] = r.products;
    if (r.tflops) {
      g["tflops"] =
          Json{{"median", r.tflops->median}, {"min", r.tflops->min}, {"max", r.tflops->max}};
    }
    if (r.telemetry.samples > 0) g["telemetry"] = telemetry_json(r.telemetry);
    if (r.injected) g["injected"] = true;
    gpus.push_back(std::move(g));
  }
  j = Json::object();
  j["gpus"] = std::move(gpus);
}

void from_json(const nlohmann::ordered_json& j, GemmReadings& readings) {
  readings = GemmReadings{};
  const Json& gpus = required(j, "", "gpus");
  if (!gpus.is_array()) bad_gemm_reading("gpus", "expected an array, got " + gpus.dump());
  std::set<std::pair<int, int>> seen;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const std::string path = "gpus[" + std::to_string(i) + "]";
    GemmGpuReading r = gpu_of(gpus[i], path);
    if (!seen.emplace(r.gpu_index, static_cast<int>(r.dtype)).second) {
      bad_gemm_reading(path, gpu_entity(r.gpu_index) + " " + std::string(to_string(r.dtype)) +
                                 " is given twice");
    }
    readings.gpus.push_back(std::move(r));
  }
}

}  // namespace preflight
