#pragma once
// The nvlink check's key figure, declared once (nvlink_figures.cpp): what run() records through
// this handle and what CheckInfo::figures exports.
#include <vector>

#include "preflight/figures.hpp"

namespace preflight {

struct NvlinkFigures {
  NvlinkFigures();
  Figure<0> unidirectional_min_gbps;  // the node's slowest GPU pair

  std::vector<FigureExport> exports() const;
};

const NvlinkFigures& nvlink_figures();

}  // namespace preflight
