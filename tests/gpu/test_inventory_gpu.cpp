// The inventory check on a real GPU: identities, driver, the responsiveness probe, and every
// fault kind aimed at a GPU (from `preflight list --json`) detected on the GPU it targets and
// marked injected. main.cpp skips these tests (exit 77) where no GPU is visible.
#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

RunOptions gpu_options() {
  RunOptions options;  // the machine's own environment: the real driver and GPUs
  options.timeout_s = 120;
  return options;
}

bool contains(const json& array, const std::string& value) {
  for (const auto& item : array) {
    if (item == value) return true;
  }
  return false;
}

// Values for the kinds that need one: large enough to cross the default thresholds of every
// SKU.
const std::map<std::string, std::string>& fault_values() {
  static const std::map<std::string, std::string> values = {
      {"temperature", "95"},          {"pcie-gen", "1"},          {"pcie-width", "1"},
      {"ecc-correctable", "1000000"}, {"foreign-memory", "4096"}, {"nvlink-down", "2"},
      {"throttle", "hw-slowdown"},    {"recovery-action", "2"}};
  return values;
}

// `run --checks inventory EXTRA --json -`; nullopt (with a failed CHECK) unless it exited 0 or 1
// with a verdict on stdout.
std::optional<json> inventory_verdict(const std::vector<std::string>& extra, RunResult& r) {
  std::vector<std::string> args = {"run", "--checks", "inventory"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--json", "-"});
  r = run_preflight(args, gpu_options());
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exited());
  CHECK((r.exit_code == 0 || r.exit_code == 1));
  if (!r.exited() || (r.exit_code != 0 && r.exit_code != 1)) return std::nullopt;
  return parse_json(r.out, "verdict");
}

}  // namespace

TEST_CASE("gpu inventory: the GPUs are listed, read and probed", "[gpu]") {
  RunResult r;
  const auto verdict = inventory_verdict({}, r);
  REQUIRE(verdict);
  const json& v = *verdict;
  WARN("verdict of preflight run --checks inventory:\n" << r.out << "\ntable:\n" << r.err);
  CHECK(joined(verdict_shape_problems(v)) == "");

  const json* inventory = find_check(v, "inventory");
  REQUIRE(inventory != nullptr);
  CHECK((*inventory)["status"] != "error");
  CHECK((*inventory)["status"] != "skip");

  const json& gpus = v["system"]["gpus"];
  REQUIRE_FALSE(gpus.empty());
  for (const auto& g : gpus) {
    INFO(g.dump());
    CHECK_FALSE(g["name"].get<std::string>().empty());
    CHECK_FALSE(g["uuid"].get<std::string>().empty());
    CHECK_FALSE(g["pci_bus_id"].get<std::string>().empty());
  }
  CHECK_FALSE(v["system"]["driver_version"].get<std::string>().empty());

  // The responsiveness probe ran on the first GPU.
  const std::string probe_key = "gpu" + std::to_string(gpus[0]["index"].get<int>()) + ".probe_ms";
  INFO((*inventory)["metrics"].dump(2));
  REQUIRE((*inventory)["metrics"].contains(probe_key));
  CHECK((*inventory)["metrics"][probe_key].is_number());
}

TEST_CASE("gpu inventory: every fault kind aimed at a GPU is detected and marked injected",
          "[gpu][faults]") {
  const RunResult list = run_preflight({"list", "--json"}, gpu_options());
  REQUIRE(list.exit_code == 0);
  const json kinds = parse_json(list.out, "list --json").at("fault_kinds");

  RunResult baseline_run;
  const auto baseline = inventory_verdict({}, baseline_run);
  REQUIRE(baseline);
  const std::size_t gpu_count = (*baseline)["system"]["gpus"].size();
  REQUIRE(gpu_count > 0);

  const RunResult th = run_preflight({"thresholds"}, gpu_options());
  REQUIRE(th.exit_code == 0);
  const double nvlink_links =
      parse_json(th.out, "thresholds").at("inventory").at("expected_nvlink_links").get<double>();

  int tested = 0;
  for (const auto& kind : kinds) {
    const std::string name = kind.at("kind");
    if (!contains(kind.at("targets"), "gpu") || kind.at("check") != "inventory") continue;
    if (name == "nvlink-down" && (gpu_count < 2 || nvlink_links <= 0)) {
      WARN("nvlink-down not tested: " << gpu_count << " GPUs, SKU expects " << nvlink_links
                                      << " NVLink links");
      continue;
    }
    const auto value = fault_values().find(name);
    // A kind that takes a required value and has none here would be run as a bad flag (exit 2):
    // name the missing entry instead.
    const std::string value_kind = kind.at("value").value("kind", "none");
    if (value_kind == "number" || value_kind == "word") {
      INFO("fault kind " << name << " needs a value; add one to fault_values()");
      CHECK(value != fault_values().end());
    }
    const std::string spec =
        name + (value == fault_values().end() ? "" : ":" + value->second) + "@gpu=0";
    const std::string entity = name == "gpu-missing" ? "node" : "gpu0";
    INFO("fault " << spec << ", expected one of " << kind.at("finding_codes").dump() << " on "
                  << entity);

    RunResult r;
    const auto verdict = inventory_verdict({"--inject-fault", spec}, r);
    ++tested;
    if (!verdict) continue;
    const json& v = *verdict;
    INFO("verdict:\n" << r.out);
    CHECK(contains(v["injected_faults"], spec));

    json findings = v["findings"];
    if (const json* inventory = find_check(v, "inventory")) {
      for (const auto& f : (*inventory)["findings"]) findings.push_back(f);
    }
    const json* match = nullptr;
    for (const auto& f : findings) {
      if (contains(kind.at("finding_codes"), f.value("code", "")) &&
          f.value("entity", "") == entity) {
        match = &f;
        if (f.value("injected", false)) break;  // prefer the one marked injected
      }
    }
    CHECK(match != nullptr);
    if (match != nullptr) CHECK((*match)["injected"] == true);
  }
  CHECK(tested > 0);
}

}  // namespace preflight::test
