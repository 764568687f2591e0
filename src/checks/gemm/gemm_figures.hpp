#pragma once
// The gemm check's figures, declared once (gemm_figures.cpp): what the judgement records per GPU
// and dtype through these handles, and what CheckInfo::figures exports and the page draws.
#include <vector>

#include "preflight/figures.hpp"

namespace preflight {

struct GemmFigures {
  GemmFigures();
  Figure<1> tflops_median;  // per GPU and dtype: the key figure, and the fleet's
  Figure<1> tflops_min;     // the bars' range
  Figure<1> tflops_max;
  Figure<1> node_median_tflops;  // over the node's GPUs
  Figure<1> sm_clock_mhz_median;
  Figure<1> power_w_median;
  Figure<1> temperature_c_max;

  std::vector<FigureExport> exports() const;
  BarChartSpec bars() const;
};

const GemmFigures& gemm_figures();

}  // namespace preflight
