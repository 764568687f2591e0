#pragma once
// The inventory check's key figures, declared once (inventory_figures.cpp): what its judgement
// records through these handles and what CheckInfo::figures exports.
#include <vector>

#include "preflight/figures.hpp"

namespace preflight {

struct InventoryFigures {
  InventoryFigures();
  Figure<0> gpu_count;      // the node's
  Figure<0> temperature_c;  // the rest per GPU
  Figure<0> pcie_gen_max_link;
  Figure<0> pcie_width;
  Figure<0> nvlink_active;
  Figure<0> ecc_corrected_volatile;
  Figure<0> ecc_uncorrected_volatile;
  Figure<0> probe_ms;

  std::vector<FigureExport> exports() const;
};

const InventoryFigures& inventory_figures();

}  // namespace preflight
