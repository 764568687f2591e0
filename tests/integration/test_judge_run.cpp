// `preflight judge` end to end: a verdict that `preflight run` wrote on the fake NVML's GPUs,
// judged again by the real binary, with the thresholds it was made with and with others.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/fake_nvml_run.hpp"
#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

// Four H100s; gpu2 idles at 88 C (TEMPERATURE_CRITICAL at the SKU's 85 C) and gpu3's link
// trained to Gen4 (PCIE_LINK_DEGRADED).
const char* const kFourGpus = R"(
gpus=4
driver=580.65.06
gpu0.name=NVIDIA H100 80GB HBM3
gpu1.name=NVIDIA H100 80GB HBM3
gpu2.name=NVIDIA H100 80GB HBM3
gpu3.name=NVIDIA H100 80GB HBM3
gpu2.temperature=88
gpu3.pcie_max_link_gen=4
gpu3.pcie_gen=4
)";

RunOptions options_for(const TempDir& dir) {
  return fake_nvml_options(dir, kFourGpus);
}

// Every finding of every check as "check: CODE@entity severity judged message".
std::vector<std::string> all_findings(const json& verdict) {
  std::vector<std::string> out;
  for (const auto& c : verdict["checks"]) {
    for (const auto& f : c["findings"]) {
      out.push_back(c["name"].get<std::string>() + ": " + f["code"].get<std::string>() + "@" +
                    f["entity"].get<std::string>() + " " + f["severity"].get<std::string>() +
                    (f["judged"].get<bool>() ? " judged " : " observed ") +
                    f["message"].get<std::string>());
    }
  }
  return out;
}

bool has_finding(const json& verdict, const std::string& code, const std::string& entity) {
  for (const auto& c : verdict["checks"]) {
    if (find_finding(c["findings"], code, entity) != nullptr) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("judge: a run's verdict judged with its own thresholds has the same findings") {
  TempDir dir;
  const std::string recorded = dir.file("node.json");
  const RunResult run = run_preflight({"run", "--json", recorded}, options_for(dir));
  INFO(describe(run));
  REQUIRE(run.exit_code == 1);
  const json before = parse_json(read_file(recorded), recorded);
  REQUIRE(has_finding(before, "TEMPERATURE_CRITICAL", "gpu2"));
  REQUIRE(has_finding(before, "PCIE_LINK_DEGRADED", "gpu3"));
  REQUIRE(before["thresholds"]["sku"] == "h100-sxm5-80gb");

  const std::string again_path = dir.file("again.json");
  const RunResult judged =
      run_preflight({"judge", recorded, "--recorded-thresholds", "--json", again_path});
  INFO(describe(judged));
  CHECK(judged.exit_code == run.exit_code);
  const json again = parse_json(read_file(again_path), again_path);
  CHECK(verdict_shape_problems(again).empty());
  CHECK(all_findings(again) == all_findings(before));
  CHECK(again["verdict"] == before["verdict"]);
  CHECK(again["reason"] == before["reason"]);
  CHECK(again["rejudged"]["source"] == recorded);
  CHECK(again["rejudged"]["thresholds_by"] == "recorded");
  CHECK(judged.out.find("re-judged") != std::string::npos);

  // Today's defaults for the recorded SKU are the same numbers here.
  const RunResult today = run_preflight({"judge", recorded, "--json", "-"});
  CHECK(today.exit_code == run.exit_code);
  CHECK(all_findings(parse_json(today.out, "stdout")) == all_findings(before));
}

TEST_CASE("judge: other thresholds change the judged findings and the exit code") {
  TempDir dir;
  const std::string recorded = dir.file("node.json");
  REQUIRE(run_preflight({"run", "--json", recorded}, options_for(dir)).exit_code == 1);
  // A site that accepts 90 C at idle: gpu2 is no longer a finding; the Gen4 link still is.
  const std::string site = dir.file("site.json");
  write_file(site, R"({"inventory": {"temperature_fail_c": 95, "temperature_warn_c": 90}})");
  const RunResult judged = run_preflight({"judge", recorded, "--thresholds", site, "--json", "-"});
  INFO(describe(judged));
  const json v = parse_json(judged.out, "stdout");
  CHECK_FALSE(has_finding(v, "TEMPERATURE_CRITICAL", "gpu2"));
  CHECK_FALSE(has_finding(v, "TEMPERATURE_HIGH", "gpu2"));
  CHECK(has_finding(v, "PCIE_LINK_DEGRADED", "gpu3"));
  CHECK(v["thresholds"]["overrides_file"] == site);
}

TEST_CASE("judge: readings that record corruption fail whatever the findings say") {
  // A healthy corpus node (tests/data/nodes/), its readings edited to record what a run on a
  // node with corrupted data would: bad HBM words on gpu3, all-gather data from gpu5 wrong at
  // every GPU, an RDMA loopback whose bytes arrived changed. The findings the run would have
  // written are not there (removed by hand, or lost).
  const std::string corpus = std::string(PREFLIGHT_SOURCE_DIR) + "/tests/data/nodes/dgx-h100.json";
  json node = parse_json(read_file(corpus), corpus);
  for (auto& c : node["checks"]) {
    REQUIRE(c["findings"].empty());
    json& r = c["readings"];
    if (c["name"] == "hbm") {
      r["gpus"][3]["pattern"]["bad_words"] = 5;
      r["gpus"][3]["pattern"]["bad_ranges"] =
          json::array({{{"begin", 4096}, {"end", 4116}, {"bad_words", 5}}});
    } else if (c["name"] == "nccl") {
      json rows = json::array();
      for (int receiver = 0; receiver < 8; ++receiver) {
        json row = json::array({0, 0, 0, 0, 0, 0, 0, 0});
        row[5] = 3;
        rows.push_back(row);
      }
      r["collectives"]["allgather"]["corrupt_elements"] = 24;
      r["collectives"]["allgather"]["corrupt_from"] = rows;
    } else if (c["name"] == "rdma") {
      r["transfers"] = json::array({{{"entity", "mlx5_0"},
                                     {"kind", "loopback"},
                                     {"from", "mlx5_0"},
                                     {"expected_gbps", 400.0},
                                     {"gbps", 380.0},
                                     {"bad_bytes", 7}}});
    }
  }
  TempDir dir;
  const std::string edited = dir.file("edited.json");
  write_file(edited, node.dump(2));
  const RunResult judged = run_preflight({"judge", edited, "--json", "-"});
  INFO(describe(judged));
  CHECK(judged.exit_code == 1);
  const json v = parse_json(judged.out, "stdout");
  CHECK(verdict_shape_problems(v).empty());
  CHECK(v["verdict"] == "fail");
  // Observations, as the run would have written them: not judged, so no threshold undoes them.
  const auto observed = [&](const char* check, const char* code, const char* entity) {
    const json* c = find_check(v, check);
    const json* f = c == nullptr ? nullptr : find_finding((*c)["findings"], code, entity);
    return f != nullptr && !(*f)["judged"].get<bool>() && (*f)["severity"] == "fail";
  };
  CHECK(observed("hbm", "HBM_PATTERN_MISMATCH", "gpu3"));
  CHECK(observed("nccl", "NCCL_DATA_MISMATCH", "gpu5"));
  CHECK(observed("rdma", "RDMA_DATA_MISMATCH", "mlx5_0"));
  CHECK(v["rejudged"]["observations_restored"] == 3);

  // Judged again, the verdict that has them gains nothing more.
  const std::string again_path = dir.file("again.json");
  write_file(again_path, judged.out);
  const RunResult again = run_preflight({"judge", again_path, "--json", "-"});
  CHECK(again.exit_code == 1);
  const json twice = parse_json(again.out, "stdout");
  CHECK(all_findings(twice) == all_findings(v));
  CHECK(twice["rejudged"]["observations_restored"] == 0);
}

}  // namespace preflight::test
