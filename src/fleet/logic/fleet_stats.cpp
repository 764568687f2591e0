#include "fleet/logic/fleet_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>

#include "model/stats.hpp"

namespace preflight {

namespace {

constexpr std::size_t kMinNodes = 3;  // with two nodes there is no majority to compare with

struct Sample {
  int node = 0;
  double value = 0;
};

}  // namespace

double log_spread(const std::vector<double>& values) {
  if (values.empty()) return 0;
  std::vector<double> logs;
  for (double v : values) logs.push_back(std::log(v));
  const double centre = summarize(logs).median;
  std::vector<double> deviations;
  for (double l : logs) deviations.push_back(std::fabs(l - centre));
  return kMadToSigma * summarize(deviations).median;
}

std::vector<FigureStraggler> figure_stragglers(
    const std::vector<std::vector<std::pair<std::string, double>>>& figures_per_node,
    double min_percent, double mad_k) {
  // figure -> node -> the node's lowest value for it
  std::map<std::string, std::map<int, double>> by_figure;
  for (std::size_t n = 0; n < figures_per_node.size(); ++n) {
    for (const auto& [name, value] : figures_per_node[n]) {
      if (!std::isfinite(value)) continue;  // not measured
      auto& per_node = by_figure[name];
      const auto [it, inserted] = per_node.emplace(static_cast<int>(n), value);
      if (!inserted) it->second = std::min(it->second, value);
    }
  }

  std::vector<FigureStraggler> out;
  for (const auto& [name, per_node] : by_figure) {
    if (per_node.size() < kMinNodes) continue;
    std::vector<double> values;
    for (const auto& [node, value] : per_node) values.push_back(value);
    const double median = summarize(values).median;
    if (!(median > 0)) continue;  // a percentage of nothing says nothing
    std::vector<double> deviations;
    for (double v : values) deviations.push_back(std::fabs(v - median));
    const double sigma = kMadToSigma * summarize(deviations).median;
    const double floor = median * (1.0 - min_percent / 100.0);
    for (const auto& [node, value] : per_node) {
      if (value < floor && median - value > mad_k * sigma) {
        out.push_back({node, name, value, median, 100.0 * (median - value) / median});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const FigureStraggler& a, const FigureStraggler& b) {
    return std::tie(a.node, a.figure) < std::tie(b.node, b.figure);
  });
  return out;
}

std::string describe_straggler(const FigureStraggler& s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, " %.1f%% below the fleet median (%.1f vs %.1f)", s.percent_below,
                s.value, s.median);
  return s.figure + buf;
}

}  // namespace preflight
