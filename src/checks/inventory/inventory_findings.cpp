// The inventory check's finding codes. docs/checks/inventory.md, "Finding codes", lists the same
// codes (tests/unit/test_catalogue.cpp keeps the two in step). Codes are stable: admins grep for
// them and drain reasons carry them.
#include "checks/inventory/inventory_findings.hpp"

namespace preflight {

const FindingTable& inventory_findings() {
  static const FindingTable table{
      "inventory",
      "docs/checks/inventory.md",
      {
          {"NO_GPU_VISIBLE", Severity::fail, Action::reboot,
           "No GPU is visible: the NVIDIA driver is not loaded or not installed, or no GPU "
           "answers.",
           "Check nvidia-smi, lsmod | grep nvidia and dmesg; reboot the node to load the driver "
           "and bring the GPUs up; if none appears, install the driver or service the node; if "
           "the node has no GPUs, run with --expect-gpus 0."},
          {"NO_GPU_EXPECTED", Severity::info, Action::none,
           "No GPU is visible, which --expect-gpus 0 accepts; GPU checks are skipped.",
           "None needed."},
          {"GPU_COUNT_MISMATCH", Severity::fail, Action::reboot,
           "The number of GPUs visible differs from --expect-gpus (a GPU fell off the bus, or the "
           "expectation is wrong).",
           "Compare nvidia-smi -L and lspci | grep -i nvidia; reboot the node to bring a missing "
           "GPU back, and service it if it stays missing (or correct --expect-gpus)."},
          {"GPU_MISSING_FROM_DRIVER", Severity::fail, Action::reboot,
           "The PCI bus shows more NVIDIA GPUs than the driver lists: a GPU has fallen off the "
           "bus or failed to initialise.",
           "Check dmesg for Xid 79 (fallen off the bus) or RmInitAdapter failures; reboot the "
           "node (the driver cannot reset a GPU it does not list); service the GPU if it does "
           "not come back."},
          {"NVML_UNAVAILABLE", Severity::warn, Action::none,
           "GPUs are visible to CUDA but NVML could not be loaded, so their health could not be "
           "read.",
           "Install the driver's NVML library (libnvidia-ml.so.1) or set PREFLIGHT_NVML_LIBRARY "
           "to its path."},
          {"CUDA_DRIVER_TOO_OLD", Severity::fail, Action::none,
           "The NVIDIA driver supports an older CUDA than this preflight package was built with, "
           "so no GPU can be used by it. A tool-installation problem, not a node fault: exit 3.",
           "Install the preflight package built for the driver's CUDA (preflight-cuda12 for R525 "
           "to R575 drivers), or NVIDIA's forward-compatibility package (cuda-compat-13-0), or "
           "update the driver to the branch the message names (docs/install.md).",
           Blame::tool},
          {"CUDA_UNAVAILABLE", Severity::fail, Action::service,
           "NVML sees GPUs but the CUDA runtime cannot use them (driver too old for this build, "
           "or a broken installation).",
           "Check the CUDA driver version against the runtime preflight was built with; update "
           "the driver or reinstall it."},
          {"GPU_NOT_VISIBLE_TO_CUDA", Severity::fail, Action::reset_gpu,
           "NVML lists this GPU but CUDA does not see it, so no workload can use it.",
           "Unset CUDA_VISIBLE_DEVICES for preflight; otherwise check dmesg for Xid errors and "
           "reset the GPU."},
          {"NVML_READ_ERROR", Severity::warn, Action::none,
           "An NVML query on this GPU failed with an error other than not-supported, so a health "
           "reading is missing.",
           "Run nvidia-smi -q on the GPU; persistent errors point at a driver or GPU fault."},
          {"SKU_UNKNOWN", Severity::warn, Action::none,
           "The GPU model is not in preflight's SKU table; generic thresholds are used.",
           "Provide thresholds for this model with --thresholds FILE (see docs/thresholds.md)."},
          {"MIXED_GPU_MODELS", Severity::warn, Action::none,
           "The node has GPUs of more than one model; thresholds follow the first GPU.",
           "Confirm the node is meant to be mixed; otherwise a GPU was swapped for the wrong "
           "part."},
          {"MIG_ENABLED", Severity::fail, Action::reset_gpu,
           "MIG mode is enabled on this GPU, so a training job cannot use it whole.",
           "Disable MIG: nvidia-smi -i <gpu> -mig 0, then reset the GPU."},
          {"ECC_DISABLED", Severity::fail, Action::reset_gpu,
           "ECC is disabled on this GPU, so memory errors go undetected.",
           "Enable ECC: nvidia-smi -i <gpu> -e 1, then reset the GPU (or reboot) so that the "
           "mode takes effect."},
          {"PERSISTENCE_MODE_OFF", Severity::warn, Action::none,
           "Persistence mode is off: the driver tears down GPU state between jobs, which slows "
           "job start and hides some errors.",
           "Run nvidia-persistenced (preferred) or nvidia-smi -pm 1."},
          {"ECC_UNCORRECTABLE_VOLATILE", Severity::fail, Action::reset_gpu,
           "Uncorrectable ECC errors occurred since the driver was loaded; data on this GPU may "
           "be corrupt.",
           "Drain the node; reset the GPU so row remapping can take effect; if errors return, "
           "RMA."},
          {"ECC_UNCORRECTABLE_AGGREGATE", Severity::warn, Action::none,
           "This GPU has had uncorrectable ECC errors in its lifetime (none since the driver "
           "loaded).",
           "Watch the count; check row remapping status with nvidia-smi -q -d ROW_REMAPPER."},
          {"ECC_CORRECTABLE_HIGH", Severity::warn, Action::none,
           "Correctable ECC errors since the driver loaded exceed the threshold, a sign of "
           "weakening memory.",
           "Watch the trend; run the hbm check in the burnin profile; RMA if it keeps rising."},
          {"RETIRED_PAGES_PENDING", Severity::fail, Action::reset_gpu,
           "Memory pages are pending retirement; they take effect only after a GPU reset.",
           "Reset the GPU (nvidia-smi -r) or reboot the node, then rerun preflight."},
          {"ROW_REMAP_PENDING", Severity::fail, Action::reset_gpu,
           "A memory row remapping is pending; it takes effect only after a GPU reset.",
           "Reset the GPU (nvidia-smi -r) or reboot the node, then rerun preflight."},
          {"ROW_REMAP_FAILED", Severity::fail, Action::service,
           "Row remapping failed: the GPU has run out of spare rows for bad memory.",
           "Drain the node and RMA the GPU."},
          {"GPU_RECOVERY_RESET", Severity::fail, Action::reset_gpu,
           "The driver's own verdict (NVML's GPU recovery action) is that this GPU must be reset: "
           "it met a fault, such as an uncorrectable error, that only a reset clears (the "
           "message names the action: GPU reset, drain peer-to-peer, or drain and reset).",
           "Stop every process on the GPU (with peer-to-peer traffic, on its peers too, and "
           "disable UVM persistence mode), reset the GPU (nvidia-smi -r -i <gpu>) or reboot, "
           "then rerun preflight; check dmesg for the Xid behind it."},
          {"GPU_RECOVERY_REBOOT", Severity::fail, Action::reboot,
           "The driver's own verdict (NVML's GPU recovery action) is that the node must be "
           "rebooted: the GPU met a fault that may have left the operating system inconsistent "
           "(or the driver asks for an action preflight does not know).",
           "Drain the node and reboot it, then rerun preflight; check dmesg for the Xid behind "
           "it, and service the GPU if the driver asks again."},
          {"CLOCKS_THROTTLED_HW", Severity::fail, Action::service,
           "Clocks are held down by hardware slowdown, thermal slowdown or power brake while the "
           "GPU is idle.",
           "Check cooling, fans and power supplies; nvidia-smi -q -d PERFORMANCE shows the "
           "reason."},
          {"CLOCKS_THROTTLED_POWER_CAP", Severity::warn, Action::none,
           "Clocks are held down by the software power cap while the GPU is idle.",
           "Check the power limit (nvidia-smi -q -d POWER) against the SKU's default."},
          {"TEMPERATURE_HIGH", Severity::warn, Action::none,
           "The idle GPU is hotter than the warning threshold.",
           "Check airflow, fans and inlet temperature before the GPU reaches its slowdown "
           "temperature under load."},
          {"TEMPERATURE_CRITICAL", Severity::fail, Action::service,
           "The idle GPU is hotter than the failure threshold.",
           "Drain the node and fix cooling; a GPU this hot at idle will throttle under load."},
          {"PCIE_LINK_DEGRADED", Severity::fail, Action::service,
           "The GPU's PCIe link runs below what the GPU supports or the SKU requires (generation "
           "or width).",
           "Reseat the GPU or riser, check the slot and BIOS PCIe settings; lspci -vv shows "
           "LnkSta against LnkCap."},
          {"NVLINK_INACTIVE", Severity::fail, Action::reset_gpu,
           "Fewer NVLink links are active on this GPU than the SKU has; peer traffic will be slow "
           "or fall back to PCIe.",
           "Check nvidia-smi nvlink -s and the fabric manager service; reset the GPUs or service "
           "the baseboard."},
          {"FOREIGN_PROCESSES", Severity::warn, Action::none,
           "Other processes hold a context on this GPU before the job starts.",
           "Find them with nvidia-smi; stale processes from an earlier job should be killed."},
          {"FOREIGN_MEMORY_HIGH", Severity::fail, Action::reset_gpu,
           "Other processes hold more GPU memory than the threshold; the next job may run out of "
           "memory.",
           "Kill the processes nvidia-smi lists (left over from an earlier job), then reset the "
           "GPU to free memory they still hold."},
          {"GPU_UNRESPONSIVE", Severity::fail, Action::reset_gpu,
           "A small kernel and copy on this GPU failed, returned wrong data, or did not complete "
           "in time, or the driver did not return from context creation or allocation.",
           "Check dmesg for Xid errors; reset the GPU or reboot; RMA if it repeats."},
          {"GPU_NOT_PROBED", Severity::warn, Action::none,
           "The responsiveness probe did not run on this GPU, or was cut short, because the "
           "check's time ran out before the probe's own timeout, so the GPU is unverified.",
           "Give the run a longer --timeout, then rerun."},
      }};
  return table;
}

}  // namespace preflight
