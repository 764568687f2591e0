#pragma once
// Thresholds: one flat table of numbers keyed "section.name" (e.g.
// "inventory.temperature_warn_c"). Effective values are the generic defaults, replaced by the
// values of the detected SKU, replaced by a --thresholds file. Every key has a documented range;
// a file with unknown keys, wrong types or values out of range is bad input (exit 2).
// Sources for every number: docs/thresholds.md.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

inline constexpr std::string_view kThresholdsSchema = "preflight.thresholds/1";

struct ThresholdSpec {
  std::string_view key;          // "inventory.temperature_warn_c"
  std::string_view unit;         // "C", "count", "MiB", "links", ...
  std::string_view description;  // one line
  double min_value;              // accepted range in a thresholds file
  double max_value;
  bool integer;    // the value must be a whole number
  double generic;  // value for a GPU of unknown SKU
  // A warning limit names its failure limit, so that no file makes the warning unreachable:
  // warn_below_fail (limits "at or above": temperatures, percentages) requires warn <= fail;
  // otherwise (limits "below": shares of a peak) warn >= fail. Empty for other limits.
  std::string_view fail_key = {};
  bool warn_below_fail = false;
};

struct SkuSpec {
  std::string_view id;                          // "h100-sxm5-80gb"; used by --sku
  std::string_view name;                        // "NVIDIA H100 SXM5 80GB"
  std::vector<std::uint16_t> pci_device_ids;    // PCI device id (vendor 0x10de)
  std::vector<std::string_view> name_patterns;  // substrings of the NVML/CUDA device name
  std::vector<std::pair<std::string_view, double>> values;  // keys that differ from generic
};

const std::vector<ThresholdSpec>& threshold_specs();
const ThresholdSpec* find_threshold_spec(std::string_view key);
const std::vector<SkuSpec>& sku_table();
const SkuSpec* find_sku(std::string_view id_or_name);  // by id, or name case-insensitively
// By PCI device id first, then by name pattern; nullptr when unknown.
const SkuSpec* detect_sku(std::uint16_t pci_device_id, std::string_view device_name);

class Thresholds {
 public:
  // Generic defaults overlaid with the SKU's values (sku may be null: generic).
  static Thresholds for_sku(const SkuSpec* sku, std::string detected_by);

  // Throws std::out_of_range for a key missing from threshold_specs() (a bug).
  double get(std::string_view key) const;
  const std::map<std::string, double, std::less<>>& values() const { return values_; }

  const std::string& sku_id() const { return sku_id_; }  // "generic" when unknown
  const std::string& sku_name() const { return sku_name_; }
  const std::string& detected_by() const { return detected_by_; }
  const std::vector<std::string>& overridden() const { return overridden_; }
  const std::string& overrides_file() const { return overrides_file_; }

  // Applies a thresholds document (the text of a --thresholds file). Throws InvalidInput
  // naming the origin and the key path for malformed JSON, unknown keys, wrong types and
  // values out of range; on error nothing is changed.
  void apply_overrides(std::string_view json_text, std::string_view origin);
  // Reads the file (at most 1 MiB) and applies it; unreadable files are InvalidInput too.
  void apply_overrides_file(const std::string& path);

  // The effective thresholds as a thresholds document (JSON text, two-space indent), which
  // apply_overrides accepts back unchanged.
  std::string to_json_text() const;

 private:
  std::map<std::string, double, std::less<>> values_;
  std::string sku_id_ = "generic";
  std::string sku_name_ = "generic (unknown GPU model)";
  std::string detected_by_;
  std::vector<std::string> overridden_;
  std::string overrides_file_;
};

}  // namespace preflight
