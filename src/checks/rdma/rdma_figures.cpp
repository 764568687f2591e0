#include "checks/rdma/rdma_figures.hpp"

#include <stdexcept>
#include <string>

namespace preflight {

RdmaFigures::RdmaFigures()
    : rate_gbps(Figure<0>("rate_gbps", "Gb/s", "RDMA port rate")
                    .per({"port"})
                    .exported_as("preflight_rdma_port_rate_bits_per_second")),
      loopback_gbps(
          Figure<0>("loopback_gbps", "Gb/s", "verified RDMA write bandwidth of a port to itself")
              .per({"port"})
              .exported_as("preflight_rdma_loopback_bits_per_second")
              .limited()),
      pair_gbps(Figure<0>("pair_gbps", "Gb/s", "verified RDMA write bandwidth between NICs")
                    .per({"src", "dst"})
                    .exported_as("preflight_rdma_pair_bits_per_second")
                    .limited()),
      gpudirect_gbps(
          Figure<0>("gpudirect_gbps", "Gb/s",
                    "verified RDMA write bandwidth from the NIC into its nearest GPU's memory")
              .per({"nic"})
              .exported_as("preflight_rdma_gpudirect_bits_per_second")
              .limited()) {}

const Figure<0>& RdmaFigures::transfer(std::string_view kind) const {
  if (kind == "loopback") return loopback_gbps;
  if (kind == "pair") return pair_gbps;
  if (kind == "gpudirect") return gpudirect_gbps;
  throw std::logic_error("rdma figures: no transfer kind " + std::string(kind));
}

std::vector<FigureExport> RdmaFigures::exports() const {
  return {rate_gbps.spec(), loopback_gbps.spec(), pair_gbps.spec(), gpudirect_gbps.spec()};
}

const RdmaFigures& rdma_figures() {
  static const RdmaFigures figures;
  return figures;
}

}  // namespace preflight
