#pragma once
// A structure-aware mutation for the targets whose input is a JSON document (thresholds,
// verdict, report, protocol), used as their LLVMFuzzerCustomMutator. Byte mutations alone
// rarely turn `"bytes": 4096` into `"bytes": -1.5` while the rest of a 40 KB verdict stays
// valid JSON, and such a value is what breaks a reader: a fraction or 1e20 where a count
// belongs, a string where a number does, a member missing. So half of the mutations parse the
// input, change one value picked at random (into such a value, a copy of another value of the
// document, or its own bytes mutated), drop a member or double an array element, and write the
// document back. The other half are libFuzzer's own byte mutations (with the dictionary), which
// keep finding what the parser itself does with broken text.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/bounded_input.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace preflight::fuzz {

namespace json_mutation {

using Json = nlohmann::ordered_json;

// Deeper documents are only mutated bytewise: collect() recurses.
constexpr int kMaxDepth = 64;

inline void collect(Json& j, std::vector<Json*>& out) {
  out.push_back(&j);
  if (j.is_structured()) {
    for (Json& child : j) collect(child, out);
  }
}

// Values readers get wrong: the edges of int, unsigned and int64, fractions, non-numbers.
inline Json awkward(std::minstd_rand& random) {
  static const std::vector<Json> values = {
      0,
      -1,
      -1.5,
      0.5,
      1e20,
      -1e20,
      1e300,
      4.9e-324,
      2147483648LL,
      -2147483649LL,
      4294967296LL,
      std::numeric_limits<std::int64_t>::max(),
      std::numeric_limits<std::int64_t>::min(),
      std::numeric_limits<std::uint64_t>::max(),
      "",
      "x",
      std::string(300, 'a'),
      "gpu99999999",
      Json(nullptr),
      true,
      Json::array(),
      Json::object(),
  };
  return values[random() % values.size()];
}

// The document mutated once; false when the mutation left it unchanged or was not possible.
inline bool mutate(Json& document, std::minstd_rand& random) {
  std::vector<Json*> nodes;
  collect(document, nodes);
  Json& target = *nodes[random() % nodes.size()];
  switch (random() % 6) {
    case 0:
      target = awkward(random);
      return true;
    case 1: {  // another value of the document here: an object where a number was, ...
      const Json copy = *nodes[random() % nodes.size()];
      target = copy;
      return true;
    }
    case 2:
      if (target.is_number()) {
        const double x = target.get<double>();
        static const double factors[] = {-1.0, 1000.0, 1e-3, 1e10};
        target = random() % 2 == 0 ? x * factors[random() % 4] : x + 0.5;
        return true;
      }
      if (target.is_string()) {
        std::string bytes = target.get<std::string>();
        const std::size_t size = bytes.size();
        bytes.resize(size + 16);  // room to grow
        bytes.resize(
            LLVMFuzzerMutate(reinterpret_cast<std::uint8_t*>(bytes.data()), size, bytes.size()));
        target = bytes;
        return true;
      }
      return false;
    case 3:
      if (target.is_object() && !target.empty()) {
        auto it = target.begin();
        std::advance(it, static_cast<long>(random() % target.size()));
        target.erase(it);
        return true;
      }
      return false;
    case 4:
      if (target.is_array() && !target.empty()) {
        const Json copy = target[random() % target.size()];
        target.insert(target.begin() + static_cast<long>(random() % (target.size() + 1)), copy);
        return true;
      }
      return false;
    default:
      if (target.is_array() && !target.empty()) {
        target.erase(target.begin() + static_cast<long>(random() % target.size()));
        return true;
      }
      return false;
  }
}

}  // namespace json_mutation

inline std::size_t mutate_json(std::uint8_t* data, std::size_t size, std::size_t max_size,
                               unsigned int seed) {
  using json_mutation::Json;
  std::minstd_rand random(seed);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (random() % 2 == 0 ||
      json_nesting_depth(text, json_mutation::kMaxDepth) > json_mutation::kMaxDepth) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  Json document = Json::parse(text, nullptr, false);
  if (document.is_discarded()) return LLVMFuzzerMutate(data, size, max_size);
  bool changed = false;
  for (int tries = 0; tries < 8 && !changed; ++tries) {
    changed = json_mutation::mutate(document, random);
  }
  const std::string out = document.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (!changed || out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace preflight::fuzz
