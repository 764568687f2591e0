#include "checks/hbm/hbm_figures.hpp"

namespace preflight {

HbmFigures::HbmFigures()
    : traffic_gbps(Figure<0>("hbm_traffic_gbps", "GB/s",
                             "GPU memory traffic of verified device-to-device copies")
                       .per({"gpu"})
                       .exported_as("preflight_hbm_bandwidth_bytes_per_second")
                       .feeds("hbm_gbps")
                       .limited()),
      pattern_bad_words(Figure<0>("pattern_bad_words", "count",
                                  "words of GPU memory that read back wrong in the pattern test")
                            .per({"gpu"})
                            .exported_as("preflight_hbm_pattern_bad_words")) {}

std::vector<FigureExport> HbmFigures::exports() const {
  return {traffic_gbps.spec(), pattern_bad_words.spec()};
}

const HbmFigures& hbm_figures() {
  static const HbmFigures figures;
  return figures;
}

}  // namespace preflight
