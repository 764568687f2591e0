#include "learned/figure_samples.hpp"

#include <cmath>
#include <optional>
#include <utility>

namespace preflight {

namespace {

std::size_t segment_count(const std::string& name) {
  std::size_t count = 1;
  for (const char c : name) count += c == '.' ? 1 : 0;
  return count;
}

// A metric's entity and name. A metric measured in this process has them apart; one read back
// from a verdict file has its whole key "<entity>.<name>" as the name (verdict_reader.cpp), and
// an entity may itself hold dots (a PCI address), so the key is split by the pattern: its last
// segments are the name.
std::optional<std::pair<std::string, std::string>> entity_and_name(const Metric& metric,
                                                                   const FigureExport& figure) {
  const bool per_entity = !figure.entity_labels.empty();
  if (!metric.entity.empty()) {
    if (!per_entity) return std::nullopt;
    return std::make_pair(metric.entity, metric.name);
  }
  if (!per_entity) return std::make_pair(std::string(), metric.name);
  const std::size_t name_segments = segment_count(figure.metric);
  const std::size_t key_segments = segment_count(metric.name);
  if (key_segments <= name_segments) return std::nullopt;  // no room for an entity
  std::size_t dot = metric.name.size();
  for (std::size_t i = 0; i < name_segments; ++i) dot = metric.name.rfind('.', dot - 1);
  if (dot == 0) return std::nullopt;  // ".bf16.tflops_median": an empty entity
  return std::make_pair(metric.name.substr(0, dot), metric.name.substr(dot + 1));
}

}  // namespace

std::string FigureSample::key() const {
  return entity.empty() ? check + " " + metric : check + " " + entity + " " + metric;
}

std::vector<FigureSample> limited_figures(const Verdict& verdict,
                                          const FigureCatalogue& catalogue) {
  std::vector<FigureSample> out;
  for (const CheckResult& check : verdict.checks) {
    // A skipped check (or one the run never reached) measured nothing worth learning from.
    if (check.status == Status::skip || check.metrics.empty()) continue;
    const CheckFigures* declared = figures_of(catalogue, check.name);
    if (declared == nullptr) continue;
    for (const Metric& metric : check.metrics) {
      if (!std::isfinite(metric.value) || metric.value <= 0) continue;
      for (const FigureExport& figure : declared->exports) {
        if (!figure.limited) continue;
        const auto split = entity_and_name(metric, figure);
        if (!split || !match_metric_name(figure.metric, split->second)) continue;
        FigureSample sample;
        sample.check = check.name;
        sample.entity = split->first;
        sample.metric = split->second;
        sample.unit = metric.unit.empty() ? figure.unit : metric.unit;
        sample.value = metric.value;
        out.push_back(std::move(sample));
        break;  // one figure per metric, whatever else would match it
      }
    }
  }
  return out;
}

}  // namespace preflight
