#include "checks/inventory/inventory_figures.hpp"

namespace preflight {

InventoryFigures::InventoryFigures()
    : gpu_count(
          Figure<0>("gpu_count", "count", "GPUs the driver lists").exported_as("preflight_gpus")),
      temperature_c(Figure<0>("temperature_c", "C", "GPU temperature at the start of the run")
                        .per({"gpu"})
                        .exported_as("preflight_gpu_temperature_celsius")),
      pcie_gen_max_link(Figure<0>("pcie_gen_max_link", "generation",
                                  "highest PCIe generation the GPU's link can train to")
                            .per({"gpu"})
                            .exported_as("preflight_gpu_pcie_generation_max")),
      pcie_width(Figure<0>("pcie_width", "lanes", "current PCIe link width")
                     .per({"gpu"})
                     .exported_as("preflight_gpu_pcie_width_lanes")),
      nvlink_active(Figure<0>("nvlink_active", "links", "NVLink links up")
                        .per({"gpu"})
                        .exported_as("preflight_gpu_nvlink_active_links")),
      ecc_corrected_volatile(Figure<0>("ecc_corrected_volatile", "count",
                                       "correctable ECC errors since the driver loaded")
                                 .per({"gpu"})
                                 .exported_as("preflight_gpu_ecc_corrected_volatile_errors")),
      ecc_uncorrected_volatile(Figure<0>("ecc_uncorrected_volatile", "count",
                                         "uncorrectable ECC errors since the driver loaded")
                                   .per({"gpu"})
                                   .exported_as("preflight_gpu_ecc_uncorrected_volatile_errors")),
      probe_ms(
          Figure<0>("probe_ms", "ms", "time of the responsiveness probe (context, kernel, copy)")
              .per({"gpu"})
              .exported_as("preflight_gpu_probe_seconds")) {}

// In the order the exposition lists them.
std::vector<FigureExport> InventoryFigures::exports() const {
  return {gpu_count.spec(),
          temperature_c.spec(),
          ecc_corrected_volatile.spec(),
          ecc_uncorrected_volatile.spec(),
          pcie_gen_max_link.spec(),
          pcie_width.spec(),
          nvlink_active.spec(),
          probe_ms.spec()};
}

const InventoryFigures& inventory_figures() {
  static const InventoryFigures figures;
  return figures;
}

}  // namespace preflight
