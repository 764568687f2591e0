#include "checks/nccl/nccl_figures.hpp"

namespace preflight {

NcclFigures::NcclFigures()
    : busbw_gbps(
          Figure<2>("{op}.{bytes}.busbw_gbps", "GB/s",
                    "bus bandwidth of the node's verified collective (nccl-tests' definition)")
              .exported_as("preflight_nccl_busbw_bytes_per_second")
              .limited()) {}

std::vector<FigureExport> NcclFigures::exports() const {
  return {busbw_gbps.spec()};
}

const NcclFigures& nccl_figures() {
  static const NcclFigures figures;
  return figures;
}

}  // namespace preflight
