// The "baseline" block of a thresholds file (include/preflight/baseline.hpp, docs/baseline.md).
#include "preflight/baseline.hpp"

#include <cmath>
#include <set>

#include "model/json_fields.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

// A figure's numbers must be finite; its spreads and limit cannot be negative.
double non_negative(const Fields& fields, const char* key, bool required) {
  const std::optional<double> value = fields.number(key);
  if (!value) {
    if (required) fields.fail(key, "missing");
    return 0;
  }
  if (!std::isfinite(*value) || *value < 0) fields.fail(key, "expected a number >= 0");
  return *value;
}

FigureBaseline figure_from(const Fields& fields) {
  FigureBaseline f;
  f.check = fields.text("check");
  f.entity = fields.text("entity");
  f.metric = fields.text("metric");
  f.unit = fields.text("unit");
  if (f.check.empty()) fields.fail("check", "missing");
  if (f.metric.empty()) fields.fail("metric", "missing");
  f.median = non_negative(fields, "median", true);
  f.node_spread = non_negative(fields, "node_spread", false);
  f.run_spread = non_negative(fields, "run_spread", false);
  f.limit = non_negative(fields, "limit", true);
  if (f.limit > f.median) fields.fail("limit", "above the median");
  f.nodes = static_cast<int>(fields.integer("nodes", 0, 100000000).value_or(0));
  f.runs = static_cast<int>(fields.integer("runs", 0, 1000000000).value_or(0));
  return f;
}

}  // namespace

const FigureBaseline* BaselineGroup::find(const std::string& check, const std::string& entity,
                                          const std::string& metric) const {
  for (const FigureBaseline& f : figures) {
    if (f.check == check && f.entity == entity && f.metric == metric) return &f;
  }
  return nullptr;
}

const BaselineGroup* BaselineLimits::find(const std::string& id) const {
  for (const BaselineGroup& g : groups) {
    if (g.id == id) return &g;
  }
  return nullptr;
}

std::string baseline_group_of(const Verdict& verdict) {
  if (verdict.thresholds) {
    if (!verdict.thresholds->node_shape.empty()) return verdict.thresholds->node_shape;
    if (!verdict.thresholds->sku.empty()) return "sku:" + verdict.thresholds->sku;
  }
  return "generic";
}

BaselineLimits baseline_from_json(const nlohmann::ordered_json& block) {
  const Fields top(block, "baseline");
  BaselineLimits limits;
  limits.learned_at = top.text("learned_at");
  limits.verdicts = static_cast<int>(top.integer("verdicts", 0, 1000000000).value_or(0));
  std::set<std::string> ids;
  const std::vector<Fields> groups = top.objects("groups");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    BaselineGroup group;
    group.id = groups[g].text("id");
    if (group.id.empty()) groups[g].fail("id", "missing");
    if (!ids.insert(group.id).second) groups[g].fail("id", "\"" + group.id + "\" given twice");
    std::set<std::string> keys;
    const std::vector<Fields> figures = groups[g].objects("figures");
    for (const Fields& f : figures) {
      FigureBaseline figure = figure_from(f);
      const std::string key = figure.check + " " + figure.entity + " " + figure.metric;
      if (!keys.insert(key).second) f.fail("metric", "the figure " + key + " is given twice");
      group.figures.push_back(std::move(figure));
    }
    limits.groups.push_back(std::move(group));
  }
  return limits;
}

nlohmann::ordered_json baseline_to_json(const BaselineLimits& limits) {
  nlohmann::ordered_json out;
  out["learned_at"] = limits.learned_at;
  out["verdicts"] = limits.verdicts;
  out["groups"] = nlohmann::ordered_json::array();
  for (const BaselineGroup& group : limits.groups) {
    nlohmann::ordered_json g;
    g["id"] = group.id;
    g["figures"] = nlohmann::ordered_json::array();
    for (const FigureBaseline& f : group.figures) {
      nlohmann::ordered_json j;
      j["check"] = f.check;
      j["entity"] = f.entity;
      j["metric"] = f.metric;
      j["unit"] = f.unit;
      j["median"] = f.median;
      j["node_spread"] = f.node_spread;
      j["run_spread"] = f.run_spread;
      j["limit"] = f.limit;
      j["nodes"] = f.nodes;
      j["runs"] = f.runs;
      g["figures"].push_back(std::move(j));
    }
    out["groups"].push_back(std::move(g));
  }
  return out;
}

}  // namespace preflight
