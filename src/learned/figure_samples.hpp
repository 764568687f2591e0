#pragma once
// The figures with a limit (FigureExport::limited) a verdict recorded: what `preflight
// baseline` learns from and what `--history` follows.
#include <string>
#include <vector>

#include "preflight/figures.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

struct FigureSample {
  std::string check;   // "gemm"
  std::string entity;  // "gpu3"; empty: the node
  std::string metric;  // "bf16.tflops_median"
  std::string unit;    // "TFLOP/s"
  double value = 0;
  // "gemm gpu3 bf16.tflops_median" (a node figure: "nvlink unidirectional_min_gbps").
  std::string key() const;
};

// The limited figures of the verdict's top-level checks (a repeated run: its reported pass),
// in check and metric order; checks that were skipped or did not run give none. Non-finite or
// non-positive values are left out.
std::vector<FigureSample> limited_figures(const Verdict& verdict, const FigureCatalogue& catalogue);

}  // namespace preflight
