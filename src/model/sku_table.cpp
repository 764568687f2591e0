// The table of known GPU SKUs: how each is recognised and its datasheet. The threshold keys are
// the checks' own (src/checks/<check>/<check>_thresholds.cpp), which take their SKU values from
// here. Where each number comes from is written down in docs/thresholds.md; keep the two in step.
#include <algorithm>
#include <cctype>
#include <cstddef>

#include "preflight/thresholds.hpp"

namespace preflight {
namespace {

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

bool contains_ignore_case(std::string_view haystack, std::string_view needle) {
  if (needle.empty() || needle.size() > haystack.size()) return false;
  for (std::size_t start = 0; start + needle.size() <= haystack.size(); ++start) {
    if (equals_ignore_case(haystack.substr(start, needle.size()), needle)) return true;
  }
  return false;
}

}  // namespace

const std::vector<SkuSpec>& sku_table() {
  // PCI device ids: pci.ids database (vendor 10de). Name patterns: substrings of the name NVML
  // and CUDA report, used only when the device id is unknown (e.g. a new board revision).
  // Cards whose NVLink bridges are optional expect 0 links: a lone card is not a fault.
  // Datasheet figures, in SkuDatasheet's order: PCIe gen, width, NVLink links; dense BF16,
  // FP16, TF32, FP32, FP64 TFLOP/s; NVLink GB/s one direction; HBM GB/s. Sources:
  // docs/thresholds.md.
  static const std::vector<SkuSpec> table = {
      {"a100-sxm4-40gb",
       "NVIDIA A100 SXM4 40GB",
       {0x20B0},
       {"A100-SXM4-40GB"},
       {4, 16, 12, 312, 312, 156, 19.5, 19.5, 300, 1555}},
      {"a100-sxm4-80gb",
       "NVIDIA A100 SXM4 80GB",
       {0x20B2},
       {"A100-SXM4-80GB"},
       {4, 16, 12, 312, 312, 156, 19.5, 19.5, 300, 2039}},
      {"a100-pcie-40gb",
       "NVIDIA A100 PCIe 40GB",
       {0x20B1, 0x20F1},
       {"A100-PCIE-40GB", "A100 PCIe 40GB"},
       {4, 16, 0, 312, 312, 156, 19.5, 19.5, 0, 1555}},
      {"a100-pcie-80gb",
       "NVIDIA A100 PCIe 80GB",
       {0x20B5},
       {"A100 80GB PCIe", "A100-PCIE-80GB"},
       {4, 16, 0, 312, 312, 156, 19.5, 19.5, 0, 1935}},
      {"h100-sxm5-80gb",
       "NVIDIA H100 SXM5 80GB",
       {0x2330},
       {"H100 80GB HBM3", "H100 SXM"},
       {5, 16, 18, 989, 989, 494, 67, 67, 450, 3350}},
      {"h100-pcie-80gb",
       "NVIDIA H100 PCIe 80GB",
       {0x2331},
       {"H100 PCIe"},
       {5, 16, 0, 756, 756, 378, 51, 51, 0, 2000}},
      {"h200-sxm-141gb",
       "NVIDIA H200 SXM 141GB",
       {0x2335},
       {"H200"},
       {5, 16, 18, 989, 989, 494, 67, 67, 450, 4800}},
      // "H200 NVL" also contains "H200": detect_sku prefers the longest matching pattern, so
      // the PCIe card is never taken for the SXM module (which expects 18 NVLink links).
      {"h200-nvl-141gb",
       "NVIDIA H200 NVL 141GB",
       {0x233B},
       {"H200 NVL"},
       {5, 16, 0, 835, 835, 418, 60, 60, 0, 4800}},
  };
  return table;
}

const SkuSpec* find_sku(std::string_view id_or_name) {
  for (const SkuSpec& sku : sku_table()) {
    if (sku.id == id_or_name) return &sku;
  }
  for (const SkuSpec& sku : sku_table()) {
    if (equals_ignore_case(sku.name, id_or_name)) return &sku;
  }
  return nullptr;
}

const SkuSpec* detect_sku(std::uint16_t pci_device_id, std::string_view device_name) {
  for (const SkuSpec& sku : sku_table()) {
    const auto& ids = sku.pci_device_ids;
    if (std::find(ids.begin(), ids.end(), pci_device_id) != ids.end()) return &sku;
  }
  // The longest matching pattern wins, so a more specific name ("H200 NVL") beats a shorter
  // one it contains ("H200") whatever the table order.
  const SkuSpec* best = nullptr;
  std::size_t best_length = 0;
  for (const SkuSpec& sku : sku_table()) {
    for (std::string_view pattern : sku.name_patterns) {
      if (pattern.size() > best_length && contains_ignore_case(device_name, pattern)) {
        best = &sku;
        best_length = pattern.size();
      }
    }
  }
  return best;
}

}  // namespace preflight
