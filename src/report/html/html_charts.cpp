// The charts of a node verdict: per-GPU TFLOP/s bars from the gemm check, every matrix as a
// heat map, and the remaining metrics as tables (docs/report.md). Drawn with HTML and inline
// styles only, so they print, need no script and no fetch.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>
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

// "bf16.tflops_median" -> {"bf16", "tflops_median"}: the dtype is the one segment before it.
bool split_dtype(const std::string& rest, std::string& dtype, std::string& figure) {
  const std::size_t dot = rest.find('.');
  if (dot == std::string::npos || dot == 0 || rest.find('.', dot + 1) != std::string::npos) {
    return false;
  }
  dtype = rest.substr(0, dot);
  figure = rest.substr(dot + 1);
  return true;
}

constexpr std::size_t kMaxMatrixSide = 128;

constexpr const char* kNodeMedianSuffix = ".node_median_tflops";

bool is_node_median_key(const std::string& key) {
  const std::string suffix = kNodeMedianSuffix;
  return key.size() > suffix.size() &&
         key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0 &&
         key.find('.') == key.size() - suffix.size();
}

// Keys the bars show, so the metrics tables do not repeat them.
bool drawn_as_bar(const std::string& check, const std::string& key) {
  if (check != "gemm") return false;
  if (is_node_median_key(key)) return true;
  long gpu = 0;
  std::string rest, dtype, figure;
  return split_gpu_key(key, gpu, rest) && split_dtype(rest, dtype, figure) &&
         figure == "tflops_median";
}

struct GpuSpeed {
  std::optional<double> median, min, max;
};

struct DtypeBars {
  std::string dtype;
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

// The worst gemm finding per (GPU entity, dtype), which colours that GPU's bar of the dtype. The
// gemm check starts its speed messages with the dtype ("bf16: 7.2% slower ..."); a finding whose
// message does not name one of the drawn dtypes that way (a CUDA error, a hang) colours every
// bar of its GPU. Only the colour depends on this: the finding itself is in the findings table.
using WorstFinding = std::map<std::pair<std::string, std::string>, std::string>;

WorstFinding worst_by_entity(const Json& findings, const std::vector<std::string>& dtypes) {
  WorstFinding worst;
  for (const Json& f : findings) {
    const std::string s = text(f, "severity");
    if (s != "fail" && s != "warn") continue;
    const std::string message = text(f, "message");
    std::vector<std::string> hit;
    for (const std::string& d : dtypes) {
      if (message.compare(0, d.size() + 1, d + ":") == 0) hit.push_back(d);
    }
    for (const std::string& d : hit.empty() ? dtypes : hit) {
      std::string& w = worst[{text(f, "entity"), d}];
      if (w != "fail") w = s;
    }
  }
  return worst;
}

std::string bar_group(const DtypeBars& d, const WorstFinding& worst) {
  double scale = d.node_median.value_or(0.0);
  for (const auto& [gpu, s] : d.gpus) {
    scale = std::max({scale, s.median.value_or(0.0), s.max.value_or(0.0)});
  }
  std::string out = "<div class=\"bars\"><h4>" + escape(d.dtype);
  if (d.node_median) {
    out += " <span class=\"meta\">node median " + format_number(d.node_median) + " TFLOP/s</span>";
  }
  out += "</h4>\n";
  for (const auto& [gpu, s] : d.gpus) {
    const std::string entity = "gpu" + std::to_string(gpu);
    const auto w = worst.find({entity, d.dtype});
    const char* tone = w == worst.end() ? "t-info" : tone_class(w->second);
    out += "<div class=\"bar-row\"><span class=\"mono\">" + entity +
           "</span><span class=\"bar-track\" title=\"" + entity + " " + escape(d.dtype) +
           ": median " + format_number(s.median) + ", min " + format_number(s.min) + ", max " +
           format_number(s.max) + " TFLOP/s\">";
    if (s.median) {
      out += "<span class=\"bar " + std::string(tone) +
             "\" style=\"width:" + pct(share(*s.median, scale)) + "\"></span>";
    }
    if (s.min && s.max && *s.max >= *s.min) {
      const double left = share(*s.min, scale);
      out += "<span class=\"bar-range\" style=\"left:" + pct(left) +
             ";width:" + pct(share(*s.max, scale) - left) + "\"></span>";
    }
    if (d.node_median) {
      out += "<span class=\"bar-median\" style=\"left:" + pct(share(*d.node_median, scale)) +
             "\"></span>";
    }
    out +=
        "</span><span class=\"bar-value\">" + format_number(s.median) + " TFLOP/s</span></div>\n";
  }
  return out + "</div>\n";
}

// " GB/s" after the legend's largest value; a unit that is a phrase ("1 yes, 0 no") in
// parentheses, so it does not read as part of the number.
std::string legend_unit(const std::string& unit) {
  if (unit.empty()) return "";
  return unit.find(' ') == std::string::npos ? " " + escape(unit) : " (" + escape(unit) + ")";
}

std::string heat_map(const std::string& check, const Json& m) {
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
  const auto label_at = [&labels](std::size_t i) {
    return i < labels.size() ? text_of(labels[i]) : std::string();
  };
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
  if (rows == 0 || cols == 0) return out + "<p class=\"none\">Empty matrix.</p></figure>\n";
  // The scale starts at zero (or below, for negative figures): a pair at 60% of the others then
  // looks it, where a min-to-max scale would paint noise between equal links red and green.
  const double low = std::min(0.0, lo.value_or(0.0));
  const double high = hi.value_or(0.0);
  out += "<table class=\"heat\"><thead><tr><th>" + (unit.empty() ? "" : breakable(unit)) + "</th>";
  for (std::size_t j = 0; j < cols; ++j) out += "<th>" + cell(label_at(j)) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (std::size_t i = 0; i < rows; ++i) {
    out += "<tr><th>" + cell(label_at(i)) + "</th>";
    for (std::size_t j = 0; j < cols; ++j) {
      const std::optional<double> v = value_at(i, j);
      if (!v) {
        out += "<td class=\"null\">-</td>";
        continue;
      }
      const double t = high > low ? (*v - low) / (high - low) : (high > 0 ? 1.0 : 0.0);
      out += "<td style=\"" + heat_style(t) + "\" title=\"" + escape(label_at(i)) + " to " +
             escape(label_at(j)) + ": " + format_number(v) +
             (unit.empty() ? "" : " " + escape(unit)) + "\">" + format_number(v) + "</td>";
    }
    out += "</tr>\n";
  }
  out += "</tbody></table>\n<div class=\"legend\"><span>" + format_number(low) +
         "</span><span class=\"ramp\" style=\"background:" + heat_gradient() + "\"></span><span>" +
         format_number(hi) + legend_unit(unit) +
         "</span><span class=\"swatch\"></span><span>no value (diagonal, not measured)</span>";
  if (!hi) out += "<span>: nothing measured</span>";
  out += "</div>";
  if (rows < all_rows || cols < all_cols) {
    out += "<p class=\"none\">Showing " + std::to_string(rows) + " of " + std::to_string(all_rows) +
           " rows and " + std::to_string(cols) + " of " + std::to_string(all_cols) +
           " columns.</p>";
  }
  return out + "</figure>\n";
}

std::string metrics_of_check(const Json& check) {
  const std::string name = text(check, "name");
  const Json& metrics = object(check, "metrics");
  // gpuN.<figure> keys become one row per figure and one column per GPU; the rest a list.
  std::vector<std::string> figures;
  std::map<std::string, std::map<long, const Json*>> per_gpu;
  std::map<long, bool> gpus;
  std::vector<std::pair<std::string, const Json*>> others;
  std::size_t shown = 0;
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    if (drawn_as_bar(name, it.key())) continue;
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
  if (!others.empty()) {
    out += "<table><thead><tr><th>Metric</th><th class=\"num\">Value</th></tr></thead><tbody>\n";
    for (const auto& [key, value] : others) {
      out += "<tr><td class=\"mono\">" + breakable(key) + "</td><td class=\"num\">" +
             format_number(number_of(*value)) + "</td></tr>\n";
    }
    out += "</tbody></table>\n";
  }
  if (!figures.empty()) {
    out += "<table><thead><tr><th>Metric</th>";
    for (const auto& [gpu, unused] : gpus) {
      out += "<th class=\"num\">gpu" + std::to_string(gpu) + "</th>";
    }
    out += "</tr></thead><tbody>\n";
    for (const std::string& figure : figures) {
      out += "<tr><td class=\"mono\">" + breakable(figure) + "</td>";
      const auto& row = per_gpu[figure];
      for (const auto& [gpu, unused] : gpus) {
        const auto v = row.find(gpu);
        out += "<td class=\"num\">" +
               (v == row.end() ? std::string("<span class=\"none\">-</span>")
                               : format_number(number_of(*v->second))) +
               "</td>";
      }
      out += "</tr>\n";
    }
    out += "</tbody></table>\n";
  }
  return out + "</details>\n";
}

}  // namespace

std::string gemm_bars(const Json& checks) {
  std::string out;
  for (const Json& check : checks) {
    if (text(check, "name") != "gemm") continue;
    std::vector<DtypeBars> groups;
    const auto group = [&groups](const std::string& dtype) -> DtypeBars& {
      for (DtypeBars& g : groups) {
        if (g.dtype == dtype) return g;
      }
      groups.push_back(DtypeBars{dtype, {}, std::nullopt});
      return groups.back();
    };
    const Json& metrics = object(check, "metrics");
    for (auto it = metrics.begin(); it != metrics.end(); ++it) {
      long gpu = 0;
      std::string rest, dtype, figure;
      if (split_gpu_key(it.key(), gpu, rest) && split_dtype(rest, dtype, figure)) {
        if (figure == "tflops_median") {
          group(dtype).gpus[gpu].median = number_of(it.value());
        }
      } else if (is_node_median_key(it.key())) {
        const std::string key = it.key();
        group(key.substr(0, key.find('.'))).node_median = number_of(it.value());
      }
    }
    // min and max only for GPUs that have a median: they draw the range over its bar.
    for (DtypeBars& g : groups) {
      for (auto& [gpu, s] : g.gpus) {
        const std::string prefix = "gpu" + std::to_string(gpu) + "." + g.dtype + ".";
        if (const Json* v = member(metrics, (prefix + "tflops_min").c_str())) s.min = number_of(*v);
        if (const Json* v = member(metrics, (prefix + "tflops_max").c_str())) s.max = number_of(*v);
      }
    }
    std::vector<std::string> dtypes;
    for (const DtypeBars& g : groups) dtypes.push_back(g.dtype);
    const WorstFinding worst = worst_by_entity(array(check, "findings"), dtypes);
    for (const DtypeBars& g : groups) {
      if (!g.gpus.empty()) out += bar_group(g, worst);
    }
  }
  if (out.empty()) return "";
  return "<h3>GEMM speed per GPU</h3>\n<p class=\"meta\">Bar: median TFLOP/s over the products; "
         "black line: minimum to maximum; dashed line: node median. Blue: no gemm finding on the "
         "GPU for the dtype; amber or red: its worst is warn or fail.</p>\n" +
         out;
}

std::string matrix_heat_maps(const Json& checks) {
  std::string out;
  for (const Json& check : checks) {
    for (const Json& m : array(check, "matrices")) out += heat_map(text(check, "name"), m);
  }
  if (out.empty()) return "";
  return "<h3>Matrices</h3>\n<p class=\"meta\">Colour scaled per matrix from 0 to its largest "
         "value: green at the largest, yellow at 80% of it, red at half and below.</p>\n" +
         out;
}

std::string metrics_details(const Json& checks) {
  std::string out;
  for (const Json& check : checks) out += metrics_of_check(check);
  if (out.empty()) return "";
  return "<h3>Metrics</h3>\n" + out;
}

}  // namespace preflight::html
