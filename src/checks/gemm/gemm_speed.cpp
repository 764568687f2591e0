// judge_gemm_speed: the judged half of the gemm check. Each GPU's median TFLOP/s is held to what
// its SKU is expected to sustain and to the median of the node's other GPUs of its model, from
// the readings alone, so `preflight judge` gives the same findings from a recorded verdict.
// Why sustained figures and the straggler limits: docs/checks/gemm.md, "How topology enters".
#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "checks/common/entities.hpp"
#include "checks/gemm/gemm_findings.hpp"
#include "checks/gemm/gemm_judge.hpp"
#include "checks/gemm/gemm_judge_support.hpp"
#include "model/stats.hpp"
#include "model/text_format.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

struct Judged {
  int gpu;
  GemmDtype dtype;
  Finding finding;
};

// The expectation a GPU of this SKU is held to for one dtype.
struct Expectation {
  double figure = 0.0;  // TFLOP/s; 0: none (an unknown SKU)
  double fail_fraction = 0.0;
  double warn_fraction = 0.0;
  bool sustained = false;  // a measured sustained figure rather than the datasheet peak
};

// A power- or clock-limited SKU (H100 PCIe at 350 W reaches 65% of its datasheet peak, an SXM
// part 80%) is held to what healthy GPUs of it sustain in published measurements; the others to
// their datasheet peak. Only bf16 and fp16 have sustained keys.
Expectation expectation_for(const std::string& dt, const Thresholds& thresholds) {
  Expectation e;
  const std::string sustained_key = "gemm." + dt + "_sustained_tflops";
  if (thresholds.find_spec(sustained_key) != nullptr && thresholds.get(sustained_key) > 0.0) {
    e.figure = thresholds.get(sustained_key);
    e.fail_fraction = thresholds.get("gemm.fail_fraction_of_sustained");
    e.warn_fraction = thresholds.get("gemm.warn_fraction_of_sustained");
    e.sustained = true;
    return e;
  }
  e.figure = thresholds.get("gemm." + dt + "_peak_tflops");
  e.fail_fraction = thresholds.get("gemm.fail_fraction_of_peak");
  e.warn_fraction = thresholds.get("gemm.warn_fraction_of_peak");
  return e;
}

void judge_against_sku(const GemmGpuReading& r, const Thresholds& thresholds,
                       std::vector<Judged>& out) {
  const std::string dt(to_string(r.dtype));
  const Expectation e = expectation_for(dt, thresholds);
  // 0 for an unknown SKU: no figure to hold the GPU to, only its peers.
  if (e.figure <= 0.0) return;
  const GemmTflops& t = *r.tflops;
  const bool low = t.median < e.figure * e.fail_fraction;
  if (!low && t.median >= e.figure * e.warn_fraction) return;
  const double fraction = low ? e.fail_fraction : e.warn_fraction;
  const double limit = e.figure * fraction;
  const std::string what =
      e.sustained
          ? "the " + formatted("%.0f", e.figure) + " TFLOP/s that healthy " +
                thresholds.sku_name() + " GPUs sustain"
          : "the " + thresholds.sku_name() + " peak of " + formatted("%.0f", e.figure) + " TFLOP/s";
  const std::string message = dt + ": " + tflops_text(t.median) + " TFLOP/s median (min " +
                              tflops_text(t.min) + ", max " + tflops_text(t.max) + ") is below " +
                              formatted("%.0f", 100.0 * fraction) + "% of " + what + " (" +
                              tflops_text(limit) + "); " + describe_telemetry(r.telemetry);
  // Codes are written as literals so the catalogue test can see each one emitted.
  Finding f =
      low ? make_finding(gemm_findings(), "GEMM_TFLOPS_LOW", gpu_entity(r.gpu_index), message)
          : make_finding(gemm_findings(), "GEMM_TFLOPS_MARGINAL", gpu_entity(r.gpu_index), message);
  f.measured(t.median, "TFLOP/s", limit);
  mark_if_injected(f, r.injected);
  out.push_back({r.gpu_index, r.dtype, std::move(f)});
}

void judge_stragglers(const std::vector<const GemmGpuReading*>& rows, const Thresholds& thresholds,
                      std::vector<Judged>& out) {
  // Only GPUs of one model running one shape are expected to match each other's speed.
  using Key = std::tuple<int, std::string, int, int, int>;
  std::vector<std::pair<Key, std::vector<const GemmGpuReading*>>> groups;
  for (const GemmGpuReading* r : rows) {
    add_to_group(groups, Key{static_cast<int>(r->dtype), r->model, r->m, r->n, r->k}, r);
  }
  const double warn_pct = thresholds.get("gemm.straggler_warn_pct");
  const double fail_pct = thresholds.get("gemm.straggler_fail_pct");
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    std::vector<double> medians;
    for (const GemmGpuReading* r : members) medians.push_back(r->tflops->median);
    const double node_median = summarize(medians).median;
    for (const GemmGpuReading* r : members) {
      const double pct = percent_below(r->tflops->median, node_median);
      const StragglerClass cls = classify_straggler(pct, warn_pct, fail_pct);
      if (cls == StragglerClass::none) continue;
      // The count says what the median rests on: with two GPUs it is their mean, and a GPU
      // 10% slower than its sibling is only 5.3% below it.
      const std::string message =
          std::string(to_string(r->dtype)) + ": " + formatted("%.1f", pct) +
          "% slower than the median of the node's " + std::to_string(members.size()) + " " +
          model_phrase(r->model) + "GPUs (" + tflops_text(r->tflops->median) + " vs " +
          tflops_text(node_median) + " TFLOP/s); " + describe_telemetry(r->telemetry);
      Finding f =
          cls == StragglerClass::fail
              ? make_finding(gemm_findings(), "GEMM_STRAGGLER_SEVERE", gpu_entity(r->gpu_index),
                             message)
              : make_finding(gemm_findings(), "GEMM_STRAGGLER", gpu_entity(r->gpu_index), message);
      f.measured(pct, "%", cls == StragglerClass::fail ? fail_pct : warn_pct);
      mark_if_injected(f, r->injected);
      out.push_back({r->gpu_index, r->dtype, std::move(f)});
    }
  }
}

}  // namespace

std::vector<Finding> judge_gemm_speed(const GemmReadings& readings, const Thresholds& thresholds) {
  std::vector<const GemmGpuReading*> rows;
  for (const GemmGpuReading& r : readings.gpus) {
    // Products verified before an error or a timeout are still evidence of speed.
    if (r.products > 0 && r.tflops) rows.push_back(&r);
  }
  std::vector<Judged> judged;
  for (const GemmGpuReading* r : rows) judge_against_sku(*r, thresholds, judged);
  judge_stragglers(rows, thresholds, judged);
  // Grouped by GPU, then dtype, as the observations are; within that, SKU before node.
  std::stable_sort(judged.begin(), judged.end(), [](const Judged& a, const Judged& b) {
    return std::make_pair(a.gpu, a.dtype) < std::make_pair(b.gpu, b.dtype);
  });
  std::vector<Finding> out;
  for (Judged& j : judged) out.push_back(std::move(j.finding));
  return out;
}

}  // namespace preflight
