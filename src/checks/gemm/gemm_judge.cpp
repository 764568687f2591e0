// judge_gemm: the gemm check's verdict on each GPU. The corruption detectors work on the
// verification records the engine returned: observations, whatever the thresholds say. Speed
// is judged from the readings alone (judge_gemm_speed, gemm_speed.cpp), so `preflight judge`
// can judge it again; here the readings, the metrics and the summary are made from the runs.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "checks/common/entities.hpp"
#include "checks/gemm/gemm_figures.hpp"
#include "checks/gemm/gemm_findings.hpp"
#include "checks/gemm/gemm_judge.hpp"
#include "checks/gemm/gemm_judge_support.hpp"
#include "checks/gemm/gemm_math.hpp"
#include "model/text_format.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

// At most one finding per (GPU, dtype, code): several products with the same fault are one
// problem, counted in the message.
class FindingSink {
 public:
  void add(int gpu, GemmDtype dtype, Finding finding) {
    std::string key = finding.entity + "/" + std::string(to_string(dtype)) + "/" + finding.code;
    if (seen_.insert(std::move(key)).second) entries_.push_back({gpu, dtype, std::move(finding)});
  }
  // Grouped by GPU, then dtype, so an admin reads one GPU's findings together; within that,
  // in the order the detectors ran.
  std::vector<Finding> take() {
    std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
      return std::make_pair(a.gpu, a.dtype) < std::make_pair(b.gpu, b.dtype);
    });
    std::vector<Finding> out;
    for (Entry& e : entries_) out.push_back(std::move(e.finding));
    return out;
  }

 private:
  struct Entry {
    int gpu;
    GemmDtype dtype;
    Finding finding;
  };
  std::set<std::string> seen_;
  std::vector<Entry> entries_;
};

std::string verified_before(std::size_t products) {
  return count_of(products, "product was", "products were") + " verified before";
}

// GEMM_TIMEOUT: a job that never returned (products nullopt), or one whose queued products did
// not complete. One text for the run and for `preflight judge` (gemm_observations).
Finding gemm_timeout(int gpu_index, const std::string& dt, std::optional<std::size_t> products) {
  return make_finding(gemm_findings(), "GEMM_TIMEOUT", gpu_entity(gpu_index),
                      !products
                          ? dt + ": did not return before the check's deadline: hung in the driver?"
                          : dt + ": queued products did not complete before the deadline (" +
                                verified_before(*products) + ")");
}

void judge_run_status(const GemmGpuOutcome& o, const std::string& dt, FindingSink& sink) {
  const std::string gpu = gpu_entity(o.gpu_index);
  if (!o.run) {
    sink.add(o.gpu_index, o.dtype, gemm_timeout(o.gpu_index, dt, std::nullopt));
    return;
  }
  const std::size_t products = o.run->products.size();
  const std::string verified = verified_before(products);
  if (o.run->timed_out) sink.add(o.gpu_index, o.dtype, gemm_timeout(o.gpu_index, dt, products));
  if (!o.run->error.empty()) {
    const std::string stage = o.run->error_stage.empty() ? "" : " " + o.run->error_stage;
    sink.add(o.gpu_index, o.dtype,
             make_finding(gemm_findings(), "GEMM_CUDA_ERROR", gpu,
                          dt + stage + ": " + o.run->error + " (" + verified + " it)"));
  }
}

// The products in which a detector counted something (NaN/Inf elements, bad columns).
struct BadProducts {
  const GemmProductRecord* first = nullptr;  // null: none
  std::size_t bad = 0;
  std::uint64_t total = 0;  // the counts, summed over the products
  bool all_injected = true;
};

BadProducts bad_products(const std::vector<GemmProductRecord>& products,
                         std::uint64_t GemmProductRecord::*count) {
  BadProducts out;
  for (const GemmProductRecord& p : products) {
    if (p.*count == 0) continue;
    if (out.first == nullptr) out.first = &p;
    ++out.bad;
    out.total += p.*count;
    out.all_injected = out.all_injected && p.injected;
  }
  return out;
}

void judge_nan_inf(const GemmGpuOutcome& o, const std::string& dt, FindingSink& sink) {
  const auto& products = o.run->products;
  const auto [first, bad, elements, all_injected] =
      bad_products(products, &GemmProductRecord::nonfinite);
  if (first == nullptr) return;
  Finding f = make_finding(
      gemm_findings(), "GEMM_NAN_INF", gpu_entity(o.gpu_index),
      dt + ": " + std::to_string(bad) + " of " + std::to_string(products.size()) +
          " products had NaN or Inf outputs from finite inputs; first " +
          product_name(first->round, first->repeat) + " (" +
          count_of(first->nonfinite, "element", "elements") + ")" +
          (bad > 1 ? ", " + count_of(elements, "element", "elements") + " in all" : ""));
  f.measured(static_cast<double>(elements), "elements");
  mark_if_injected(f, all_injected);
  sink.add(o.gpu_index, o.dtype, std::move(f));
}

void judge_checksum(const GemmGpuOutcome& o, const std::string& dt, FindingSink& sink) {
  const auto& products = o.run->products;
  const auto [first, bad, columns, all_injected] =
      bad_products(products, &GemmProductRecord::bad_columns);
  if (first == nullptr) return;
  // %.17g: the sums are exact for the check's inputs, and a flipped low bit must show.
  Finding f = make_finding(
      gemm_findings(), "GEMM_CHECKSUM_MISMATCH", gpu_entity(o.gpu_index),
      dt + ": " + std::to_string(bad) + " of " + std::to_string(products.size()) +
          " products failed the column-sum check; first " +
          product_name(first->round, first->repeat) + ": column " +
          std::to_string(first->first_bad_column) + " sums to " +
          formatted("%.17g", first->first_bad_actual) + ", expected " +
          formatted("%.17g", first->first_bad_expected) + " (" +
          count_of(first->bad_columns, "bad column", "bad columns") + ")" +
          (bad > 1 ? "; " + count_of(columns, "bad column", "bad columns") + " in all" : ""));
  f.measured(static_cast<double>(columns), "columns");
  mark_if_injected(f, all_injected);
  sink.add(o.gpu_index, o.dtype, std::move(f));
}

void judge_repeatability(const GemmGpuOutcome& o, const std::string& dt, FindingSink& sink) {
  const auto& products = o.run->products;
  std::map<int, std::vector<std::size_t>> rounds;  // round -> product indices, issue order
  for (std::size_t i = 0; i < products.size(); ++i) rounds[products[i].round].push_back(i);

  std::vector<bool> differs(products.size(), false);
  std::size_t compared_rounds = 0;
  std::size_t affected_rounds = 0;
  std::size_t tied_rounds = 0;
  for (const auto& [round, indices] : rounds) {
    if (indices.size() < 2) continue;
    ++compared_rounds;
    std::vector<ConsensusVote> votes;
    for (std::size_t i : indices) votes.push_back({products[i].repeat, products[i].digest});
    const ConsensusOutcome result = vote(votes);
    if (result.kind == ConsensusOutcome::Kind::unanimous) continue;
    ++affected_rounds;
    const bool tie = result.kind == ConsensusOutcome::Kind::tie;
    if (tie) ++tied_rounds;
    for (std::size_t i : indices) {
      const bool in_minority =
          std::binary_search(result.minority.begin(), result.minority.end(), products[i].repeat);
      // A tie leaves no repeat to trust, so every product of that round counts.
      if (tie || in_minority) differs[i] = true;
    }
  }
  if (affected_rounds == 0) return;

  std::size_t count = 0;
  const GemmProductRecord* first = nullptr;
  bool all_injected = true;
  for (std::size_t i = 0; i < products.size(); ++i) {
    if (!differs[i]) continue;
    ++count;
    if (first == nullptr) first = &products[i];
  }
  // The injected product is the odd one out; its round-mates differ only because of it.
  for (const auto& [round, indices] : rounds) {
    bool round_differs = false;
    bool round_injected = false;
    for (std::size_t i : indices) {
      round_differs = round_differs || differs[i];
      round_injected = round_injected || products[i].injected;
    }
    if (round_differs) all_injected = all_injected && round_injected;
  }
  std::string message =
      dt + ": " + std::to_string(count) + " of " + std::to_string(products.size()) +
      " products differ from other repeats of the same inputs (" + std::to_string(affected_rounds) +
      " of " + count_of(compared_rounds, "round", "rounds") + "); first " +
      product_name(first->round, first->repeat);
  if (tied_rounds > 0) {
    message += "; " + count_of(tied_rounds, "round", "rounds") +
               (tied_rounds == 1 ? " split evenly, so all its products count"
                                 : " split evenly, so all their products count");
  }
  Finding f =
      make_finding(gemm_findings(), "GEMM_NOT_REPEATABLE", gpu_entity(o.gpu_index), message);
  f.measured(static_cast<double>(count), "products");
  mark_if_injected(f, all_injected);
  sink.add(o.gpu_index, o.dtype, std::move(f));
}

// --- Speed ----------------------------------------------------------------------------------

// One GPU's speed for one dtype, from the products it verified: its reading (TFLOP/s and
// telemetry), which the metrics and the summary quote, so they agree with the judged findings.
struct SpeedRow {
  const GemmGpuOutcome* outcome = nullptr;
  GemmTflops stats;
  const TelemetrySummary* telemetry = nullptr;
};

// A GPU every product of which an injected fault touched (slowed): its speed findings are the
// drill's.
bool all_products_injected(const GemmGpuRun& run) {
  return std::all_of(run.products.begin(), run.products.end(),
                     [](const GemmProductRecord& p) { return p.injected; });
}

void add_gpu_metrics(const SpeedRow& row, Metrics& metrics) {
  const GemmGpuOutcome& o = *row.outcome;
  const GemmGpuRun& run = *o.run;
  const TelemetrySummary& tel = *row.telemetry;
  const std::string entity = gpu_entity(o.gpu_index);
  const std::string dtype(to_string(o.dtype));
  const GemmFigures& figures = gemm_figures();
  const auto record = [&](const Figure<1>& figure, double value) {
    metrics.push_back(figure(entity, value, {dtype}));
  };
  // What no reporter exports or draws: named here.
  const auto add = [&](const char* name, double value, const char* unit) {
    metrics.push_back({entity, dtype + "." + name, value, unit});
  };
  double product_ms = 0.0;
  double verify_ms = 0.0;
  for (const GemmProductRecord& p : run.products) {
    product_ms += p.product_ms;
    verify_ms += p.verify_ms;
  }
  record(figures.tflops_median, row.stats.median);
  record(figures.tflops_min, row.stats.min);
  record(figures.tflops_max, row.stats.max);
  add("products", static_cast<double>(run.products.size()), "count");
  if (product_ms > 0.0) {
    add("verify_overhead_pct", 100.0 * verify_ms / product_ms, "%");
  }
  // What a job would see per unit of time if it verified like this: the cost of checking.
  if (product_ms + verify_ms > 0.0) {
    const double flops = gemm_flops(run.m, run.n, run.k) * static_cast<double>(run.products.size());
    add("effective_tflops", flops / ((product_ms + verify_ms) * 1e9), "TFLOP/s");
    // Wall time from the first timed product to the last: also input generation, the
    // references and any gap the host left. The figure to hold against a plain cuBLAS loop.
    if (run.wall_s > 0.0) {
      add("throughput_tflops", flops / (run.wall_s * 1e12), "TFLOP/s");
    }
  }
  if (tel.sm_clock_mhz_median) {
    record(figures.sm_clock_mhz_median, *tel.sm_clock_mhz_median);
  }
  if (tel.temperature_c_max) {
    record(figures.temperature_c_max, *tel.temperature_c_max);
  }
  if (tel.power_w_median) record(figures.power_w_median, *tel.power_w_median);
}

// --- Summary --------------------------------------------------------------------------------

std::string shape_text(const GemmGpuRun& run) {
  if (run.m == run.n && run.n == run.k) return std::to_string(run.m) + "^3";
  return std::to_string(run.m) + "x" + std::to_string(run.n) + "x" + std::to_string(run.k);
}

std::string summarize_dtype(GemmDtype dtype, const std::vector<GemmGpuOutcome>& outcomes,
                            const std::vector<SpeedRow>& rows) {
  const std::string dt(to_string(dtype));
  std::size_t not_tested = 0, hung = 0, errors = 0, idle = 0, seen = 0;
  for (const GemmGpuOutcome& o : outcomes) {
    if (o.dtype != dtype) continue;
    ++seen;
    if (!o.not_tested.empty()) {
      ++not_tested;
    } else if (!o.run || (o.run->timed_out && o.run->products.empty())) {
      ++hung;
    } else if (o.run->products.empty()) {
      if (o.run->error.empty()) {
        ++idle;
      } else {
        ++errors;
      }
    }
  }
  if (seen == 0) return dt + ": not run";
  std::vector<std::string> why;
  if (not_tested > 0) why.push_back(count_of(not_tested, "GPU", "GPUs") + " not tested");
  if (hung > 0) why.push_back(count_of(hung, "GPU", "GPUs") + " timed out");
  if (errors > 0) why.push_back(count_of(errors, "GPU", "GPUs") + " with a CUDA error");
  if (idle > 0) why.push_back(count_of(idle, "GPU", "GPUs") + " without products");
  std::string why_text;
  for (const std::string& w : why) why_text += (why_text.empty() ? "" : ", ") + w;

  std::vector<const SpeedRow*> mine;
  for (const SpeedRow& r : rows) {
    if (r.outcome->dtype == dtype) mine.push_back(&r);
  }
  if (mine.empty()) return dt + ": no products verified (" + why_text + ")";

  std::vector<std::string> shapes;
  std::vector<double> medians;
  std::size_t products = 0;
  const SpeedRow* slowest = mine.front();
  for (const SpeedRow* r : mine) {
    const std::string shape = shape_text(*r->outcome->run);
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
    medians.push_back(r->stats.median);
    products += r->outcome->run->products.size();
    if (r->stats.median < slowest->stats.median) slowest = r;
  }
  std::string shape_list;
  for (const std::string& s : shapes) shape_list += (shape_list.empty() ? "" : "/") + s;
  std::string text = dt + " " + shape_list + " on " + count_of(mine.size(), "GPU", "GPUs") + ": " +
                     tflops_text(summarize(medians).median) + " TFLOP/s median (";
  if (mine.size() == 1) {
    text += "min " + tflops_text(slowest->stats.min) + ", max " + tflops_text(slowest->stats.max);
  } else {
    text +=
        "min " + tflops_text(slowest->stats.median) + " " + gpu_entity(slowest->outcome->gpu_index);
  }
  text += "), " + std::to_string(products) + " products verified";
  // Parentheses, not "; ": the dtypes' lines are joined with "; ".
  if (!why_text.empty()) text += " (" + why_text + ")";
  return text;
}

}  // namespace

GemmReadings gemm_readings_of(const std::vector<GemmGpuOutcome>& outcomes) {
  GemmReadings out;
  for (const GemmGpuOutcome& o : outcomes) {
    GemmGpuReading r;
    r.gpu_index = o.gpu_index;
    r.model = o.model;
    r.dtype = o.dtype;
    if (!o.not_tested.empty()) {
      r.status = GemmRunStatus::not_tested;
    } else if (!o.run) {
      r.status = GemmRunStatus::timeout;
    } else if (!o.run->error.empty()) {
      r.status = GemmRunStatus::error;
    } else if (o.run->timed_out) {
      r.status = GemmRunStatus::timeout;
    }
    if (o.not_tested.empty() && o.run) {
      const GemmGpuRun& run = *o.run;
      r.m = run.m;
      r.n = run.n;
      r.k = run.k;
      r.products = run.products.size();
      if (!run.products.empty()) {
        std::vector<double> tflops;
        for (const GemmProductRecord& p : run.products) {
          tflops.push_back(gemm_tflops(run.m, run.n, run.k, p.product_ms));
        }
        const SampleStats stats = summarize(std::move(tflops));
        r.tflops = GemmTflops{stats.median, stats.min, stats.max};
        r.injected = all_products_injected(run);
      }
      r.telemetry = summarize_telemetry(o.telemetry);
    }
    out.gpus.push_back(std::move(r));
  }
  return out;
}

std::vector<Finding> gemm_observations(const GemmReadings& readings) {
  FindingSink sink;
  for (const GemmGpuReading& r : readings.gpus) {
    const std::string dt(to_string(r.dtype));
    const std::string gpu = gpu_entity(r.gpu_index);
    switch (r.status) {
      case GemmRunStatus::completed:
        break;
      case GemmRunStatus::not_tested:
        sink.add(r.gpu_index, r.dtype,
                 make_finding(gemm_findings(), "GEMM_GPU_NOT_TESTED", gpu,
                              dt + ": not tested (the readings do not record why)"));
        break;
      case GemmRunStatus::timeout:
        // No shape recorded: no run came back (gemm_readings_of).
        sink.add(r.gpu_index, r.dtype,
                 gemm_timeout(r.gpu_index, dt,
                              r.m == 0 ? std::nullopt : std::optional<std::size_t>(r.products)));
        break;
      case GemmRunStatus::error:
        sink.add(
            r.gpu_index, r.dtype,
            make_finding(gemm_findings(), "GEMM_CUDA_ERROR", gpu,
                         dt + ": a CUDA or cuBLAS call failed (" + verified_before(r.products) +
                             " it; the readings do not record the error)"));
        break;
    }
  }
  return sink.take();
}

GemmJudgement judge_gemm(const std::vector<GemmGpuOutcome>& outcomes, const Thresholds& thresholds,
                         const GemmSettings& settings) {
  GemmJudgement out;
  out.readings = gemm_readings_of(outcomes);  // one per outcome, in their order
  FindingSink sink;
  std::vector<SpeedRow> rows;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    const GemmGpuOutcome& o = outcomes[i];
    const std::string dt(to_string(o.dtype));
    if (!o.not_tested.empty()) {
      // The reason comes from the check; the dtype prefix is added unless it already leads.
      const bool has_prefix = o.not_tested.rfind(dt, 0) == 0;
      sink.add(o.gpu_index, o.dtype,
               make_finding(gemm_findings(), "GEMM_GPU_NOT_TESTED", gpu_entity(o.gpu_index),
                            has_prefix ? o.not_tested : dt + ": " + o.not_tested));
      continue;
    }
    judge_run_status(o, dt, sink);
    if (!o.run) continue;
    // Products verified before an error or a timeout are still evidence.
    if (settings.enabled(GemmDetector::nan_inf)) judge_nan_inf(o, dt, sink);
    if (settings.enabled(GemmDetector::checksum)) judge_checksum(o, dt, sink);
    if (settings.enabled(GemmDetector::repeatability)) judge_repeatability(o, dt, sink);
    const GemmGpuReading& reading = out.readings.gpus[i];
    if (!reading.tflops) continue;

    SpeedRow row;
    row.outcome = &o;
    row.stats = *reading.tflops;
    row.telemetry = &reading.telemetry;
    add_gpu_metrics(row, out.metrics);
    rows.push_back(row);
  }
  if (settings.enabled(GemmDetector::consensus)) {
    for (ConsensusFinding& c : judge_gemm_consensus(outcomes)) {
      sink.add(c.gpu_index, c.dtype, std::move(c.finding));
    }
  }

  // The dtypes asked for, in their order, then any others the outcomes carry.
  std::vector<GemmDtype> dtypes = settings.dtypes;
  for (const GemmGpuOutcome& o : outcomes) {
    if (std::find(dtypes.begin(), dtypes.end(), o.dtype) == dtypes.end()) dtypes.push_back(o.dtype);
  }
  for (GemmDtype dtype : dtypes) {
    std::vector<double> medians;
    for (const SpeedRow& r : rows) {
      if (r.outcome->dtype == dtype) medians.push_back(r.stats.median);
    }
    // Over every GPU of the dtype: on a mixed node it mixes models, but it is the one figure
    // a dashboard compares across nodes.
    if (medians.size() >= 2) {
      out.metrics.push_back(gemm_figures().node_median_tflops("", summarize(medians).median,
                                                              {std::string(to_string(dtype))}));
    }
    const std::string line = summarize_dtype(dtype, outcomes, rows);
    out.summary += (out.summary.empty() ? "" : "; ") + line;
  }
  // Observations first, then the judged findings: the order `preflight judge` gives them, so a
  // verdict judged again with its own thresholds reads the same.
  out.findings = sink.take();
  add_judged(out.findings, judge_gemm_speed(out.readings, thresholds));
  return out;
}

}  // namespace preflight
