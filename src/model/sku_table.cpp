// The threshold catalogue (every key, its unit, range and generic value) and the table of known
// GPU SKUs with the values that differ from generic. Where each number comes from is written
// down in docs/thresholds.md; keep the two in step.
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

const std::vector<ThresholdSpec>& threshold_specs() {
  // Order matters: it is the order of `preflight thresholds` output and of the docs table.
  static const std::vector<ThresholdSpec> specs = {
      {"inventory.temperature_warn_c", "C", "idle GPU temperature at or above this is a warning",
       20, 120, true, 75, "inventory.temperature_fail_c", true},
      {"inventory.temperature_fail_c", "C", "idle GPU temperature at or above this fails", 20, 120,
       true, 85},
      {"inventory.ecc_correctable_warn", "count", "volatile correctable ECC errors above this warn",
       0, 1e9, true, 1000},
      {"inventory.ecc_uncorrectable_max", "count",
       "volatile uncorrectable ECC errors above this fail", 0, 1e9, true, 0},
      {"inventory.foreign_memory_fail_mib", "MiB",
       "GPU memory held by other processes above this fails (any other process warns)", 0, 1e7,
       true, 1024},
      {"inventory.expected_pcie_gen", "gen",
       "PCIe generation the GPU's link must reach (0: no SKU expectation, only the device's own "
       "maximum)",
       0, 6, true, 0},
      {"inventory.expected_pcie_width", "lanes",
       "PCIe width the link must have (0: no SKU expectation, only the device's own maximum)", 0,
       32, true, 0},
      {"inventory.expected_nvlink_links", "links",
       "NVLink links that must be active on each GPU of a multi-GPU node (0: none expected)", 0, 18,
       true, 0},
      {"inventory.probe_timeout_s", "s", "deadline of the per-GPU responsiveness probe", 1, 600,
       false, 10},
      // Dense (no sparsity) datasheet peaks; 0: no absolute expectation (unknown SKU), only
      // the comparison with the node's other GPUs.
      {"gemm.bf16_peak_tflops", "TFLOP/s", "datasheet dense BF16 tensor-core peak (0: none)", 0,
       100000, false, 0},
      {"gemm.fp16_peak_tflops", "TFLOP/s", "datasheet dense FP16 tensor-core peak (0: none)", 0,
       100000, false, 0},
      {"gemm.tf32_peak_tflops", "TFLOP/s", "datasheet dense TF32 tensor-core peak (0: none)", 0,
       100000, false, 0},
      {"gemm.fp32_peak_tflops", "TFLOP/s", "datasheet FP32 peak, CUDA cores (0: none)", 0, 100000,
       false, 0},
      {"gemm.fp64_peak_tflops", "TFLOP/s",
       "datasheet FP64 peak, tensor cores where the GPU has "
       "them (0: none)",
       0, 100000, false, 0},
      {"gemm.fail_fraction_of_peak", "fraction",
       "a GPU's median TFLOP/s below this share of the dtype's peak fails", 0, 1, false, 0.5},
      {"gemm.warn_fraction_of_peak", "fraction",
       "a GPU's median TFLOP/s below this share of the dtype's peak warns", 0, 1, false, 0.6,
       "gemm.fail_fraction_of_peak", false},
      {"gemm.straggler_warn_pct", "%",
       "a GPU this many percent below the median of the node's GPUs of its model warns", 0, 100,
       false, 8, "gemm.straggler_fail_pct", true},
      {"gemm.straggler_fail_pct", "%",
       "a GPU this many percent below the median of the node's GPUs of its model fails", 0, 100,
       false, 12},
      // Sustained figures: what a healthy GPU of a power- or clock-limited SKU reaches in
      // published measurements (docs/thresholds.md); where set, speed is judged against them
      // instead of the datasheet peak.
      {"gemm.bf16_sustained_tflops", "TFLOP/s",
       "measured dense BF16 TFLOP/s of a healthy GPU of this SKU (0: judge against the peak)", 0,
       100000, false, 0},
      {"gemm.fp16_sustained_tflops", "TFLOP/s",
       "measured dense FP16 TFLOP/s of a healthy GPU of this SKU (0: judge against the peak)", 0,
       100000, false, 0},
      {"gemm.fail_fraction_of_sustained", "fraction",
       "a GPU's median TFLOP/s below this share of the dtype's sustained figure fails", 0, 1, false,
       0.8},
      {"gemm.warn_fraction_of_sustained", "fraction",
       "a GPU's median TFLOP/s below this share of the dtype's sustained figure warns", 0, 1, false,
       0.9, "gemm.fail_fraction_of_sustained", false},
      // Bandwidth checks. Fractions are policy (docs/thresholds.md); expected_gbps and
      // peak_gbps are datasheet figures, 0 where the SKU gives none (no judgement against them).
      {"pcie.fail_fraction", "fraction",
       "one-direction host<->device copy GB/s of one GPU alone below this share of the expected "
       "link's one-direction raw rate fails",
       0, 1, false, 0.6},
      {"pcie.warn_fraction", "fraction",
       "one-direction host<->device copy GB/s of one GPU alone below this share of the expected "
       "link's one-direction raw rate warns",
       0, 1, false, 0.7, "pcie.fail_fraction", false},
      {"pcie.bidir_fail_fraction", "fraction",
       "bidirectional host<->device copies (both directions together) below this share of twice "
       "the expected link's one-direction raw rate fail",
       0, 1, false, 0.4},
      {"pcie.bidir_warn_fraction", "fraction",
       "bidirectional host<->device copies (both directions together) below this share of twice "
       "the expected link's one-direction raw rate warn",
       0, 1, false, 0.45, "pcie.bidir_fail_fraction", false},
      {"pcie.shared_fail_fraction", "fraction",
       "with every GPU copying at once, a GPU below this share of its fair share of the uplink "
       "it shares (the uplink's raw rate over the GPUs behind it, at most its own link) fails; "
       "an uplink whose GPUs together get less than this share of its raw rate fails",
       0, 1, false, 0.6},
      {"nvlink.expected_gbps", "GB/s",
       "one-direction GPU-to-GPU NVLink bandwidth of the SKU's full link set (0: no NVLink "
       "expected)",
       0, 2000, false, 0},
      {"nvlink.fail_fraction", "fraction",
       "a GPU pair's peer copy GB/s below this share of nvlink.expected_gbps fails", 0, 1, false,
       0.6},
      {"nvlink.warn_fraction", "fraction",
       "a GPU pair's peer copy GB/s below this share of nvlink.expected_gbps warns", 0, 1, false,
       0.7, "nvlink.fail_fraction", false},
      {"hbm.peak_gbps", "GB/s", "datasheet memory bandwidth, decimal GB/s (0: unknown)", 0, 20000,
       false, 0},
      {"hbm.fail_fraction", "fraction",
       "device-local copy traffic (read + write) below this share of hbm.peak_gbps fails", 0, 1,
       false, 0.6},
      {"hbm.warn_fraction", "fraction",
       "device-local copy traffic (read + write) below this share of hbm.peak_gbps warns", 0, 1,
       false, 0.7, "hbm.fail_fraction", false},
      {"hbm.quick_test_mib", "MiB", "region the memory pattern test covers in the quick profile",
       64, 1048576, true, 2048},
      {"hbm.test_fraction", "fraction",
       "share of the free GPU memory the pattern test covers in the standard and burnin profiles",
       0.05, 0.98, false, 0.9},
      // NCCL on the node's GPUs. The busbw figures are policy derived from the SKU's NVLink
      // bandwidth (docs/thresholds.md), 0 where the SKU gives none (no judgement against them).
      {"nccl.allgather_busbw_gbps", "GB/s",
       "all-gather bus bandwidth (nccl-tests' busbw) a healthy node reaches at the largest size, "
       "all GPUs in one communicator (0: no figure)",
       0, 10000, false, 0},
      {"nccl.allreduce_busbw_gbps", "GB/s",
       "all-reduce bus bandwidth (nccl-tests' busbw) a healthy node reaches at the largest size "
       "(0: no figure)",
       0, 10000, false, 0},
      {"nccl.fail_fraction", "fraction",
       "the node's bus bandwidth below this share of the nccl.*_busbw_gbps figure fails", 0, 1,
       false, 0.6},
      {"nccl.warn_fraction", "fraction",
       "the node's bus bandwidth below this share of the nccl.*_busbw_gbps figure warns", 0, 1,
       false, 0.7, "nccl.fail_fraction", false},
      // RDMA. min_port_gbps is the node's NIC configuration, not the GPU's: the SKU values are
      // the DGX reference nodes' NICs (docs/thresholds.md), other fabrics override them.
      {"rdma.min_port_gbps", "Gb/s",
       "every active RDMA port must run at least this rate, Gb/s (0: no minimum)", 0, 3200, false,
       0},
      {"rdma.fail_fraction", "fraction",
       "an RDMA transfer's Gb/s below this share of the expected port rate fails", 0, 1, false,
       0.75},
      {"rdma.warn_fraction", "fraction",
       "an RDMA transfer's Gb/s below this share of the expected port rate warns", 0, 1, false, 0.9,
       "rdma.fail_fraction", false},
  };
  return specs;
}

const ThresholdSpec* find_threshold_spec(std::string_view key) {
  for (const ThresholdSpec& spec : threshold_specs()) {
    if (spec.key == key) return &spec;
  }
  return nullptr;
}

const std::vector<SkuSpec>& sku_table() {
  // PCI device ids: pci.ids database (vendor 10de). Name patterns: substrings of the name NVML
  // and CUDA report, used only when the device id is unknown (e.g. a new board revision).
  // Cards whose NVLink bridges are optional expect 0 links: a lone card is not a fault.
  static const std::vector<SkuSpec> table = {
      {"a100-sxm4-40gb",
       "NVIDIA A100 SXM4 40GB",
       {0x20B0},
       {"A100-SXM4-40GB"},
       {{"inventory.expected_pcie_gen", 4},
        {"inventory.expected_pcie_width", 16},
        {"inventory.expected_nvlink_links", 12},
        {"gemm.bf16_peak_tflops", 312},
        {"gemm.fp16_peak_tflops", 312},
        {"gemm.tf32_peak_tflops", 156},
        {"gemm.fp32_peak_tflops", 19.5},
        {"gemm.fp64_peak_tflops", 19.5},
        {"nvlink.expected_gbps", 300},
        {"hbm.peak_gbps", 1555},
        {"nccl.allgather_busbw_gbps", 240},
        {"nccl.allreduce_busbw_gbps", 240},
        {"rdma.min_port_gbps", 200}}},
      {"a100-sxm4-80gb",
       "NVIDIA A100 SXM4 80GB",
       {0x20B2},
       {"A100-SXM4-80GB"},
       {{"inventory.expected_pcie_gen", 4},
        {"inventory.expected_pcie_width", 16},
        {"inventory.expected_nvlink_links", 12},
        {"gemm.bf16_peak_tflops", 312},
        {"gemm.fp16_peak_tflops", 312},
        {"gemm.tf32_peak_tflops", 156},
        {"gemm.fp32_peak_tflops", 19.5},
        {"gemm.fp64_peak_tflops", 19.5},
        {"nvlink.expected_gbps", 300},
        {"hbm.peak_gbps", 2039},
        {"nccl.allgather_busbw_gbps", 240},
        {"nccl.allreduce_busbw_gbps", 240},
        {"rdma.min_port_gbps", 200}}},
      {"a100-pcie-40gb",
       "NVIDIA A100 PCIe 40GB",
       {0x20B1, 0x20F1},
       {"A100-PCIE-40GB", "A100 PCIe 40GB"},
       {{"inventory.expected_pcie_gen", 4},
        {"inventory.expected_pcie_width", 16},
        {"inventory.expected_nvlink_links", 0},
        {"gemm.bf16_peak_tflops", 312},
        {"gemm.fp16_peak_tflops", 312},
        {"gemm.tf32_peak_tflops", 156},
        {"gemm.fp32_peak_tflops", 19.5},
        {"gemm.fp64_peak_tflops", 19.5},
        {"nvlink.expected_gbps", 0},
        {"hbm.peak_gbps", 1555},
        {"nccl.allgather_busbw_gbps", 0},
        {"nccl.allreduce_busbw_gbps", 0},
        {"rdma.min_port_gbps", 0}}},
      {"a100-pcie-80gb",
       "NVIDIA A100 PCIe 80GB",
       {0x20B5},
       {"A100 80GB PCIe", "A100-PCIE-80GB"},
       {{"inventory.expected_pcie_gen", 4},
        {"inventory.expected_pcie_width", 16},
        {"inventory.expected_nvlink_links", 0},
        {"gemm.bf16_peak_tflops", 312},
        {"gemm.fp16_peak_tflops", 312},
        {"gemm.tf32_peak_tflops", 156},
        {"gemm.fp32_peak_tflops", 19.5},
        {"gemm.fp64_peak_tflops", 19.5},
        {"nvlink.expected_gbps", 0},
        {"hbm.peak_gbps", 1935},
        {"nccl.allgather_busbw_gbps", 0},
        {"nccl.allreduce_busbw_gbps", 0},
        {"rdma.min_port_gbps", 0}}},
      {"h100-sxm5-80gb",
       "NVIDIA H100 SXM5 80GB",
       {0x2330},
       {"H100 80GB HBM3", "H100 SXM"},
       {{"inventory.expected_pcie_gen", 5},
        {"inventory.expected_pcie_width", 16},
        {"inventory.expected_nvlink_links", 18},
        {"gemm.bf16_peak_tflops", 989},
        {"gemm.fp16_peak_tflops", 989},
        {"gemm.tf32_peak_tflops", 494},
        {"gemm.fp32_peak_tflops", 67},
        {"gemm.fp64_peak_tflops", 67},
        {"nvlink.expected_gbps", 450},
        {"hbm.peak_gbps", 3350},
        {"nccl.allgather_busbw_gbps", 360},
        {"nccl.allreduce_busbw_gbps", 360},
        {"rdma.min_port_gbps", 400}}},
      {"h100-pcie-80gb",
       "NVIDIA H100 PCIe 80GB",
       {0x2331},
       {"H100 PCIe"},
       {{"inventory.expected_pcie_gen", 5},
        {"inventory.expected_pcie_width", 16},
        {"inventory.expected_nvlink_links", 0},
        {"gemm.bf16_peak_tflops", 756},
        {"gemm.fp16_peak_tflops", 756},
        {"gemm.bf16_sustained_tflops", 495},
        {"gemm.fp16_sustained_tflops", 458},
        {"gemm.tf32_peak_tflops", 378},
        {"gemm.fp32_peak_tflops", 51},
        {"gemm.fp64_peak_tflops", 51},
        {"nvlink.expected_gbps", 0},
        {"hbm.peak_gbps", 2000},
        {"nccl.allgather_busbw_gbps", 0},
        {"nccl.allreduce_busbw_gbps", 0},
        {"rdma.min_port_gbps", 0}}},
      {"h200-sxm-141gb",
       "NVIDIA H200 SXM 141GB",
       {0x2335},
       {"H200"},
       {{"inventory.expected_pcie_gen", 5},
        {"inventory.expected_pcie_width", 16},
        {"inventory.expected_nvlink_links", 18},
        {"gemm.bf16_peak_tflops", 989},
        {"gemm.fp16_peak_tflops", 989},
        {"gemm.tf32_peak_tflops", 494},
        {"gemm.fp32_peak_tflops", 67},
        {"gemm.fp64_peak_tflops", 67},
        {"nvlink.expected_gbps", 450},
        {"hbm.peak_gbps", 4800},
        {"nccl.allgather_busbw_gbps", 360},
        {"nccl.allreduce_busbw_gbps", 360},
        {"rdma.min_port_gbps", 400}}},
      // "H200 NVL" also contains "H200": detect_sku prefers the longest matching pattern, so
      // the PCIe card is never taken for the SXM module (which expects 18 NVLink links).
      {"h200-nvl-141gb",
       "NVIDIA H200 NVL 141GB",
       {0x233B},
       {"H200 NVL"},
       {{"inventory.expected_pcie_gen", 5},
        {"inventory.expected_pcie_width", 16},
        {"inventory.expected_nvlink_links", 0},
        {"gemm.bf16_peak_tflops", 835},
        {"gemm.fp16_peak_tflops", 835},
        {"gemm.tf32_peak_tflops", 418},
        {"gemm.fp32_peak_tflops", 60},
        {"gemm.fp64_peak_tflops", 60},
        {"nvlink.expected_gbps", 0},
        {"hbm.peak_gbps", 4800},
        {"nccl.allgather_busbw_gbps", 0},
        {"nccl.allreduce_busbw_gbps", 0},
        {"rdma.min_port_gbps", 0}}},
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
