#include "checks/gemm/gemm_figures.hpp"

namespace preflight {

GemmFigures::GemmFigures()
    : tflops_median(Figure<1>("{dtype}.tflops_median", "TFLOP/s",
                              "median TFLOP/s of the verified matrix products")
                        .per({"gpu"})
                        .exported_as("preflight_gemm_tflops")
                        .feeds("gemm_{dtype}_tflops")
                        .limited()),
      tflops_min("{dtype}.tflops_min", "TFLOP/s", "slowest verified matrix product"),
      tflops_max("{dtype}.tflops_max", "TFLOP/s", "fastest verified matrix product"),
      node_median_tflops(Figure<1>("{dtype}.node_median_tflops", "TFLOP/s",
                                   "median over the node's GPUs of their median TFLOP/s")
                             .exported_as("preflight_gemm_node_median_tflops")),
      sm_clock_mhz_median(
          Figure<1>("{dtype}.sm_clock_mhz_median", "MHz", "median SM clock during the products")
              .per({"gpu"})
              .exported_as("preflight_gemm_sm_clock_hertz")),
      power_w_median(
          Figure<1>("{dtype}.power_w_median", "W", "median board power during the products")
              .per({"gpu"})
              .exported_as("preflight_gemm_power_watts")),
      temperature_c_max(
          Figure<1>("{dtype}.temperature_c_max", "C", "highest GPU temperature during the products")
              .per({"gpu"})
              .exported_as("preflight_gemm_temperature_max_celsius")) {}

std::vector<FigureExport> GemmFigures::exports() const {
  return {tflops_median.spec(), node_median_tflops.spec(), sm_clock_mhz_median.spec(),
          power_w_median.spec(), temperature_c_max.spec()};
}

BarChartSpec GemmFigures::bars() const {
  return {"GEMM speed per GPU",
          "Bar: median TFLOP/s over the products; black line: minimum to maximum; dashed line: "
          "node median. Blue: no gemm finding on the GPU for the dtype; amber or red: its worst "
          "is warn or fail.",
          "dtype",
          tflops_median.metric(),
          tflops_min.metric(),
          tflops_max.metric(),
          node_median_tflops.metric(),
          tflops_median.unit()};
}

const GemmFigures& gemm_figures() {
  static const GemmFigures figures;
  return figures;
}

}  // namespace preflight
