#pragma once
// Thresholds: one flat table of numbers keyed "section.name" (e.g.
// "inventory.temperature_warn_c"); each check declares the keys of its section. Effective values
// are the generic defaults, replaced by the values of the detected SKU (its datasheet, or the
// check's own figure for it), replaced by a --thresholds file. Every key has a documented range;
// a file with unknown keys, wrong types or values out of range is bad input (exit 2).
// Sources for every number: docs/thresholds.md.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "preflight/baseline.hpp"
#include "preflight/node_shape.hpp"

namespace preflight {

inline constexpr std::string_view kThresholdsSchema = "preflight.thresholds/1";
// The most a thresholds file may hold (load_thresholds refuses more; a baseline too).
inline constexpr std::size_t kThresholdsFileMaxBytes = 1024 * 1024;

// A GPU model's datasheet: the facts thresholds are derived from. 0 where the datasheet gives
// none. Sources: docs/thresholds.md.
struct SkuDatasheet {
  double pcie_gen = 0;      // the PCIe generation of the GPU's host link
  double pcie_width = 0;    // lanes
  double nvlink_links = 0;  // NVLink links per GPU (0: none, or bridges that are optional)
  double bf16_tflops = 0;   // dense tensor-core peaks, TFLOP/s
  double fp16_tflops = 0;
  double tf32_tflops = 0;
  double fp32_tflops = 0;  // CUDA cores
  double fp64_tflops = 0;  // tensor cores where the GPU has them
  double nvlink_gbps = 0;  // one direction, GPU to GPU, over the full link set, GB/s
  double hbm_gbps = 0;     // memory bandwidth, decimal GB/s
};

struct SkuSpec {
  std::string_view id;                          // "h100-sxm5-80gb"; used by --sku
  std::string_view name;                        // "NVIDIA H100 SXM5 80GB"
  std::vector<std::uint16_t> pci_device_ids;    // PCI device id (vendor 0x10de)
  std::vector<std::string_view> name_patterns;  // substrings of the NVML/CUDA device name
  SkuDatasheet datasheet;
};

// One threshold key. A check declares its own (CheckInfo::thresholds, keys "<check>.*");
// CheckRegistry::threshold_specs() assembles them.
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
  // A known SKU's value: the datasheet figure this key takes (nullptr: none), ...
  double SkuDatasheet::*datasheet = nullptr;
  // ... or a figure of this check's own for a SKU, by SKU id (a measured or policy figure, its
  // source in docs/thresholds.md). A SKU named in neither gets `generic`.
  std::vector<std::pair<std::string_view, double>> sku_values = {};

  // This key's value for `sku` (nullptr: generic).
  double value_for(const SkuSpec* sku) const;
};

// Every threshold key of the binary, in the order `preflight thresholds` prints them.
using ThresholdSpecs = std::vector<ThresholdSpec>;

const std::vector<SkuSpec>& sku_table();
const SkuSpec* find_sku(std::string_view id_or_name);  // by id, or name case-insensitively
// By PCI device id first, then by name pattern; nullptr when unknown.
const SkuSpec* detect_sku(std::uint16_t pci_device_id, std::string_view device_name);

class Thresholds {
 public:
  // Every key of `specs` at its value for the SKU (sku may be null: generic). The specs are
  // the registry's (CheckRegistry::threshold_specs()).
  static Thresholds for_sku(std::shared_ptr<const ThresholdSpecs> specs, const SkuSpec* sku,
                            std::string detected_by);

  // Throws std::out_of_range for a key missing from the specs (a bug).
  double get(std::string_view key) const;
  const ThresholdSpecs& specs() const;
  const ThresholdSpec* find_spec(std::string_view key) const;
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

  // The node shape the node is judged as (node_shape.hpp), and how it was chosen ("--node-shape",
  // "DMI product name p5.48xlarge", "assumed: 8 x h200-sxm-141gb is an HGX H200 board").
  // nullptr: none (judged without one). A copy is kept: site shapes come from the file.
  void set_node_shape(const MachineShape* shape, std::string chosen_by);
  const MachineShape* node_shape() const { return node_shape_.get(); }
  const std::string& node_shape_by() const { return node_shape_by_; }
  // The thresholds file's "node_shapes" rows (a site's own shapes); empty without one.
  const std::vector<MachineShape>& site_node_shapes() const { return site_node_shapes_; }
  // The thresholds file's "baseline" block (`preflight baseline`, docs/baseline.md); nullptr
  // without one.
  const BaselineLimits* baseline() const { return baseline_.get(); }

 private:
  std::shared_ptr<const ThresholdSpecs> specs_;  // never null once made by for_sku
  std::map<std::string, double, std::less<>> values_;
  std::string sku_id_ = "generic";
  std::string sku_name_ = "generic (unknown GPU model)";
  std::string detected_by_;
  std::vector<std::string> overridden_;
  std::string overrides_file_;
  std::shared_ptr<const MachineShape> node_shape_;
  std::string node_shape_by_;
  std::vector<MachineShape> site_node_shapes_;
  std::shared_ptr<const BaselineLimits> baseline_;
};

// Picks the node shape and records it in `t`: `named` (--node-shape; a name neither built in nor
// in the thresholds file is InvalidInput listing the known ones), else the shape whose DMI
// product name this is, else the reference board of `gpus` GPUs of t's SKU (recorded as
// assumed), else none.
void choose_node_shape(Thresholds& t, std::string_view named, std::string_view dmi_product_name,
                       int gpus);

}  // namespace preflight
