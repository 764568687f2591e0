#include "checks/nvlink/nvlink_figures.hpp"

namespace preflight {

NvlinkFigures::NvlinkFigures()
    : unidirectional_min_gbps(Figure<0>("unidirectional_min_gbps", "GB/s",
                                        "slowest GPU pair's unidirectional copy bandwidth")
                                  .exported_as("preflight_nvlink_min_bandwidth_bytes_per_second")
                                  .feeds("nvlink_gbps")
                                  .limited()) {}

std::vector<FigureExport> NvlinkFigures::exports() const {
  return {unidirectional_min_gbps.spec()};
}

const NvlinkFigures& nvlink_figures() {
  static const NvlinkFigures figures;
  return figures;
}

}  // namespace preflight
