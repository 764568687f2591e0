#pragma once
// The rdma check's key figures, declared once (rdma_figures.cpp): what run() records through
// these handles and what CheckInfo::figures exports.
#include <string_view>
#include <vector>

#include "preflight/figures.hpp"

namespace preflight {

struct RdmaFigures {
  RdmaFigures();
  Figure<0> rate_gbps;       // per port: the rate it trained to
  Figure<0> loopback_gbps;   // per port: verified writes to itself
  Figure<0> pair_gbps;       // per NIC pair
  Figure<0> gpudirect_gbps;  // per NIC: into its nearest GPU's memory

  // The figure of a transfer kind ("loopback", "pair", "gpudirect"); throws std::logic_error
  // for another.
  const Figure<0>& transfer(std::string_view kind) const;
  std::vector<FigureExport> exports() const;
};

const RdmaFigures& rdma_figures();

}  // namespace preflight
