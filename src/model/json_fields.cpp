#include "model/json_fields.hpp"

#include <cmath>
#include <limits>
#include <utility>

#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// The value as the message quotes it: short enough for one line.
std::string quoted(const Json& v) {
  // An array or object is named by its type: dumping a whole document into a message is not.
  if (v.is_structured()) return v.is_array() ? "an array" : "an object";
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

}  // namespace

Fields::Fields(const Json& json, std::string path) : json_(&json), path_(std::move(path)) {
  if (!json.is_object()) {
    throw InvalidInput((path_.empty() ? std::string("readings") : path_) +
                       ": expected an object, got " + quoted(json));
  }
}

std::string Fields::name(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void Fields::fail(const std::string& key, const std::string& why) const {
  throw InvalidInput(name(key) + ": " + why);
}

const Json* Fields::find(const char* key) const {
  const auto it = json_->find(key);
  if (it == json_->end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<std::int64_t> Fields::integer(const char* key, std::int64_t min,
                                            std::int64_t max) const {
  const Json* v = find(key);
  if (v == nullptr) return std::nullopt;
  const auto range = [&] { return std::to_string(min) + ".." + std::to_string(max); };
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (max < 0 || u > static_cast<std::uint64_t>(max)) {
      fail(key, "expected a whole number in " + range() + ", got " + quoted(*v));
    }
    return static_cast<std::int64_t>(u);
  }
  std::int64_t value = 0;
  if (v->is_number_integer()) {
    value = v->get<std::int64_t>();
  } else if (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>() &&
             std::fabs(v->get<double>()) < 9e15) {
    value = static_cast<std::int64_t>(v->get<double>());
  } else {
    fail(key, "expected a whole number, got " + quoted(*v));
  }
  if (value < min || value > max) {
    fail(key, "expected a whole number in " + range() + ", got " + quoted(*v));
  }
  return value;
}

std::optional<std::uint64_t> Fields::count(const char* key) const {
  const Json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<std::uint64_t>();
  return static_cast<std::uint64_t>(
      integer(key, 0, std::numeric_limits<std::int64_t>::max()).value_or(0));
}

std::optional<double> Fields::number(const char* key) const {
  const Json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) fail(key, "expected a number, got " + quoted(*v));
  return v->get<double>();
}

std::optional<bool> Fields::flag(const char* key) const {
  const Json* v = find(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) fail(key, "expected true or false, got " + quoted(*v));
  return v->get<bool>();
}

std::string Fields::text(const char* key) const {
  const Json* v = find(key);
  if (v == nullptr) return {};
  if (!v->is_string()) fail(key, "expected a string, got " + quoted(*v));
  return v->get<std::string>();
}

std::vector<std::string> Fields::texts(const char* key) const {
  const Json* v = find(key);
  if (v == nullptr) return {};
  if (!v->is_array()) fail(key, "expected an array of strings, got " + quoted(*v));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      fail(std::string(key) + "[" + std::to_string(i) + "]",
           "expected a string, got " + quoted((*v)[i]));
    }
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

std::optional<Fields> Fields::object(const char* key) const {
  const Json* v = find(key);
  if (v == nullptr) return std::nullopt;
  return Fields(*v, name(key));
}

std::vector<Fields> Fields::objects(const char* key) const {
  const Json* v = find(key);
  if (v == nullptr) return {};
  if (!v->is_array()) fail(key, "expected an array, got " + quoted(*v));
  std::vector<Fields> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    out.emplace_back((*v)[i], name(key) + "[" + std::to_string(i) + "]");
  }
  return out;
}

}  // namespace preflight
