#include "checks/pcie/pcie_figures.hpp"

#include <array>
#include <stdexcept>
#include <string>

namespace preflight {
namespace {

constexpr std::array<std::string_view, 3> kDirections = {"h2d", "d2h", "bidir"};

std::size_t direction_index(std::string_view direction) {
  for (std::size_t i = 0; i < kDirections.size(); ++i) {
    if (kDirections[i] == direction) return i;
  }
  throw std::logic_error("pcie figures: no direction " + std::string(direction));
}

}  // namespace

PcieFigures::PcieFigures() {
  for (std::string_view d : kDirections) {
    const std::string direction(d);
    // Only the one-GPU-at-a-time figures feed the fleet, one-direction ones: the all-at-once
    // ones depend on how many GPUs share a switch.
    alone_.push_back(Figure<0>(direction + "_gbps", "GB/s",
                               "verified host<->GPU copy bandwidth, one GPU at a time")
                         .per({"gpu"})
                         .with_fixed({{"direction", direction}})
                         .exported_as("preflight_pcie_bandwidth_bytes_per_second")
                         .feeds(direction == "bidir" ? "" : "pcie_" + direction + "_gbps")
                         .limited());
    all_at_once_.push_back(
        Figure<0>(direction + "_all_gbps", "GB/s",
                  "verified host<->GPU copy bandwidth with every GPU copying at once")
            .per({"gpu"})
            .with_fixed({{"direction", direction}})
            .exported_as("preflight_pcie_concurrent_bandwidth_bytes_per_second"));
  }
}

const Figure<0>& PcieFigures::alone(std::string_view direction) const {
  return alone_.at(direction_index(direction));
}

const Figure<0>& PcieFigures::all_at_once(std::string_view direction) const {
  return all_at_once_.at(direction_index(direction));
}

std::vector<FigureExport> PcieFigures::exports() const {
  std::vector<FigureExport> out;
  for (const auto& f : alone_) out.push_back(f.spec());
  for (const auto& f : all_at_once_) out.push_back(f.spec());
  return out;
}

const PcieFigures& pcie_figures() {
  static const PcieFigures figures;
  return figures;
}

}  // namespace preflight
