#pragma once
// The nccl check's key figure, declared once (nccl_figures.cpp): what run() records through this
// handle and what CheckInfo::figures exports.
#include <vector>

#include "preflight/figures.hpp"

namespace preflight {

struct NcclFigures {
  NcclFigures();
  Figure<2> busbw_gbps;  // per collective ("{op}") and message size ("{bytes}")

  std::vector<FigureExport> exports() const;
};

const NcclFigures& nccl_figures();

}  // namespace preflight
