#include "checks/inventory/inventory_rules.hpp"

#include "checks/common/entities.hpp"
#include "checks/inventory/inventory_figures.hpp"
#include "checks/inventory/inventory_findings.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

using namespace clock_event;

// Clock-event reasons that mean the hardware is protecting itself: at idle none should be set.
constexpr std::uint64_t kHardwareReasons =
    kHwSlowdown | kHwThermalSlowdown | kHwPowerBrakeSlowdown | kSwThermalSlowdown;

std::string num(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

void judge_count(const NodeReading& node, const NodeExpectations& expect, InventoryJudgement& out) {
  const int count = static_cast<int>(node.gpus.size());
  if (count == 0) {
    std::string why = "NVML: " + (node.nvml_error.empty() ? "no GPUs" : node.nvml_error) +
                      "; CUDA: " + (node.cuda_error.empty() ? "no devices" : node.cuda_error);
    if (node.pci_gpu_count && *node.pci_gpu_count > 0) {
      why += "; the PCI bus shows " + std::to_string(*node.pci_gpu_count) + " NVIDIA GPUs";
    }
    if (expect.gpus == 0) {
      out.findings.push_back(make_finding(inventory_findings(), "NO_GPU_EXPECTED", "node",
                                          "no GPU visible (" + why + ")"));
    } else {
      out.findings.push_back(make_finding(inventory_findings(), "NO_GPU_VISIBLE", "node",
                                          "no GPU or driver visible (" + why + ")")
                                 .measured(0, "GPUs", expect.gpus ? *expect.gpus : 1));
    }
    return;
  }
  if (expect.gpus && *expect.gpus > 0 && count != *expect.gpus) {
    out.findings.push_back(make_finding(inventory_findings(), "GPU_COUNT_MISMATCH", "node",
                                        std::to_string(count) + " GPUs visible, " +
                                            std::to_string(*expect.gpus) + " expected")
                               .measured(count, "GPUs", *expect.gpus));
  }
  if (node.pci_gpu_count && *node.pci_gpu_count > count) {
    out.findings.push_back(make_finding(inventory_findings(), "GPU_MISSING_FROM_DRIVER", "node",
                                        "the PCI bus shows " + std::to_string(*node.pci_gpu_count) +
                                            " NVIDIA GPUs, the driver lists " +
                                            std::to_string(count))
                               .measured(count, "GPUs", *node.pci_gpu_count));
  }
}

bool driver_too_old(const NodeReading& node) {
  return node.cuda_driver_required > 0 && node.cuda_driver_version > 0 &&
         node.cuda_driver_version < node.cuda_driver_required;
}

// "driver 550.90.07 supports CUDA 12.4, this build needs CUDA 13.0 (driver R580 or newer):
// install preflight-cuda12 or NVIDIA cuda-compat-13-0". Short enough that the remedy survives
// in a 200-character drain reason.
std::string driver_too_old_message(const NodeReading& node) {
  const auto version = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
  };
  const int have_major = node.cuda_driver_version / 1000;
  const int need_major = node.cuda_driver_required / 1000;
  std::string text =
      (node.driver_version.empty() ? "the driver" : "driver " + node.driver_version) +
      " supports CUDA " + version(node.cuda_driver_version) + ", this build needs CUDA " +
      version(node.cuda_driver_required);
  if (!node.cuda_driver_branch_required.empty()) {
    text += " (driver " + node.cuda_driver_branch_required + " or newer)";
  }
  // A package exists per CUDA major from 12 on (docs/install.md); older drivers must be updated.
  const std::string compat = "NVIDIA cuda-compat-" + std::to_string(need_major) + "-0";
  if (have_major >= 12 && have_major < need_major) {
    text += ": install preflight-cuda" + std::to_string(have_major) + " or " + compat;
  } else {
    text += ": update the driver or install " + compat;
  }
  return text;
}

void judge_software(const NodeReading& node, const Thresholds& th, InventoryJudgement& out) {
  if (!node.nvml_loaded) {
    out.findings.push_back(make_finding(inventory_findings(), "NVML_UNAVAILABLE", "node",
                                        "GPU health not readable: " + node.nvml_error));
  }
  const bool cuda_sees_none = node.cuda_device_count == 0;
  if (driver_too_old(node)) {
    out.findings.push_back(make_finding(inventory_findings(), "CUDA_DRIVER_TOO_OLD", "node",
                                        driver_too_old_message(node))
                               .measured(node.cuda_driver_version / 1000.0, "CUDA",
                                         node.cuda_driver_required / 1000.0));
  } else if (cuda_sees_none && node.nvml_loaded) {
    out.findings.push_back(
        make_finding(inventory_findings(), "CUDA_UNAVAILABLE", "node",
                     "CUDA runtime sees no device: " +
                         (node.cuda_error.empty() ? "no error given" : node.cuda_error)));
  }
  const GpuReading* first = representative_gpu(node);
  if (th.sku_id() == "generic" && first != nullptr) {
    char id[8];
    std::snprintf(id, sizeof id, "%04x", first->pci_device_id);
    out.findings.push_back(make_finding(inventory_findings(), "SKU_UNKNOWN", "node",
                                        "GPU model '" + first->name + "' (pci device id 0x" + id +
                                            ") is not in the SKU table; generic thresholds apply"));
  }
  const auto models = gpu_models(node);
  if (models.size() > 1) {
    std::string list;
    for (const auto& m : models) list += (list.empty() ? "" : ", ") + m;
    out.findings.push_back(
        make_finding(inventory_findings(), "MIXED_GPU_MODELS", "node", "GPU models: " + list));
  }
  if (!cuda_sees_none) {
    for (const auto& g : node.gpus) {
      if (g.cuda_ordinal < 0) {
        out.findings.push_back(
            make_finding(inventory_findings(), "GPU_NOT_VISIBLE_TO_CUDA", gpu_entity(g.index),
                         "NVML lists " + g.pci_bus_id + " but the CUDA runtime does not see it"));
      }
    }
  }
}

void judge_memory(const GpuReading& g, const Thresholds& th, InventoryJudgement& out) {
  const std::string e = gpu_entity(g.index);
  const double unc_max = th.get("inventory.ecc_uncorrectable_max");
  if (g.ecc_uncorrected_volatile && *g.ecc_uncorrected_volatile > unc_max) {
    out.findings.push_back(make_finding(inventory_findings(), "ECC_UNCORRECTABLE_VOLATILE", e,
                                        num(*g.ecc_uncorrected_volatile) +
                                            " uncorrectable ECC errors since the driver loaded")
                               .measured(*g.ecc_uncorrected_volatile, "count", unc_max));
  } else if (g.ecc_uncorrected_aggregate && *g.ecc_uncorrected_aggregate > 0) {
    out.findings.push_back(make_finding(inventory_findings(), "ECC_UNCORRECTABLE_AGGREGATE", e,
                                        num(*g.ecc_uncorrected_aggregate) +
                                            " uncorrectable ECC errors in the GPU's lifetime")
                               .measured(*g.ecc_uncorrected_aggregate, "count", 0));
  }
  const double corr_warn = th.get("inventory.ecc_correctable_warn");
  if (g.ecc_corrected_volatile && *g.ecc_corrected_volatile > corr_warn) {
    out.findings.push_back(make_finding(inventory_findings(), "ECC_CORRECTABLE_HIGH", e,
                                        num(*g.ecc_corrected_volatile) +
                                            " correctable ECC errors since the driver loaded")
                               .measured(*g.ecc_corrected_volatile, "count", corr_warn));
  }
  if (g.retired_pages_pending.value_or(false)) {
    out.findings.push_back(
        make_finding(inventory_findings(), "RETIRED_PAGES_PENDING", e, "page retirement pending"));
  }
  if (g.row_remap_failed.value_or(false)) {
    out.findings.push_back(
        make_finding(inventory_findings(), "ROW_REMAP_FAILED", e, "row remapping failed"));
  } else if (g.row_remap_pending.value_or(false)) {
    out.findings.push_back(
        make_finding(inventory_findings(), "ROW_REMAP_PENDING", e, "row remapping pending"));
  }
}

// NVML's GPU recovery action (nvmlDeviceGpuRecoveryAction_t), in the driver's words. 1, 3 and 4
// all end in a GPU reset (draining peer-to-peer traffic is stopping the processes a reset needs
// stopped anyway); 2 asks for a reboot, and so does any value preflight does not know, the
// heaviest recovery short of a repair. 5 to 7 are named in NVML newer than R580.
void judge_recovery_action(const GpuReading& g, InventoryJudgement& out) {
  if (!g.recovery_action || *g.recovery_action == 0) return;
  const int action = *g.recovery_action;
  std::string words;
  bool reset = true;
  switch (action) {
    case 1:
      words = "GPU reset (1)";
      break;
    case 2:
      words = "node reboot (2)";
      reset = false;
      break;
    case 3:
      words = "drain peer-to-peer (3)";
      break;
    case 4:
      words = "drain and reset (4)";
      break;
    case 5:
      words = "recovery action 5 (recover the IMEX domain)";
      reset = false;
      break;
    case 6:
      words = "recovery action 6 (reset the GPU's PCIe bus)";
      reset = false;
      break;
    case 7:
      words = "recovery action 7 (system reboot)";
      reset = false;
      break;
    default:
      words = "recovery action " + std::to_string(action);
      reset = false;
      break;
  }
  out.findings.push_back(make_finding(inventory_findings(),
                                      reset ? "GPU_RECOVERY_RESET" : "GPU_RECOVERY_REBOOT",
                                      gpu_entity(g.index), "the driver asks for: " + words));
}

void judge_pcie(const GpuReading& g, const Thresholds& th, InventoryJudgement& out) {
  std::vector<std::string> problems;
  const int want_gen = static_cast<int>(th.get("inventory.expected_pcie_gen"));
  const int want_width = static_cast<int>(th.get("inventory.expected_pcie_width"));
  if (g.pcie_gen_max_link && g.pcie_gen_max_gpu && *g.pcie_gen_max_link < *g.pcie_gen_max_gpu) {
    problems.push_back("link reaches Gen" + std::to_string(*g.pcie_gen_max_link) +
                       ", GPU supports Gen" + std::to_string(*g.pcie_gen_max_gpu));
  } else if (g.pcie_gen_max_link && want_gen > 0 && *g.pcie_gen_max_link < want_gen) {
    problems.push_back("link reaches Gen" + std::to_string(*g.pcie_gen_max_link) +
                       ", SKU needs Gen" + std::to_string(want_gen));
  }
  if (g.pcie_width_current && g.pcie_width_max && *g.pcie_width_current < *g.pcie_width_max) {
    problems.push_back("running x" + std::to_string(*g.pcie_width_current) + " of x" +
                       std::to_string(*g.pcie_width_max));
  } else if (g.pcie_width_current && want_width > 0 && *g.pcie_width_current < want_width) {
    problems.push_back("running x" + std::to_string(*g.pcie_width_current) + ", SKU needs x" +
                       std::to_string(want_width));
  }
  if (problems.empty()) return;
  std::string msg;
  for (const auto& p : problems) msg += (msg.empty() ? "" : "; ") + p;
  out.findings.push_back(
      make_finding(inventory_findings(), "PCIE_LINK_DEGRADED", gpu_entity(g.index), msg));
}

void judge_gpu(const GpuReading& g, const Thresholds& th, bool multi_gpu, InventoryJudgement& out) {
  const std::string e = gpu_entity(g.index);
  if (g.mig_enabled.value_or(false))
    out.findings.push_back(make_finding(inventory_findings(), "MIG_ENABLED", e, "MIG mode is on"));
  if (g.ecc_enabled && !*g.ecc_enabled)
    out.findings.push_back(make_finding(inventory_findings(), "ECC_DISABLED", e, "ECC is off"));
  if (g.persistence_enabled && !*g.persistence_enabled) {
    out.findings.push_back(
        make_finding(inventory_findings(), "PERSISTENCE_MODE_OFF", e, "persistence mode is off"));
  }
  judge_memory(g, th, out);
  judge_recovery_action(g, out);

  if (g.clock_event_reasons) {
    const auto mask = *g.clock_event_reasons;
    if (mask & kHardwareReasons) {
      out.findings.push_back(make_finding(
          inventory_findings(), "CLOCKS_THROTTLED_HW", e,
          "clocks held down at idle: " + describe_clock_events(mask & kHardwareReasons)));
    } else if (mask & kSwPowerCap) {
      out.findings.push_back(make_finding(inventory_findings(), "CLOCKS_THROTTLED_POWER_CAP", e,
                                          "clocks held down at idle: SW power cap"));
    }
  }
  if (g.temperature_c) {
    const double fail = th.get("inventory.temperature_fail_c");
    const double warn = th.get("inventory.temperature_warn_c");
    const double t = *g.temperature_c;
    if (t >= fail) {
      out.findings.push_back(
          make_finding(inventory_findings(), "TEMPERATURE_CRITICAL", e, num(t) + " C at idle")
              .measured(t, "C", fail));
    } else if (t >= warn) {
      out.findings.push_back(
          make_finding(inventory_findings(), "TEMPERATURE_HIGH", e, num(t) + " C at idle")
              .measured(t, "C", warn));
    }
  }
  judge_pcie(g, th, out);

  // A GPU alone in a node (or a VM) has no NVLink peer: its links are down by design.
  const double links = th.get("inventory.expected_nvlink_links");
  if (multi_gpu && links > 0 && g.nvlink_active && *g.nvlink_active < links) {
    out.findings.push_back(
        make_finding(inventory_findings(), "NVLINK_INACTIVE", e,
                     num(*g.nvlink_active) + " of " + num(links) + " NVLink links active")
            .measured(*g.nvlink_active, "links", links));
  }

  const double mem_fail = th.get("inventory.foreign_memory_fail_mib");
  if (g.foreign_memory_mib && *g.foreign_memory_mib > mem_fail) {
    out.findings.push_back(make_finding(inventory_findings(), "FOREIGN_MEMORY_HIGH", e,
                                        num(g.foreign_processes.value_or(0)) +
                                            " other processes hold " + num(*g.foreign_memory_mib) +
                                            " MiB")
                               .measured(*g.foreign_memory_mib, "MiB", mem_fail));
  } else if (g.foreign_processes && *g.foreign_processes > 0) {
    out.findings.push_back(make_finding(inventory_findings(), "FOREIGN_PROCESSES", e,
                                        num(*g.foreign_processes) + " other processes hold " +
                                            num(g.foreign_memory_mib.value_or(0)) + " MiB")
                               .measured(*g.foreign_processes, "processes", 0));
  }
  if (g.responsive && !*g.responsive) {
    out.findings.push_back(make_finding(inventory_findings(), "GPU_UNRESPONSIVE", e,
                                        "probe failed: " + g.probe_error));
  } else if (!g.responsive && !g.probe_error.empty()) {
    out.findings.push_back(
        make_finding(inventory_findings(), "GPU_NOT_PROBED", e, "probe not run: " + g.probe_error));
  }
  if (!g.read_errors.empty()) {
    std::string msg;
    for (std::size_t i = 0; i < g.read_errors.size() && i < 3; ++i) {
      msg += (msg.empty() ? "" : "; ") + g.read_errors[i];
    }
    if (g.read_errors.size() > 3) msg += "; +" + std::to_string(g.read_errors.size() - 3) + " more";
    out.findings.push_back(make_finding(inventory_findings(), "NVML_READ_ERROR", e, msg));
  }
}

void add_metrics(const NodeReading& node, InventoryJudgement& out) {
  const InventoryFigures& figures = inventory_figures();
  out.metrics.push_back(figures.gpu_count("", static_cast<double>(node.gpus.size())));
  if (node.pci_gpu_count) {
    out.metrics.push_back({"", "pci_gpu_count", static_cast<double>(*node.pci_gpu_count), "count"});
  }
  for (const auto& g : node.gpus) {
    const std::string entity = gpu_entity(g.index);
    const auto opt = [&](const Figure<0>& figure, auto value) {
      if (value) out.metrics.push_back(figure(entity, static_cast<double>(*value)));
    };
    opt(figures.temperature_c, g.temperature_c);
    opt(figures.pcie_gen_max_link, g.pcie_gen_max_link);
    opt(figures.pcie_width, g.pcie_width_current);
    opt(figures.nvlink_active, g.nvlink_active);
    opt(figures.ecc_corrected_volatile, g.ecc_corrected_volatile);
    opt(figures.ecc_uncorrected_volatile, g.ecc_uncorrected_volatile);
    if (g.responsive) out.metrics.push_back(figures.probe_ms(entity, g.probe_ms));
  }
}

}  // namespace

std::string describe_clock_events(std::uint64_t mask) {
  static const std::pair<std::uint64_t, const char*> names[] = {
      {kSwPowerCap, "SW power cap"},
      {kHwSlowdown, "HW slowdown"},
      {kSwThermalSlowdown, "SW thermal slowdown"},
      {kHwThermalSlowdown, "HW thermal slowdown"},
      {kHwPowerBrakeSlowdown, "HW power brake"}};
  std::string out;
  for (const auto& [bit, name] : names) {
    if (mask & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

InventoryJudgement judge_inventory(const NodeReading& node, const Thresholds& thresholds,
                                   const NodeExpectations& expect) {
  InventoryJudgement out;
  judge_count(node, expect, out);
  add_metrics(node, out);
  if (node.gpus.empty()) {
    out.summary =
        expect.gpus == 0 ? "no GPU (accepted: --expect-gpus 0)" : "no GPU or driver visible";
    return out;
  }
  judge_software(node, thresholds, out);
  for (const auto& g : node.gpus) judge_gpu(g, thresholds, node.gpus.size() > 1, out);

  const auto models = gpu_models(node);
  out.summary = std::to_string(node.gpus.size()) + " x " +
                (models.empty() ? std::string("unidentified GPU") : models.front()) +
                (models.size() > 1 ? " (mixed)" : "");
  if (!node.driver_version.empty()) out.summary += ", driver " + node.driver_version;
  return out;
}

}  // namespace preflight
