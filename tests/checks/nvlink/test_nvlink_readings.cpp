// The nvlink check's readings apart from its judgement: judge_nvlink on readings written by hand
// from published measurements of real nodes, the JSON round trip (readings -> JSON -> readings
// -> judge gives the run's findings), and `preflight judge` (rejudge()) judging them again. The
// hbm check's are in tests/checks/hbm/test_hbm_readings.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "checks/nvlink/nvlink_check.hpp"
#include "checks/nvlink/nvlink_readings.hpp"
#include "preflight/errors.hpp"
#include "run/rejudge.hpp"
#include "run/runner.hpp"
#include "support/bandwidth_readings.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"

using namespace preflight;
using namespace preflight::test::readings;
using Json = nlohmann::ordered_json;

namespace {

// The GPU list of a board whose GPUs are joined directly, `links` links per pair (HGX H100
// 4-GPU: 6), bus ids as nvidia-smi prints them.
Json direct_mesh_gpus(const std::vector<std::string>& bus_ids, int links) {
  Json gpus = Json::array();
  for (std::size_t i = 0; i < bus_ids.size(); ++i) {
    Json peers = Json::array();
    for (std::size_t k = 0; k < bus_ids.size(); ++k) {
      for (int l = 0; l < links && k != i; ++l) peers.push_back(bus_ids[k]);
    }
    gpus.push_back({{"gpu", "gpu" + std::to_string(i)},
                    {"pci_bus_id", bus_ids[i]},
                    {"nvlink_active", 18},
                    {"nvlink_supported", 18},
                    {"nvlink_switch_links", 0},
                    {"nvlink_peer_bus_ids", peers}});
  }
  return gpus;
}

// n x n with `value` off the diagonal.
Json uniform_matrix(std::size_t n, double value) {
  Json m = Json::array();
  for (std::size_t i = 0; i < n; ++i) {
    Json row = Json::array();
    for (std::size_t k = 0; k < n; ++k) row.push_back(i == k ? Json(nullptr) : Json(value));
    m.push_back(row);
  }
  return m;
}

// HGX H100 4-GPU: every pair joined by 6 of each GPU's 18 links (nvidia-smi topo -m: NV6), i.e.
// 450 x 6/18 = 150 GB/s per direction. Published healthy figure: 260.89 GB/s both directions
// together between GPU0 and GPU1 of a 4 x H100-80GB board whose spec says 300 GB/s
// (p2pBandwidthLatencyTest, https://github.com/NVIDIA/cuda-samples/issues/392), i.e. about
// 130.4 GB/s per direction; the same figure stands in for every pair.
Json hgx_h100_4gpu() {
  Json j;
  j["gpus"] = direct_mesh_gpus(
      {"00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0", "00000000:5D:00.0"}, 6);
  j["unidirectional_gbps"] = uniform_matrix(4, 260.89 / 2);
  j["bidirectional_gbps"] = uniform_matrix(4, 260.89);
  return j;
}

// 8 x H100 80GB HBM3 behind NVSwitches (Azure ND96isr H100 v5), nvbandwidth
// device_to_device_memcpy_read_ce as published in
// https://github.com/AlizeeChen11/azurehpc-health-checks/blob/main/customTests/debugging-test-failure.md
// ("The expected result is as below"), copied as printed.
constexpr const char* kNvswitchH100 = R"({
  "gpus": [
    {"gpu": "gpu0", "pci_bus_id": "00000001:00:00.0", "nvlink_switch_links": 18},
    {"gpu": "gpu1", "pci_bus_id": "00000002:00:00.0", "nvlink_switch_links": 18},
    {"gpu": "gpu2", "pci_bus_id": "00000003:00:00.0", "nvlink_switch_links": 18},
    {"gpu": "gpu3", "pci_bus_id": "00000008:00:00.0", "nvlink_switch_links": 18},
    {"gpu": "gpu4", "pci_bus_id": "00000009:00:00.0", "nvlink_switch_links": 18},
    {"gpu": "gpu5", "pci_bus_id": "0000000A:00:00.0", "nvlink_switch_links": 18},
    {"gpu": "gpu6", "pci_bus_id": "0000000B:00:00.0", "nvlink_switch_links": 18},
    {"gpu": "gpu7", "pci_bus_id": "0000000C:00:00.0", "nvlink_switch_links": 18}
  ],
  "unidirectional_gbps": [
    [null,   370.90, 370.90, 370.90, 370.38, 370.64, 370.26, 371.67],
    [370.90, null,   370.90, 370.90, 371.67, 370.90, 370.38, 371.67],
    [372.05, 370.90, null,   370.90, 372.96, 370.38, 371.67, 371.67],
    [370.90, 372.05, 372.05, null,   371.79, 371.02, 370.77, 370.90],
    [370.38, 371.54, 370.38, 371.02, null,   372.05, 370.90, 370.90],
    [371.02, 370.51, 371.92, 372.18, 370.90, null,   372.05, 370.90],
    [371.41, 371.79, 371.67, 370.38, 370.90, 372.05, null,   370.90],
    [370.51, 371.67, 371.67, 370.38, 370.90, 370.90, 370.90, null  ]
  ]
})";

}  // namespace

TEST_CASE("nvlink readings: a healthy HGX H100 4-GPU board (NV6) passes") {
  const auto r = hgx_h100_4gpu().get<NvlinkReadings>();
  CHECK(judge_nvlink(r, sku("h100-sxm5-80gb")).empty());
}

TEST_CASE("nvlink readings: one NV6 pair at half rate fails on that pair alone") {
  Json j = hgx_h100_4gpu();
  j["unidirectional_gbps"][0][3] = 260.89 / 4;
  j["unidirectional_gbps"][3][0] = 260.89 / 4;
  j["bidirectional_gbps"][0][3] = 260.89 / 2;
  j["bidirectional_gbps"][3][0] = 260.89 / 2;
  const auto findings = judge_nvlink(j.get<NvlinkReadings>(), sku("h100-sxm5-80gb"));
  REQUIRE(codes(findings) == std::set<std::string>{"NVLINK_BANDWIDTH_LOW@gpu0-gpu3"});
  const Finding& low = findings.front();
  CHECK(low.severity == Severity::fail);
  CHECK(*low.value == Approx(260.89 / 4));
  CHECK(*low.threshold == Approx(450.0 * 6 / 18 * 0.6));
  CHECK_THAT(low.message,
             Catch::Contains("gpu0 -> gpu3") && Catch::Contains("gpu3 -> gpu0") &&
                 Catch::Contains("bidirectional gpu0 -> gpu3") &&
                 Catch::Contains("expected 150.0 GB/s per direction (6 direct links)"));
  CHECK_FALSE(low.injected);
}

TEST_CASE("nvlink readings: the topology sets the limit, not the SKU's full link set") {
  // The NV6 board's healthy figures would fail if every pair were held to 18 links: through
  // NVSwitches, or with the topology not read.
  Json j = hgx_h100_4gpu();
  for (auto& g : j["gpus"]) g["nvlink_switch_links"] = 18;
  CHECK(judge_nvlink(j.get<NvlinkReadings>(), sku("h100-sxm5-80gb")).size() == 6);
  for (auto& g : j["gpus"]) g.erase("nvlink_switch_links");
  const auto unread = judge_nvlink(j.get<NvlinkReadings>(), sku("h100-sxm5-80gb"));
  REQUIRE(unread.size() == 6);
  CHECK_THAT(unread.front().message, Catch::Contains("topology not read"));
}

TEST_CASE("nvlink readings: a healthy 8-GPU NVSwitch node passes, a slow pair fails") {
  auto j = Json::parse(kNvswitchH100);
  CHECK(judge_nvlink(j.get<NvlinkReadings>(), sku("h100-sxm5-80gb")).empty());
  j["unidirectional_gbps"][6][2] = 371.67 / 2;
  const auto findings = judge_nvlink(j.get<NvlinkReadings>(), sku("h100-sxm5-80gb"));
  REQUIRE(codes(findings) == std::set<std::string>{"NVLINK_BANDWIDTH_LOW@gpu2-gpu6"});
  CHECK(*findings.front().threshold == Approx(450.0 * 0.6));
  CHECK_THAT(findings.front().message,
             Catch::Contains("gpu6 -> gpu2") && Catch::Contains("(NVSwitch)"));
}

TEST_CASE("nvlink readings: no peer access fails where NVLink joins the pair, not on PCIe") {
  auto j = Json::parse(kNvswitchH100);
  Json access = uniform_matrix(8, 1.0);
  for (std::size_t i = 0; i < 8; ++i) {
    for (std::size_t k = 0; k < 8; ++k) {
      if (i != k) access[i][k] = !(i == 1 && k == 5);
    }
  }
  j["peer_access"] = access;
  j["unidirectional_gbps"][1][5] = nullptr;
  const auto findings = judge_nvlink(j.get<NvlinkReadings>(), sku("h100-sxm5-80gb"));
  REQUIRE(codes(findings) == std::set<std::string>{"NVLINK_NO_PEER_ACCESS@gpu1-gpu5"});
  CHECK_THAT(findings.front().message, Catch::Contains("gpu1 cannot access gpu5's memory"));
  CHECK(judge_nvlink(j.get<NvlinkReadings>(), sku("h100-pcie-80gb")).empty());
}

TEST_CASE("nvlink readings: bad readings are InvalidInput naming the field") {
  Json j = hgx_h100_4gpu();
  j["unidirectional_gbps"].erase(3);
  CHECK_THROWS_WITH(j.get<NvlinkReadings>(), Catch::Contains("unidirectional_gbps"));
  CHECK_THROWS_AS(j.get<NvlinkReadings>(), InvalidInput);
  j = hgx_h100_4gpu();
  j["gpus"][2]["gpu"] = "GPU2";
  CHECK_THROWS_WITH(j.get<NvlinkReadings>(), Catch::Contains("gpus[2].gpu"));
  j = hgx_h100_4gpu();
  j["bidirectional_gbps"][1][2] = -4;
  CHECK_THROWS_WITH(j.get<NvlinkReadings>(), Catch::Contains("bidirectional_gbps[1][2]"));
  j = hgx_h100_4gpu();
  j["peer_access"] = uniform_matrix(4, 1.0);
  CHECK_THROWS_WITH(j.get<NvlinkReadings>(), Catch::Contains("peer_access[0][1]"));
}

TEST_CASE("nvlink readings: the run's readings judged again give the run's findings") {
  test::FakeBandwidthEngine engine;
  engine.peer_gbps = 130.0;
  // The pair written in reverse: the readings carry it in the order findings name pairs.
  const Run run =
      run_checks(test::direct_mesh_node(), engine, {"nvlink"}, {"nvlink-slow:0.5@pair=3-0"});
  const CheckResult& nvlink = run.check("nvlink");
  REQUIRE(codes(nvlink.findings) == std::set<std::string>{"NVLINK_BANDWIDTH_LOW@gpu0-gpu3"});
  CHECK(nvlink.findings.front().judged);
  CHECK(nvlink.findings.front().injected);
  // Metrics and matrices are what they were.
  REQUIRE(nvlink.matrices.size() == 3);
  CHECK(nvlink.matrices[1].name == "unidirectional_gbps");
  CHECK(nvlink.metrics.at(0).key() == "unidirectional_min_gbps");

  const Readings& recorded = nvlink.readings;
  REQUIRE(recorded.is_object());
  CHECK(recorded["gpus"][1]["gpu"] == "gpu1");
  CHECK(recorded["gpus"][1]["nvlink_peer_bus_ids"].size() == 18);
  CHECK(recorded["injected_slow_pairs"] == Json::array({"gpu0-gpu3"}));
  CHECK(recorded["unidirectional_gbps"][0][3].get<double>() == Approx(65.0));
  CHECK(recorded["bidirectional_gbps"][3][0].get<double>() == Approx(130.0));

  // JSON text -> readings -> JSON: unchanged; judged again: the same findings.
  const auto back = Readings::parse(recorded.dump()).get<NvlinkReadings>();
  // The error counters' window is the counters' own (test_counters.cpp), not NvlinkReadings'.
  REQUIRE(recorded.contains("counters"));
  Readings own = recorded;
  own.erase("counters");
  CHECK(Readings(back) == own);
  auto again = judge_nvlink(back, sku("h100-sxm5-80gb"));
  for (Finding& f : again) f.judged = true;
  CHECK(described(again) == described(judged_of(nvlink.findings)));
  const auto through_check = NvlinkCheck().judge(recorded, sku("h100-sxm5-80gb"));
  REQUIRE(through_check);
  CHECK(described(*through_check) == described(judge_nvlink(back, sku("h100-sxm5-80gb"))));
}

TEST_CASE("nvlink readings: rejudge with other thresholds changes the judged findings only") {
  test::FakeBandwidthEngine engine;
  engine.peer_gbps = 130.0;
  engine.corrupt_copies = {1};  // copies from GPU 1 arrive changed: an observation
  const Run run =
      run_checks(test::direct_mesh_node(), engine, {"nvlink"}, {"nvlink-slow:0.5@pair=0-3"});
  const CheckResult& recorded = run.check("nvlink");
  REQUIRE(codes(recorded.findings).count("NVLINK_BANDWIDTH_LOW@gpu0-gpu3") == 1);
  const auto observations = judged_of(recorded.findings, false);
  REQUIRE_FALSE(observations.empty());

  // The thresholds it was made with: the same findings.
  const Verdict same = rejudged(run.verdict, sku("h100-sxm5-80gb"));
  CHECK(described(check_of(same, "nvlink").findings) == described(recorded.findings));
  CHECK(same.rejudged->checks_rejudged == 1);

  // A lower fail fraction: the slow pair only warns; the corrupted copies still stand.
  Thresholds lenient = sku("h100-sxm5-80gb");
  lenient.apply_overrides(R"({"nvlink": {"fail_fraction": 0.4, "warn_fraction": 0.5}})", "test");
  const Verdict lenient_verdict = rejudged(run.verdict, lenient);
  const CheckResult& after = check_of(lenient_verdict, "nvlink");
  CHECK(codes(judged_of(after.findings)) ==
        std::set<std::string>{"NVLINK_BANDWIDTH_MARGINAL@gpu0-gpu3"});
  CHECK(described(judged_of(after.findings, false)) == described(observations));
}
