#pragma once
// Reading hand-writable readings JSON field by field: absent or null is "not read" (nullopt,
// empty), and a field of the wrong type or out of range throws InvalidInput naming it by its
// path ("gpus[2].pcie_gen_max_link: expected a whole number, got \"four\""), so a typo in a
// corpus file says where it is. Used by the checks' readings (inventory, nccl, rdma) and the
// verdict reader of `preflight judge`.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace preflight {

class Fields {
 public:
  // Throws InvalidInput when `json` is not an object. `path` names it in messages ("" for the
  // top level, "gpus[2]").
  Fields(const nlohmann::ordered_json& json, std::string path);

  // "path.key", or "key" at the top level.
  std::string name(const std::string& key) const;
  [[noreturn]] void fail(const std::string& key, const std::string& why) const;

  // The field, nullptr when absent or null.
  const nlohmann::ordered_json* find(const char* key) const;
  // A whole number within [min, max] (a number with a fraction is refused).
  std::optional<std::int64_t> integer(const char* key, std::int64_t min, std::int64_t max) const;
  // A whole number >= 0, up to 2^64 - 1.
  std::optional<std::uint64_t> count(const char* key) const;
  std::optional<double> number(const char* key) const;
  std::optional<bool> flag(const char* key) const;
  std::string text(const char* key) const;                // "" when absent
  std::vector<std::string> texts(const char* key) const;  // an array of strings; {} when absent
  std::optional<Fields> object(const char* key) const;
  std::vector<Fields> objects(const char* key) const;  // an array of objects; {} when absent

 private:
  const nlohmann::ordered_json* json_;
  std::string path_;
};

}  // namespace preflight
