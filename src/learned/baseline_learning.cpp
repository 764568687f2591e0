#include "learned/baseline_learning.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "learned/figure_samples.hpp"
#include "model/stats.hpp"
#include "model/text_format.hpp"
#include "preflight/thresholds.hpp"

namespace preflight {

namespace {

constexpr std::size_t kNamedFiles = 3;     // left-out files named per reason
constexpr std::size_t kNamedOutliers = 5;  // outliers named per figure

std::size_t reason_index(LeftOutReason reason) {
  return static_cast<std::size_t>(reason);
}

// Why a verdict is not learned from; nullopt: it is.
std::optional<LeftOutReason> left_out_reason(const Verdict& verdict) {
  if (!verdict.injected_faults.empty()) return LeftOutReason::injected_faults;
  if (verdict.rejudged) return LeftOutReason::rejudged;
  if (verdict.exit_code != kExitHealthy) return LeftOutReason::unhealthy;
  // Runs are told apart by node: a verdict that names none cannot be one node's.
  if (verdict.host.empty()) return LeftOutReason::no_host;
  return std::nullopt;
}

std::string figure_key(const std::string& check, const std::string& entity,
                       const std::string& metric) {
  return entity.empty() ? check + " " + metric : check + " " + entity + " " + metric;
}

// "742.0", "48.25", "0.912": about four significant digits, a fixed count of decimals so a
// column of one figure lines up.
std::string number_text(double value) {
  const double magnitude = value < 0 ? -value : value;
  return formatted(magnitude >= 100 ? "%.1f" : magnitude >= 10 ? "%.2f" : "%.3f", value);
}

std::string with_unit(double value, const std::string& unit) {
  return unit.empty() ? number_text(value) : number_text(value) + " " + unit;
}

std::string percent_text(double fraction) {
  const double percent = fraction * 100;
  return formatted(percent >= 1 ? "%.1f%%" : "%.2f%%", percent);
}

// "a, b, c and 4 more" with at most `named` names.
std::string names_text(const std::vector<std::string>& names, std::size_t named, int total) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < named; ++i) out += (i ? ", " : "") + names[i];
  const int shown = static_cast<int>(std::min(names.size(), named));
  if (total > shown) out += " and " + std::to_string(total - shown) + " more";
  return out;
}

// Why a group none of whose figures was learned is refused: the figures' one reason where they
// share it (the usual case: too few nodes), else the first.
std::string group_refusal(const GroupOutcome& group) {
  if (group.figures.empty()) return "its verdicts record no figure with a limit";
  const std::string& first = group.figures.front().learned.refusal;
  const bool shared =
      std::all_of(group.figures.begin(), group.figures.end(),
                  [&](const FigureOutcome& f) { return f.learned.refusal == first; });
  if (shared) return first;
  return "none of its " + std::to_string(group.figures.size()) +
         " figures could be learned (first: " + group.figures.front().key() + ": " + first + ")";
}

// Columns padded to their widest cell; numbers right-aligned.
std::string table_text(const std::vector<std::vector<std::string>>& rows,
                       const std::vector<bool>& right_aligned, const std::string& indent) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = indent;
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::size_t gap = widths[c] - row[c].size();
      const bool last = c + 1 == row.size();
      if (c > 0) line += "  ";
      if (c < right_aligned.size() && right_aligned[c]) line.append(gap, ' ');
      line += row[c];
      if (!last && !(c < right_aligned.size() && right_aligned[c])) line.append(gap, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string FigureOutcome::key() const {
  return figure_key(check, entity, metric);
}

BaselineLearner::BaselineLearner(FigureCatalogue catalogue) : catalogue_(std::move(catalogue)) {}

void BaselineLearner::add(const std::string& file, const Verdict& verdict) {
  ++verdicts_;
  if (const auto reason = left_out_reason(verdict)) {
    LeftOut& out = left_out_[reason_index(*reason)];
    ++out.count;
    if (out.files.size() < kNamedFiles) out.files.push_back(file);
    return;
  }
  const std::size_t run = started_at_.size();
  started_at_.push_back(verdict.started_at);
  GroupValues& group = groups_[baseline_group_of(verdict)];
  ++group.runs_by_node[verdict.host];
  // A repeated run is one run: limited_figures reads its top level, the reported pass.
  for (FigureSample& sample : limited_figures(verdict, catalogue_)) {
    const std::string key = sample.key();
    auto found = group.figure_index.find(key);
    if (found == group.figure_index.end()) {
      found = group.figure_index.emplace(key, group.figures.size()).first;
      group.figures.push_back({sample.check, sample.entity, sample.metric, sample.unit, {}});
    }
    group.figures[found->second].by_node[verdict.host].push_back({run, sample.value});
  }
}

BaselineLearning BaselineLearner::learn(const LearnOptions& options) const {
  BaselineLearning out;
  out.verdicts = verdicts_;
  out.used = static_cast<int>(started_at_.size());
  out.left_out = left_out_;
  out.limits.verdicts = verdicts_;
  for (const auto& [id, values] : groups_) {
    GroupOutcome group;
    group.id = id;
    group.nodes = static_cast<int>(values.runs_by_node.size());
    for (const auto& [node, runs] : values.runs_by_node) group.runs += runs;
    BaselineGroup limits;
    limits.id = id;
    for (const FigureValues& figure : values.figures) {
      std::vector<NodeRuns> nodes;
      for (const auto& [node, node_values] : figure.by_node) {
        std::vector<Value> ordered = node_values;
        // Oldest first, as learn_figure expects; ISO-8601 UTC sorts as text.
        std::stable_sort(ordered.begin(), ordered.end(), [this](const Value& a, const Value& b) {
          return started_at_[a.run] < started_at_[b.run];
        });
        NodeRuns runs{node, {}};
        for (const Value& v : ordered) runs.values.push_back(v.value);
        nodes.push_back(std::move(runs));
      }
      FigureOutcome outcome;
      outcome.check = figure.check;
      outcome.entity = figure.entity;
      outcome.metric = figure.metric;
      outcome.unit = figure.unit;
      outcome.learned = learn_figure(nodes, options);
      outcome.input_nodes = static_cast<int>(nodes.size());
      for (const NodeRuns& node : nodes) {
        outcome.input_runs += static_cast<int>(node.values.size());
        if (!outcome.learned.learned) continue;
        if (summarize(node.values).median < outcome.learned.limit) ++outcome.nodes_below;
        for (const double v : node.values) outcome.runs_below += v < outcome.learned.limit ? 1 : 0;
      }
      if (outcome.learned.learned) {
        const LearnedFigure& l = outcome.learned;
        FigureBaseline learned;
        learned.check = figure.check;
        learned.entity = figure.entity;
        learned.metric = figure.metric;
        learned.unit = figure.unit;
        learned.median = l.median;
        learned.node_spread = l.node_spread;
        learned.run_spread = l.run_spread;
        learned.limit = l.limit;
        learned.nodes = l.nodes;
        learned.runs = l.runs;
        limits.figures.push_back(std::move(learned));
      }
      group.figures.push_back(std::move(outcome));
    }
    group.learned = !limits.figures.empty();
    if (group.learned) {
      out.limits.groups.push_back(std::move(limits));
    } else {
      group.refusal = group_refusal(group);
    }
    out.groups.push_back(std::move(group));
  }
  return out;
}

BaselineLearning learn_baseline(const std::vector<std::pair<std::string, Verdict>>& verdicts,
                                const FigureCatalogue& catalogue, const LearnOptions& options) {
  BaselineLearner learner(catalogue);
  for (const auto& [file, verdict] : verdicts) learner.add(file, verdict);
  return learner.learn(options);
}

std::string baseline_summary(const BaselineLearning& learning) {
  std::string out = "Learned from " + std::to_string(learning.used) + " of " +
                    count_of(static_cast<std::size_t>(learning.verdicts), "verdict", "verdicts") +
                    "\n";
  const std::array<std::pair<const char*, const char*>, kLeftOutReasons> nouns = {{
      {"run with injected faults", "runs with injected faults"},
      {"re-judged verdict", "re-judged verdicts"},
      {"unhealthy run", "unhealthy runs"},
      {"verdict without a host", "verdicts without a host"},
  }};
  for (std::size_t i = 0; i < kLeftOutReasons; ++i) {
    const LeftOut& left = learning.left_out[i];
    if (left.count == 0) continue;
    out += "  " + count_of(static_cast<std::size_t>(left.count), nouns[i].first, nouns[i].second) +
           " left out: " + names_text(left.files, kNamedFiles, left.count) + "\n";
  }
  if (learning.groups.empty()) out += "No verdict to learn from.\n";
  for (const GroupOutcome& group : learning.groups) {
    out += "\nGroup " + group.id + ": " +
           count_of(static_cast<std::size_t>(group.nodes), "node", "nodes") + ", " +
           count_of(static_cast<std::size_t>(group.runs), "run", "runs");
    if (!group.learned) {
      out += ": refused: " + group.refusal + "\n";
      continue;
    }
    std::vector<const FigureOutcome*> refused;
    std::vector<std::vector<std::string>> rows = {{"figure", "nodes", "runs", "median",
                                                   "node spread", "run spread", "limit",
                                                   "below limit", "outliers removed"}};
    for (const FigureOutcome& f : group.figures) {
      if (!f.learned.learned) {
        refused.push_back(&f);
        continue;
      }
      const LearnedFigure& l = f.learned;
      rows.push_back(
          {f.key(), std::to_string(l.nodes), std::to_string(l.runs), with_unit(l.median, f.unit),
           percent_text(l.node_spread), percent_text(l.run_spread), with_unit(l.limit, f.unit),
           std::to_string(f.nodes_below) + "/" + std::to_string(f.input_nodes) + " nodes, " +
               std::to_string(f.runs_below) + "/" + std::to_string(f.input_runs) + " runs",
           l.removed.empty()
               ? "-"
               : names_text(l.removed, kNamedOutliers, static_cast<int>(l.removed.size()))});
    }
    out += "; " + count_of(rows.size() - 1, "figure", "figures") + " learned, " +
           std::to_string(refused.size()) + " refused\n";
    out += table_text(rows, {false, true, true, true, true, true, true, false, false}, "  ");
    for (const FigureOutcome* f : refused) {
      out += "  refused: " + f->key() + ": " + f->learned.refusal + "\n";
    }
  }
  return out;
}

std::string baseline_thresholds_text(const BaselineLimits& limits) {
  nlohmann::ordered_json document;
  document["schema"] = std::string(kThresholdsSchema);
  document["baseline"] = baseline_to_json(limits);
  std::string text = document.dump(2) + "\n";
  if (text.size() > kThresholdsFileMaxBytes) {
    throw std::length_error("the thresholds file would be " + std::to_string(text.size()) +
                            " bytes, over the " + std::to_string(kThresholdsFileMaxBytes) +
                            " a thresholds file may hold: learn each node shape's verdicts apart");
  }
  return text;
}

}  // namespace preflight
