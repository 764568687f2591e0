// The charts of a node verdict: per-GPU bars where a check declares them (the gemm check's
// TFLOP/s), every matrix as a heat map, and the remaining metrics as tables (docs/report.md).
// Drawn with HTML and inline styles only, so they print, need no script and no fetch. The units
// and titles of the bars come from the binary's declarations, never from the document.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "report/html/html_common.hpp"
#include "report/html/html_sections.hpp"

namespace preflight::html {

namespace {

// "gpu12.bf16.tflops_median" -> {12, "bf16.tflops_median"}; false for keys of another shape.
bool split_gpu_key(const std::string& key, long& gpu, std::string& rest) {
  if (key.compare(0, 3, "gpu") != 0) return false;
  std::size_t i = 3;
  while (i < key.size() && i < 12 && std::isdigit(static_cast<unsigned char>(key[i]))) ++i;
  if (i == 3 || i >= key.size() || key[i] != '.' || i + 1 == key.size()) return false;
  gpu = std::stol(key.substr(3, i - 3));
  rest = key.substr(i + 1);
  return true;
}

constexpr std::size_t kMaxMatrixSide = 128;

// The group a per-GPU key ("gpu3.bf16.tflops_median") belongs to under `pattern`
// ("{dtype}.tflops_median"): "bf16"; empty when it does not match.
std::string group_of_gpu_key(const std::string& key, const std::string& pattern, long& gpu) {
  std::string rest;
  if (!split_gpu_key(key, gpu, rest)) return {};
  const auto labels = match_metric_name(pattern, rest);
  return labels && labels->size() == 1 ? labels->front().second : std::string();
}

// The group of a node key ("bf16.node_median_tflops") under `pattern`; empty when none.
std::string group_of_node_key(const std::string& key, const std::string& pattern) {
  const auto labels = match_metric_name(pattern, key);
  return labels && labels->size() == 1 ? labels->front().second : std::string();
}

// Keys the bars show, so the metrics tables do not repeat them.
bool drawn_as_bar(const CheckFigures* declared, const std::string& key) {
  if (declared == nullptr || !declared->bars) return false;
  const BarChartSpec& bars = *declared->bars;
  long gpu = 0;
  return !group_of_node_key(key, bars.node).empty() ||
         !group_of_gpu_key(key, bars.median, gpu).empty();
}

struct GpuSpeed {
  std::optional<double> median, min, max;
};

struct GroupBars {
  std::string group;  // the value of the chart's group label: "bf16"
  std::map<long, GpuSpeed> gpus;
  std::optional<double> node_median;
};

// Position on a bar track scaled from 0 to `scale`, in percent, kept on the track.
double share(double value, double scale) {
  return scale > 0 ? std::clamp(100.0 * value / scale, 0.0, 100.0) : 0.0;
}

std::string pct(double percent) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", percent);
  return buf;
}

// The worst finding of the check per (GPU entity, group), which colours that GPU's bar of the
// group. A check that draws bars starts its messages about one group with it ("bf16: 7.2% slower
// ..."); a finding whose message does not start with one of the drawn groups that way (a CUDA
// error, a hang) colours every bar of its GPU. Only the colour depends on this: the finding
// itself is in the findings table. Looked up by the text before the first colon, so a million
// findings against many groups cost one lookup each (a group named with a colon, which no check
// writes, is then never named by a message).
struct WorstFindings {
  std::map<std::pair<std::string, std::string>, std::string> by_group;
  std::map<std::string, std::string> any_group;  // entity -> worst of its findings naming none

  // "fail", "warn", or "" for the bar of `entity` in `group`.
  std::string of(const std::string& entity, const std::string& group) const {
    std::string worst;
    if (const auto g = by_group.find({entity, group}); g != by_group.end()) worst = g->second;
    if (const auto a = any_group.find(entity); a != any_group.end() && worst != "fail") {
      worst = a->second;
    }
    return worst;
  }
};

WorstFindings worst_by_entity(const Json& findings, const std::set<std::string>& groups) {
  WorstFindings worst;
  const auto worsen = [](std::string& w, const std::string& severity) {
    if (w != "fail") w = severity;
  };
  for (const Json& f : findings) {
    const std::string s = text(f, "severity");
    if (s != "fail" && s != "warn") continue;
    const std::string message = text(f, "message");
    const std::size_t colon = message.find(':');
    const std::string named = colon == std::string::npos ? "" : message.substr(0, colon);
    if (!named.empty() && groups.count(named) != 0) {
      worsen(worst.by_group[{text(f, "entity"), named}], s);
    } else {
      worsen(worst.any_group[text(f, "entity")], s);
    }
  }
  return worst;
}

// One group's bars, each a row of `bars`; "" when the page has no room for the group's title.
std::string bar_group(const GroupBars& d, const std::string& unit, const WorstFindings& worst,
                      Rows& bars, PageBudget& budget) {
  double scale = d.node_median.value_or(0.0);
  for (const auto& [gpu, s] : d.gpus) {
    scale = std::max({scale, s.median.value_or(0.0), s.max.value_or(0.0)});
  }
  const std::string group = escape(clipped(d.group));
  std::string out = "<div class=\"bars\"><h4>" + group;
  if (d.node_median) {
    out += " <span class=\"meta\">node median " + format_number(d.node_median) + " " + unit +
           "</span>";
  }
  out += "</h4>\n";
  if (!budget.take(out.size())) return "";
  for (const auto& [gpu, s] : d.gpus) {
    if (!bars.open()) break;
    const std::string entity = "gpu" + std::to_string(gpu);
    const std::string w = worst.of(entity, d.group);
    const char* tone = w.empty() ? "t-info" : tone_class(w);
    std::string row = "<div class=\"bar-row\"><span class=\"mono\">" + entity +
                      "</span><span class=\"bar-track\" title=\"" + entity + " " + group +
                      ": median " + format_number(s.median) + ", min " + format_number(s.min) +
                      ", max " + format_number(s.max) + " " + unit + "\">";
    if (s.median) {
      row += "<span class=\"bar " + std::string(tone) +
             "\" style=\"width:" + pct(share(*s.median, scale)) + "\"></span>";
    }
    if (s.min && s.max && *s.max >= *s.min) {
      const double left = share(*s.min, scale);
      row += "<span class=\"bar-range\" style=\"left:" + pct(left) +
             ";width:" + pct(share(*s.max, scale) - left) + "\"></span>";
    }
    if (d.node_median) {
      row += "<span class=\"bar-median\" style=\"left:" + pct(share(*d.node_median, scale)) +
             "\"></span>";
    }
    row += "</span><span class=\"bar-value\">" + format_number(s.median) + " " + unit +
           "</span></div>\n";
    bars.add(out, row);
  }
  return out + "</div>\n";
}

// The bar groups of one check under `spec`, in the order the metrics name them.
std::vector<GroupBars> bar_groups(const Json& check, const BarChartSpec& spec) {
  std::vector<GroupBars> groups;
  std::map<std::string, std::size_t> index;  // group -> position in `groups`
  const auto group = [&](const std::string& value) -> GroupBars& {
    const auto [at, fresh] = index.emplace(value, groups.size());
    if (fresh) groups.push_back(GroupBars{value, {}, std::nullopt});
    return groups[at->second];
  };
  const Json& metrics = object(check, "metrics");
  // The min and max of each bar are looked up by name: an index, not a scan of the metrics
  // per bar, so a check with a million metrics costs a million steps, not a million squared.
  std::unordered_map<std::string_view, const Json*> by_name;
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    by_name.emplace(it.key(), &it.value());
    long gpu = 0;
    if (const std::string g = group_of_gpu_key(it.key(), spec.median, gpu); !g.empty()) {
      group(g).gpus[gpu].median = number_of(it.value());
    } else if (const std::string n = group_of_node_key(it.key(), spec.node); !n.empty()) {
      group(n).node_median = number_of(it.value());
    }
  }
  // min and max only for GPUs that have a median: they draw the range over its bar.
  for (GroupBars& g : groups) {
    const Labels labels = {{spec.group_label, g.group}};
    const std::string min_name = with_labels(spec.min, labels);
    const std::string max_name = with_labels(spec.max, labels);
    for (auto& [gpu, s] : g.gpus) {
      const std::string prefix = "gpu" + std::to_string(gpu) + ".";
      if (const auto v = by_name.find(prefix + min_name); v != by_name.end()) {
        s.min = number_of(*v->second);
      }
      if (const auto v = by_name.find(prefix + max_name); v != by_name.end()) {
        s.max = number_of(*v->second);
      }
    }
  }
  return groups;
}

// " GB/s" after the legend's largest value; a unit that is a phrase ("1 yes, 0 no") in
// parentheses, so it does not read as part of the number.
std::string legend_unit(const std::string& unit) {
  if (unit.empty()) return "";
  return unit.find(' ') == std::string::npos ? " " + escape(unit) : " (" + escape(unit) + ")";
}

// One matrix as a heat-map table, its rows charged to the page; "" when the page has no room
// for its head.
std::string heat_map(const std::string& check, const Json& m, PageBudget& budget) {
  const std::string name = text(m, "name");
  const std::string unit = text(m, "unit");
  const Json& labels = array(m, "labels");
  const Json& values = array(m, "values");
  // Rows and columns as far as either the labels or the values reach: a non-square or short
  // matrix still shows every figure it has, the missing cells grey.
  std::size_t rows = std::max(values.size(), labels.size());
  std::size_t cols = labels.size();
  for (const Json& row : values) cols = std::max(cols, row.is_array() ? row.size() : 0);
  // A node has at most a few dozen GPUs or NICs; a document with thousands of labels is broken
  // or hostile, and its square would make a page no browser opens.
  const std::size_t all_rows = rows, all_cols = cols;
  rows = std::min(rows, kMaxMatrixSide);
  cols = std::min(cols, kMaxMatrixSide);
  const auto value_at = [&values](std::size_t i, std::size_t j) -> std::optional<double> {
    if (i >= values.size() || !values[i].is_array() || j >= values[i].size()) return std::nullopt;
    return number_of(values[i][j]);
  };
  // Each label is in a header and in the tooltip of every cell of its row and column:
  // formatted once.
  std::vector<std::string> label_cells, label_titles;
  for (std::size_t i = 0; i < std::max(rows, cols); ++i) {
    const std::string label = i < labels.size() ? text_of(labels[i]) : std::string();
    label_cells.push_back(cell(label));
    label_titles.push_back(escape(label));
  }
  std::string out = "<figure><figcaption>" + cell(check) + ": " + cell(name) +
                    (unit.empty() ? "" : " (" + escape(unit) + ")") +
                    ", row to column</figcaption>\n";
  std::optional<double> lo, hi;
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t j = 0; j < cols; ++j) {
      if (const auto v = value_at(i, j)) {
        lo = std::min(lo.value_or(*v), *v);
        hi = std::max(hi.value_or(*v), *v);
      }
    }
  }
  if (rows == 0 || cols == 0) {
    out += "<p class=\"none\">Empty matrix.</p></figure>\n";
    return budget.take(out.size()) ? out : "";
  }
  // The scale starts at zero (or below, for negative figures): a pair at 60% of the others then
  // looks it, where a min-to-max scale would paint noise between equal links red and green.
  const double low = std::min(0.0, lo.value_or(0.0));
  const double high = hi.value_or(0.0);
  out += "<table class=\"heat\"><thead><tr><th>" + (unit.empty() ? "" : breakable(unit)) + "</th>";
  for (std::size_t j = 0; j < cols; ++j) out += "<th>" + label_cells[j] + "</th>";
  out += "</tr></thead><tbody>\n";
  if (!budget.take(out.size())) return "";
  Rows drawn(budget, rows);
  for (std::size_t i = 0; i < rows && drawn.open(); ++i) {
    std::string row = "<tr><th>" + label_cells[i] + "</th>";
    for (std::size_t j = 0; j < cols; ++j) {
      const std::optional<double> v = value_at(i, j);
      if (!v) {
        row += "<td class=\"null\">-</td>";
        continue;
      }
      const double t = high > low ? (*v - low) / (high - low) : (high > 0 ? 1.0 : 0.0);
      row += "<td style=\"" + heat_style(t) + "\" title=\"" + label_titles[i] + " to " +
             label_titles[j] + ": " + format_number(v) + (unit.empty() ? "" : " " + escape(unit)) +
             "\">" + format_number(v) + "</td>";
    }
    drawn.add(out, row + "</tr>\n");
  }
  out += "</tbody></table>\n<div class=\"legend\"><span>" + format_number(low) +
         "</span><span class=\"ramp\" style=\"background:" + heat_gradient() + "\"></span><span>" +
         format_number(hi) + legend_unit(unit) +
         "</span><span class=\"swatch\"></span><span>no value (diagonal, not measured)</span>";
  if (!hi) out += "<span>: nothing measured</span>";
  out += "</div>";
  if (drawn.shown() < all_rows || cols < all_cols) {
    out += "<p class=\"none\">Showing " + std::to_string(drawn.shown()) + " of " +
           std::to_string(all_rows) + " rows and " + std::to_string(cols) + " of " +
           std::to_string(all_cols) + " columns" +
           (drawn.shown() < rows ? ": the page reached its size limit" : "") + ".</p>";
  }
  return out + "</figure>\n";
}

// The metrics of one check not drawn as bars, in a collapsed <details>; "" when there are none
// or the page has no room for its head.
std::string metrics_of_check(const Json& check, const FigureCatalogue& catalogue,
                             PageBudget& budget) {
  const std::string name = text(check, "name");
  const CheckFigures* declared = figures_of(catalogue, name);
  const Json& metrics = object(check, "metrics");
  // gpuN.<figure> keys become one row per figure and one column per GPU; the rest a list.
  std::vector<std::string> figures;
  std::map<std::string, std::map<long, const Json*>> per_gpu;
  std::map<long, bool> gpus;
  std::vector<std::pair<std::string_view, const Json*>> others;
  std::size_t shown = 0;
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    if (drawn_as_bar(declared, it.key())) continue;
    ++shown;
    long gpu = 0;
    std::string rest;
    if (split_gpu_key(it.key(), gpu, rest)) {
      if (per_gpu.find(rest) == per_gpu.end()) figures.push_back(rest);
      per_gpu[rest][gpu] = &it.value();
      gpus[gpu] = true;
    } else {
      others.emplace_back(it.key(), &it.value());
    }
  }
  if (shown == 0) return "";
  std::string out =
      "<details><summary>Metrics: " + cell(name) + " (" + std::to_string(shown) + ")</summary>\n";
  if (!budget.take(out.size())) return "";
  if (!others.empty()) {
    out += "<table><thead><tr><th>Metric</th><th class=\"num\">Value</th></tr></thead><tbody>\n";
    Rows rows(budget, budget.max_rows());
    for (const auto& [key, value] : others) {
      if (!rows.open()) break;
      rows.add(out, "<tr><td class=\"mono\">" + breakable(clipped(key)) +
                        "</td><td class=\"num\">" + format_number(number_of(*value)) +
                        "</td></tr>\n");
    }
    out += rows.more_row(others.size(), 2) + "</tbody></table>\n";
  }
  if (!figures.empty()) {
    // As many GPU columns as a matrix has: a node has a few dozen GPUs.
    std::vector<long> columns;
    for (const auto& [gpu, unused] : gpus) {
      if (columns.size() == kMaxMatrixSide) break;
      columns.push_back(gpu);
    }
    out += "<table><thead><tr><th>Metric</th>";
    for (const long gpu : columns) out += "<th class=\"num\">gpu" + std::to_string(gpu) + "</th>";
    out += "</tr></thead><tbody>\n";
    Rows rows(budget, budget.max_rows());
    for (const std::string& figure : figures) {
      if (!rows.open()) break;
      std::string row = "<tr><td class=\"mono\">" + breakable(clipped(figure)) + "</td>";
      const auto& values = per_gpu[figure];
      for (const long gpu : columns) {
        const auto v = values.find(gpu);
        row += "<td class=\"num\">" +
               (v == values.end() ? std::string("<span class=\"none\">-</span>")
                                  : format_number(number_of(*v->second))) +
               "</td>";
      }
      rows.add(out, row + "</tr>\n");
    }
    out += rows.more_row(figures.size(), static_cast<int>(columns.size()) + 1) +
           "</tbody></table>\n" + budget.more_note(gpus.size() - columns.size(), kMaxMatrixSide);
  }
  return out + "</details>\n";
}

}  // namespace

std::string bar_charts(const Json& checks, const FigureCatalogue& figures, PageBudget& budget) {
  std::string out;
  for (const CheckFigures& declared : figures) {
    if (!declared.bars) continue;
    const BarChartSpec& spec = *declared.bars;
    std::string charts;
    Rows bars(budget, budget.max_rows());
    std::size_t total = 0;  // bars of every matching check, drawn or not
    for (const Json& check : checks) {
      if (text(check, "name") != declared.check) continue;
      const std::vector<GroupBars> groups = bar_groups(check, spec);
      for (const GroupBars& g : groups) total += g.gpus.size();
      if (!bars.open()) continue;
      std::set<std::string> names;
      for (const GroupBars& g : groups) names.insert(g.group);
      const WorstFindings worst = worst_by_entity(array(check, "findings"), names);
      for (const GroupBars& g : groups) {
        if (!g.gpus.empty() && bars.open()) charts += bar_group(g, spec.unit, worst, bars, budget);
      }
    }
    if (total > 0) {
      out += "<h3>" + escape(spec.title) + "</h3>\n<p class=\"meta\">" + escape(spec.legend) +
             "</p>\n" + charts + bars.more_note(total);
    }
  }
  return out;
}

std::string matrix_heat_maps(const Json& checks, PageBudget& budget) {
  std::string out;
  Rows maps(budget, budget.max_rows());
  std::size_t total = 0;
  for (const Json& check : checks) {
    for (const Json& m : array(check, "matrices")) {
      ++total;
      if (!maps.open()) continue;
      const std::string map = heat_map(text(check, "name"), m, budget);
      if (!map.empty()) maps.add_charged(out, map);
    }
  }
  if (total == 0) return "";
  return "<h3>Matrices</h3>\n<p class=\"meta\">Colour scaled per matrix from 0 to its largest "
         "value: green at the largest, yellow at 80% of it, red at half and below.</p>\n" +
         out + maps.more_note(total);
}

std::string metrics_details(const Json& checks, const FigureCatalogue& figures,
                            PageBudget& budget) {
  std::string out;
  Rows shown(budget, budget.max_rows());
  std::size_t left_out = 0;  // checks with metrics that were not shown
  for (const Json& check : checks) {
    if (shown.open()) {
      const std::string part = metrics_of_check(check, figures, budget);
      if (!part.empty()) {
        shown.add_charged(out, part);
        continue;
      }
      if (!budget.spent()) continue;  // no metrics besides the bars; else no room for them
    }
    left_out += object(check, "metrics").empty() ? 0 : 1;
  }
  if (out.empty() && left_out == 0) return "";
  return "<h3>Metrics</h3>\n" + out + budget.more_note(left_out, shown.limit());
}

}  // namespace preflight::html
