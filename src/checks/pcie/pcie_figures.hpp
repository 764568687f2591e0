#pragma once
// The pcie check's key figures, declared once (pcie_figures.cpp): what run() records through
// these handles and what CheckInfo::figures exports. One per direction ("h2d", "d2h", "bidir"),
// each GPU alone and all GPUs at once.
#include <string_view>
#include <vector>

#include "preflight/figures.hpp"

namespace preflight {

struct PcieFigures {
  PcieFigures();
  // Throws std::logic_error for a direction other than h2d, d2h, bidir.
  const Figure<0>& alone(std::string_view direction) const;
  const Figure<0>& all_at_once(std::string_view direction) const;

  std::vector<FigureExport> exports() const;

 private:
  std::vector<Figure<0>> alone_;  // h2d, d2h, bidir
  std::vector<Figure<0>> all_at_once_;
};

const PcieFigures& pcie_figures();

}  // namespace preflight
