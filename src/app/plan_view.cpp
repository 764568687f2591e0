#include "app/plan_view.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

int count_of(const std::string& key, const std::string& value) {
  std::size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || n < 0 || n > 1024) {
    throw InvalidInput("--node: " + key + "=" + value + " is not a count in 0..1024");
  }
  return n;
}

// Seconds in the plan's JSON: to the millisecond, as the verdict writes them.
double ms(double s) {
  return std::round(s * 1000.0) / 1000.0;
}

std::string two_decimals(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", s);
  return text;
}

}  // namespace

DescribedNode parse_node_description(const std::string& text) {
  DescribedNode node;
  node.shape.gpus = 8;
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw InvalidInput("--node: '" + item + "' is not KEY=VALUE (keys: gpus, sku, nics)");
    }
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "gpus") {
      node.shape.gpus = count_of(key, value);
    } else if (key == "nics") {
      node.shape.nics = count_of(key, value);
    } else if (key == "sku") {
      node.sku = find_sku(value);
      if (node.sku == nullptr) {
        std::string known;
        for (const auto& k : sku_table()) known += (known.empty() ? "" : ", ") + std::string(k.id);
        throw InvalidInput("--node: unknown sku '" + value + "' (known: " + known + ")");
      }
    } else {
      throw InvalidInput("--node: unknown key '" + key + "' (keys: gpus, sku, nics)");
    }
  }
  return node;
}

DescribedNode default_node() {
  DescribedNode node;
  node.shape.gpus = 8;
  node.shape.nics = 8;
  node.sku = find_sku("h100-sxm5-80gb");
  return node;
}

Json plan_to_json(const RunPlan& plan, std::string_view profile, const std::string& node) {
  Json checks = Json::array();
  for (const auto& a : plan.checks) {
    checks.push_back({{"name", a.check->info().name},
                      {"expected_s", ms(a.work.expected_s)},
                      {"deadline_s", ms(a.deadline_s)},
                      {"floor_s", ms(a.full.floor_s)},
                      {"whole_work_s", ms(a.full.expected_s)},
                      {"reduced", a.work.reduced},
                      {"coverage", a.work.coverage},
                      {"rotation_step", a.work.rotation_step},
                      {"rotation_steps", a.work.rotation_steps},
                      {"covered", a.work.covered}});
  }
  return {{"schema", "preflight.plan/1"},
          {"profile", std::string(profile)},
          {"node", node},
          {"gpus", plan.shape.gpus},
          {"nics", plan.shape.nics},
          {"timeout_s", ms(plan.timeout_s)},
          {"timeout_given", plan.timeout_given},
          {"expected_s", ms(plan.expected_s)},
          {"floor_s", ms(plan.floor_s)},
          {"reduced", plan.reduced},
          {"discovery",
           {{"expected_s", ms(plan.discovery.expected_s)},
            {"deadline_s", ms(plan.discovery_deadline_s)}}},
          {"checks", checks}};
}

std::string plan_to_text(const RunPlan& plan, std::string_view profile, const std::string& node) {
  std::ostringstream out;
  out << "Plan: profile " << profile << ", " << node << "\n"
      << "  --timeout " << plan_seconds(plan.timeout_s)
      << (plan.timeout_given ? "" : " (the profile's default for this node)") << "; expected "
      << plan_seconds(plan.expected_s) << "; floor " << plan_seconds(plan.floor_s)
      << (plan.reduced ? "; coverage reduced to fit" : "") << "\n\n";
  out << "  check       expected  deadline  coverage\n";
  char line[64];
  std::snprintf(line, sizeof line, "  %-10s %8ss %8ss  ", "discovery",
                two_decimals(plan.discovery.expected_s).c_str(),
                two_decimals(plan.discovery_deadline_s).c_str());
  out << line << plan.discovery.coverage << "\n";
  for (const auto& a : plan.checks) {
    std::snprintf(line, sizeof line, "  %-10s %8ss %8ss  ", a.check->info().name.c_str(),
                  two_decimals(a.work.expected_s).c_str(), two_decimals(a.deadline_s).c_str());
    out << line << (a.work.reduced ? "reduced: " : "") << a.work.coverage << "\n";
  }
  return out.str();
}

RunPlan plan_before_discovery(std::shared_ptr<const ThresholdSpecs> specs,
                              const std::vector<PlannedCheck>& checks, Profile profile,
                              const CheckOptions& options, std::optional<int> expect_gpus, int nics,
                              std::optional<int> timeout_s) {
  const Thresholds generic = Thresholds::for_sku(std::move(specs), nullptr, "before discovery");
  WorkRequest base;
  base.profile = profile;
  base.thresholds = &generic;
  base.options = &options;
  base.shape.nics = nics;
  if (timeout_s) {
    base.shape.gpus = expect_gpus.value_or(0);
    return plan_run(checks, base, static_cast<double>(*timeout_s));
  }
  base.shape.gpus = expect_gpus.value_or(8);
  return plan_run(checks, base, std::nullopt);
}

}  // namespace preflight
