#include "preflight/figures.hpp"

#include <cctype>

namespace preflight {

namespace {

std::vector<std::string> segments(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = text.find('.', start);
    out.push_back(text.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

bool is_placeholder(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

// "gpu3" -> "3" under the label "gpu"; nullopt when the entity is not a GPU's. Other labels take
// the entity as it is.
std::optional<std::string> entity_label_value(const std::string& label, const std::string& entity) {
  if (entity.empty()) return std::nullopt;
  if (label != "gpu") return entity;
  if (entity.size() <= 3 || entity.compare(0, 3, "gpu") != 0) return std::nullopt;
  for (std::size_t i = 3; i < entity.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(entity[i]))) return std::nullopt;
  }
  return entity.substr(3);
}

}  // namespace

const CheckFigures* figures_of(const FigureCatalogue& catalogue, const std::string& check) {
  for (const CheckFigures& c : catalogue) {
    if (c.check == check) return &c;
  }
  return nullptr;
}

std::optional<Labels> match_metric_name(const std::string& pattern, const std::string& name) {
  const std::vector<std::string> want = segments(pattern);
  const std::vector<std::string> have = segments(name);
  if (want.size() != have.size()) return std::nullopt;
  Labels labels;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (is_placeholder(want[i])) {
      if (have[i].empty()) return std::nullopt;
      labels.emplace_back(want[i].substr(1, want[i].size() - 2), have[i]);
    } else if (want[i] != have[i]) {
      return std::nullopt;
    }
  }
  return labels;
}

std::optional<Labels> figure_labels(const FigureExport& figure, const Metric& metric) {
  const auto named = match_metric_name(figure.metric, metric.name);
  if (!named) return std::nullopt;
  Labels labels;
  if (figure.entity_labels.empty()) {
    if (!metric.entity.empty()) return std::nullopt;
  } else if (figure.entity_labels.size() == 1) {
    const auto value = entity_label_value(figure.entity_labels[0], metric.entity);
    if (!value) return std::nullopt;
    labels.emplace_back(figure.entity_labels[0], *value);
  } else {
    const std::size_t dash = metric.entity.find('-');
    if (dash == std::string::npos || metric.entity.find('-', dash + 1) != std::string::npos) {
      return std::nullopt;
    }
    const auto a = entity_label_value(figure.entity_labels[0], metric.entity.substr(0, dash));
    const auto b = entity_label_value(figure.entity_labels[1], metric.entity.substr(dash + 1));
    if (!a || !b) return std::nullopt;
    labels.emplace_back(figure.entity_labels[0], *a);
    labels.emplace_back(figure.entity_labels[1], *b);
  }
  labels.insert(labels.end(), figure.fixed_labels.begin(), figure.fixed_labels.end());
  labels.insert(labels.end(), named->begin(), named->end());
  return labels;
}

std::vector<std::string> pattern_labels(const std::string& pattern) {
  std::vector<std::string> names;
  for (const std::string& segment : segments(pattern)) {
    if (is_placeholder(segment)) names.push_back(segment.substr(1, segment.size() - 2));
  }
  return names;
}

std::optional<BaseUnit> base_unit_of(const std::string& unit) {
  if (unit == "GB/s") return BaseUnit{"_bytes_per_second", 1e9};
  if (unit == "Gb/s") return BaseUnit{"_bits_per_second", 1e9};
  if (unit == "MHz") return BaseUnit{"_hertz", 1e6};
  if (unit == "ms") return BaseUnit{"_seconds", 1e-3};
  if (unit == "C") return BaseUnit{"_celsius", 1};
  if (unit == "W") return BaseUnit{"_watts", 1};
  return std::nullopt;
}

std::string with_labels(std::string pattern, const Labels& labels) {
  for (const auto& [name, value] : labels) {
    const std::string placeholder = "{" + name + "}";
    for (std::size_t at = pattern.find(placeholder); at != std::string::npos;
         at = pattern.find(placeholder, at + value.size())) {
      pattern.replace(at, placeholder.size(), value);
    }
  }
  return pattern;
}

}  // namespace preflight
