#pragma once
// The hbm check's key figures, declared once (hbm_figures.cpp): what run() records through these
// handles and what CheckInfo::figures exports.
#include <vector>

#include "preflight/figures.hpp"

namespace preflight {

struct HbmFigures {
  HbmFigures();
  Figure<0> traffic_gbps;       // per GPU: read + write traffic of the device-local copies
  Figure<0> pattern_bad_words;  // per GPU: words that read back wrong

  std::vector<FigureExport> exports() const;
};

const HbmFigures& hbm_figures();

}  // namespace preflight
