// Effective thresholds: generic <- SKU <- --thresholds file. A thresholds file is user input
// and may be hostile, so every error is one InvalidInput line naming the key path, and nothing
// changes unless the whole document is valid.
#include "preflight/thresholds.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <set>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "model/bounded_input.hpp"
#include "model/text_format.hpp"
#include "preflight/errors.hpp"

namespace preflight {
namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr int kMaxNestingDepth = 8;
constexpr std::size_t kMaxShownReasonChars = 200;  // of a parser's message

// Whole numbers print without a fraction ("900", not "900.000000"); others as %g would.
std::string exact_number(double value) {
  char buffer[64];
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(value));
  } else {
    std::snprintf(buffer, sizeof buffer, "%.15g", value);
  }
  return buffer;
}

[[noreturn]] void fail(std::string_view origin, std::string_view key_path,
                       std::string_view problem) {
  throw InvalidInput(printable(origin) + ": " + printable(key_path) + ": " + std::string(problem));
}

// "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error while
// parsing object key - invalid literal; last read: '...'; expected string literal" becomes
// "parse error at line 3, column 5: syntax error while parsing object key - invalid literal;
// expected string literal": the echoed input is dropped, it says nothing the position does not.
std::string short_parse_error(const std::string& what) {
  std::string text = what;
  const std::size_t start = text.find("parse error");
  if (start != std::string::npos) text.erase(0, start);
  const std::size_t last_read = text.find("; last read: '");
  if (last_read != std::string::npos) {
    const std::size_t quote_end = text.find("'; ", last_read + 14);
    text.erase(last_read,
               quote_end == std::string::npos ? std::string::npos : quote_end + 1 - last_read);
  }
  return text;
}

bool is_known_section(const ThresholdSpecs& specs, std::string_view section) {
  for (const ThresholdSpec& spec : specs) {
    const std::size_t dot = spec.key.find('.');
    if (spec.key.substr(0, dot) == section) return true;
  }
  return false;
}

// Parses the text, refusing duplicate keys at any level: nlohmann would silently keep the last
// one, and a file that sets a threshold twice is a mistake worth reporting.
OrderedJson parse_document(std::string_view json_text, std::string_view origin) {
  if (json_nesting_depth(json_text, kMaxNestingDepth) > kMaxNestingDepth) {
    fail(origin, "top level",
         "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels");
  }
  struct Frame {
    std::string path;
    std::set<std::string> keys;
    std::string last_key;
  };
  std::vector<Frame> frames;
  std::string duplicate;  // key path of the first duplicate key, if any
  const OrderedJson::parser_callback_t callback =
      [&](int /*depth*/, OrderedJson::parse_event_t event, OrderedJson& parsed) {
        using Event = OrderedJson::parse_event_t;
        if (event == Event::object_start) {
          std::string path;
          if (!frames.empty()) {
            path = frames.back().path.empty() ? frames.back().last_key
                                              : frames.back().path + "." + frames.back().last_key;
          }
          frames.push_back({std::move(path), {}, {}});
        } else if (event == Event::object_end && !frames.empty()) {
          frames.pop_back();
        } else if (event == Event::key && !frames.empty() && parsed.is_string()) {
          Frame& frame = frames.back();
          frame.last_key = parsed.get<std::string>();
          if (!frame.keys.insert(frame.last_key).second && duplicate.empty()) {
            duplicate = frame.path.empty() ? frame.last_key : frame.path + "." + frame.last_key;
          }
        }
        return true;
      };
  OrderedJson document;
  try {
    document = OrderedJson::parse(json_text.begin(), json_text.end(), callback);
  } catch (const nlohmann::json::parse_error& e) {
    throw InvalidInput(printable(origin) + ": " +
                       printable(short_parse_error(e.what()), kMaxShownReasonChars));
  } catch (const nlohmann::json::exception& e) {
    // e.g. out_of_range.406 "number overflow parsing '1e400'", which carries no position.
    std::string what = e.what();
    const std::size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what.erase(0, bracket + 2);
    throw InvalidInput(printable(origin) +
                       ": parse error: " + printable(what, kMaxShownReasonChars));
  }
  if (!duplicate.empty()) fail(origin, duplicate, "duplicate key");
  return document;
}

}  // namespace

double ThresholdSpec::value_for(const SkuSpec* sku) const {
  if (sku == nullptr) return generic;
  for (const auto& [id, value] : sku_values) {
    if (id == sku->id) return value;
  }
  return datasheet != nullptr ? sku->datasheet.*datasheet : generic;
}

Thresholds Thresholds::for_sku(std::shared_ptr<const ThresholdSpecs> specs, const SkuSpec* sku,
                               std::string detected_by) {
  if (!specs) throw std::logic_error("Thresholds::for_sku: no threshold specs");
  Thresholds thresholds;
  thresholds.specs_ = std::move(specs);
  for (const ThresholdSpec& spec : *thresholds.specs_) {
    thresholds.values_[std::string(spec.key)] = spec.value_for(sku);
  }
  if (sku != nullptr) {
    thresholds.sku_id_ = std::string(sku->id);
    thresholds.sku_name_ = std::string(sku->name);
  }
  thresholds.detected_by_ = std::move(detected_by);
  return thresholds;
}

double Thresholds::get(std::string_view key) const {
  const auto it = values_.find(key);
  if (it != values_.end()) return it->second;
  throw std::out_of_range("unknown threshold key: " + std::string(key));
}

const ThresholdSpecs& Thresholds::specs() const {
  static const ThresholdSpecs none;  // a default-constructed Thresholds: no keys yet
  return specs_ ? *specs_ : none;
}

const ThresholdSpec* Thresholds::find_spec(std::string_view key) const {
  for (const ThresholdSpec& spec : specs()) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

void Thresholds::apply_overrides(std::string_view json_text, std::string_view origin) {
  const OrderedJson document = parse_document(json_text, origin);
  if (!document.is_object()) fail(origin, "top level", "expected an object");

  // Everything is checked against a copy; *this changes only once the whole file is valid.
  auto staged = values_;
  std::vector<MachineShape> site_shapes = site_node_shapes_;
  std::shared_ptr<const BaselineLimits> baseline = baseline_;
  std::set<std::string> overridden(overridden_.begin(), overridden_.end());

  for (const auto& [section, body] : document.items()) {
    if (section == "schema") {
      if (!body.is_string()) {
        fail(origin, section, std::string("expected a string, got ") + body.type_name());
      }
      if (body.get<std::string>() != kThresholdsSchema) {
        fail(origin, section,
             "unsupported schema \"" + printable(body.get<std::string>()) + "\" (expected \"" +
                 std::string(kThresholdsSchema) + "\")");
      }
      continue;
    }
    if (section == "sku") {
      // Informational (written by to_json_text): the SKU is chosen by detection or --sku.
      if (!body.is_string()) {
        fail(origin, section, std::string("expected a string, got ") + body.type_name());
      }
      continue;
    }
    if (section == "node_shape") {
      // Informational (written by to_json_text): the shape is chosen by --node-shape, DMI or
      // the GPUs.
      if (!body.is_object() && !body.is_null()) {
        fail(origin, section, std::string("expected an object, got ") + body.type_name());
      }
      continue;
    }
    if (section == "node_shapes") {
      try {
        site_shapes = parse_site_node_shapes(body, "node_shapes");
      } catch (const InvalidInput& e) {
        throw InvalidInput(printable(origin) + ": " + e.what());
      }
      continue;
    }
    if (section == "baseline") {
      if (!body.is_object()) fail(origin, section, "expected an object");
      try {
        baseline = std::make_shared<const BaselineLimits>(baseline_from_json(body));
      } catch (const InvalidInput& e) {
        throw InvalidInput(printable(origin) + ": " + e.what());
      }
      continue;
    }
    if (!is_known_section(specs(), section)) fail(origin, section, "unknown key");
    if (!body.is_object()) fail(origin, section, "expected an object");

    for (const auto& [name, value] : body.items()) {
      const std::string key = section + "." + name;
      const ThresholdSpec* spec = find_spec(key);
      if (spec == nullptr) fail(origin, key, "unknown key");
      // nlohmann keeps booleans apart from numbers, so true/false land here too.
      if (!value.is_number()) {
        fail(origin, key, std::string("expected a number, got ") + value.type_name());
      }
      const double number = value.get<double>();
      if (!std::isfinite(number) || number < spec->min_value || number > spec->max_value) {
        fail(origin, key,
             exact_number(number) + " is outside " + exact_number(spec->min_value) + ".." +
                 exact_number(spec->max_value));
      }
      if (spec->integer && number != std::floor(number)) {
        fail(origin, key, exact_number(number) + " is not a whole number");
      }
      staged[key] = number;
      overridden.insert(key);
    }
  }

  // A warning threshold past the failure threshold would make the warning unreachable.
  for (const ThresholdSpec& spec : specs()) {
    if (spec.fail_key.empty()) continue;
    const std::string warn_key(spec.key);
    const std::string fail_key(spec.fail_key);
    const double warn = staged.at(warn_key);
    const double fail_at = staged.at(fail_key);
    if (spec.warn_below_fail ? warn > fail_at : warn < fail_at) {
      fail(origin, warn_key,
           exact_number(warn) + (spec.warn_below_fail ? " is above " : " is below ") + fail_key +
               " (" + exact_number(fail_at) + ")");
    }
  }

  values_ = std::move(staged);
  overridden_.assign(overridden.begin(), overridden.end());
  overrides_file_ = std::string(origin);
  site_node_shapes_ = std::move(site_shapes);
  baseline_ = std::move(baseline);
}

void choose_node_shape(Thresholds& t, std::string_view named, std::string_view dmi_product_name,
                       int gpus) {
  const std::vector<MachineShape>& site = t.site_node_shapes();
  if (!named.empty()) {
    const MachineShape* shape = find_node_shape(named, site);
    if (shape == nullptr) {
      throw InvalidInput("--node-shape: unknown node shape \"" + printable(named) +
                         "\" (known: " + node_shape_ids(site) + ")");
    }
    t.set_node_shape(shape, "--node-shape");
    return;
  }
  if (const MachineShape* shape = node_shape_for_dmi(dmi_product_name, site)) {
    t.set_node_shape(shape, "DMI product name " + std::string(dmi_product_name));
    return;
  }
  if (const MachineShape* shape = reference_node_shape(t.sku_id(), gpus)) {
    t.set_node_shape(shape, "assumed: " + std::to_string(gpus) + " x " + t.sku_id() +
                                " is the reference board " + shape->id);
    return;
  }
  t.set_node_shape(nullptr, "");
}

void Thresholds::set_node_shape(const MachineShape* shape, std::string chosen_by) {
  node_shape_ = shape != nullptr ? std::make_shared<const MachineShape>(*shape) : nullptr;
  node_shape_by_ = shape != nullptr ? std::move(chosen_by) : std::string();
}

void Thresholds::apply_overrides_file(const std::string& path) {
  apply_overrides(read_bounded_file(path, kThresholdsFileMaxBytes), path);
}

std::string Thresholds::to_json_text() const {
  OrderedJson document;
  document["schema"] = kThresholdsSchema;
  document["sku"] = sku_id_;
  if (node_shape_) {
    OrderedJson shape = node_shape_json(*node_shape_);
    shape["chosen_by"] = node_shape_by_;
    document["node_shape"] = std::move(shape);
  }
  for (const ThresholdSpec& spec : specs()) {
    const std::size_t dot = spec.key.find('.');
    const std::string section(spec.key.substr(0, dot));
    const std::string name(spec.key.substr(dot + 1));
    const double value = get(spec.key);
    // Whole values print as integers ("85", not "85.0"); ranges keep them far below 2^53.
    if (value == std::floor(value)) {
      document[section][name] = static_cast<long long>(value);
    } else {
      document[section][name] = value;
    }
  }
  if (baseline_) document["baseline"] = baseline_to_json(*baseline_);
  return document.dump(2) + "\n";
}

}  // namespace preflight
