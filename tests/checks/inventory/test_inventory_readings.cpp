// The readings of the inventory and nccl checks: JSON round trips, hand-written readings as the
// corpus (tests/data/nodes/) has them, malformed fields named, and the findings the checks
// judge made again by `preflight judge` (rejudge()), while observations stay.
#include <catch2/catch.hpp>

#include <memory>
#include <sstream>
#include <tuple>

#include "checks/inventory/inventory_check.hpp"
#include "checks/inventory/inventory_readings.hpp"
#include "checks/inventory/inventory_rules.hpp"
#include "checks/nccl/nccl_check.hpp"
#include "checks/nccl/nccl_math.hpp"
#include "checks/nccl/nccl_readings.hpp"
#include "preflight/errors.hpp"
#include "report/report.hpp"
#include "report/verdict_reader.hpp"
#include "run/rejudge.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_collective_engine.hpp"

using namespace preflight;
using preflight::test::check_of;
using preflight::test::h100;
using namespace std::chrono_literals;
using Json = nlohmann::ordered_json;

namespace {

// A finding as a comparable line: everything judging decides.
std::string line(const Finding& f) {
  std::ostringstream out;
  out << f.code << "@" << f.entity << " [" << to_string(f.severity) << "] " << f.message;
  if (f.value) out << " value=" << *f.value;
  if (f.threshold) out << " threshold=" << *f.threshold;
  out << (f.judged ? " judged" : " observed");
  return out.str();
}

std::vector<std::string> lines(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const auto& f : findings) out.push_back(line(f));
  return out;
}

std::vector<std::string> judged_lines(const std::vector<Finding>& findings) {
  std::vector<Finding> judged = findings;
  for (auto& f : judged) f.judged = true;
  return lines(judged);
}

bool has(const std::vector<Finding>& findings, const std::string& code, const std::string& entity) {
  for (const auto& f : findings) {
    if (f.code == code && f.entity == entity) return true;
  }
  return false;
}

template <typename T>
T reparse(const T& readings) {
  const Json j = readings;
  return Json::parse(j.dump()).get<T>();
}

// Runs `checks` (inventory always) on a fake node, as `preflight run` does.
Verdict run_node(const NodeReading& node, const std::vector<std::string>& checks,
                 test::FakeCollectiveEngine* collective = nullptr,
                 NodeExpectations expect = NodeExpectations{}) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, checks);
  FaultPlan faults(std::vector<InjectedFault>{});
  test::FakeBackend backend(node);
  backend.collective = collective;
  Verdict skeleton;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + 60s;
  settings.expect = expect;
  Runner runner(backend.engines(), faults);
  auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  return out.verdict;
}

// The verdict written as JSON, read back and judged again by a registry holding only `check`.
Verdict rejudged(const Verdict& v, std::unique_ptr<Check> check,
                 const Thresholds* thresholds = nullptr) {
  const Verdict read = verdict_from_json(Json::parse(verdict_to_json_text(v)), "test.json");
  std::vector<std::string> unknown;
  const Thresholds recorded = thresholds_from_record(preflight::test::builtin_threshold_specs(),
                                                     *read.thresholds, "test.json", unknown);
  CheckRegistry registry;
  registry.add(std::move(check));
  RejudgeSettings settings;
  settings.thresholds = thresholds != nullptr ? thresholds : &recorded;
  settings.thresholds_by = "recorded";
  settings.source = "test.json";
  settings.judged_at = "2025-01-01T00:00:00Z";
  settings.fault_kinds = registry.fault_kinds();
  return rejudge(read, registry, settings);
}

// A node with something of every kind of reading: every field of the JSON is exercised.
NodeReading varied_node() {
  NodeReading n = test::healthy_node(8);
  n.cuda_driver_required = 13000;
  n.cuda_driver_branch_required = "R580";
  n.pci_gpu_count = 9;
  n.libraries = {{"cuBLAS", "libcublas.so.13", "/usr/lib/libcublas.so.13", "13.0.2", ""},
                 {"NCCL", "libnccl.so.2", "", "", "not found in /opt/preflight/lib"}};
  n.gpus[0].nvlink_peer_bus_ids = {"00000000:11:00.0", "00000000:11:00.0"};
  n.gpus[0].nvlink_switch_links = 16;
  n.gpus[0].responsive = true;
  n.gpus[0].probe_ms = 1.25;
  n.gpus[1].clock_event_reasons =
      clock_event::kGpuIdle | clock_event::kHwThermalSlowdown | (std::uint64_t{1} << 12);
  n.gpus[2].probe_error = "the check's time ran out before the probe";
  n.gpus[3].pcie_gen_max_link = 4;
  n.gpus[4].read_errors = {"nvmlDeviceGetEccMode: Unknown Error"};
  n.gpus[4].ecc_enabled.reset();
  n.gpus[5].cuda_ordinal = -1;
  n.gpus[6].ecc_uncorrected_aggregate = 3;
  n.gpus[6].foreign_processes = 2;
  n.gpus[6].foreign_memory_mib = 600;
  n.gpus[6].recovery_action = 2;
  n.gpus[5].recovery_action = 0;
  n.gpus[7].responsive = false;
  n.gpus[7].probe_error = "no answer";
  n.gpus[7].temperature_c = 88;
  return n;
}

}  // namespace

TEST_CASE("inventory readings: a round trip keeps every reading and gives the same findings") {
  const InventoryReadings readings{varied_node(), NodeExpectations{8}};
  const Json j = readings;
  const InventoryReadings back = reparse(readings);
  CHECK(Json(back) == j);
  CHECK(j["cuda_driver_version"] == "13.0");
  CHECK(j["gpus"][0]["pci_device_id"] == "0x2330");
  CHECK(j["gpus"][1]["clock_event_reasons"] == Json({"gpu_idle", "hw_thermal_slowdown", "0x1000"}));
  CHECK(back.node.gpus[1].clock_event_reasons == readings.node.gpus[1].clock_event_reasons);
  CHECK(back.node.gpus[3].pcie_gen_max_link == 4);
  CHECK_FALSE(back.node.gpus[4].ecc_enabled.has_value());
  CHECK(back.expect.gpus == 8);

  const auto before = judge_inventory(readings, h100()).findings;
  const auto after = judge_inventory(back, h100()).findings;
  CHECK(before.size() >= 8);  // one of each kind the node carries
  CHECK(lines(after) == lines(before));
  CHECK(has(after, "PCIE_LINK_DEGRADED", "gpu3"));
  CHECK(has(after, "CLOCKS_THROTTLED_HW", "gpu1"));
  CHECK(has(after, "GPU_UNRESPONSIVE", "gpu7"));
  CHECK(has(after, "GPU_MISSING_FROM_DRIVER", "node"));
  CHECK(j["gpus"][6]["recovery_action"] == 2);
  CHECK(j["gpus"][5]["recovery_action"] == 0);
  CHECK_FALSE(j["gpus"][4].contains("recovery_action"));  // not read: left out
  CHECK(back.node.gpus[6].recovery_action == 2);
  CHECK(has(after, "GPU_RECOVERY_REBOOT", "gpu6"));
}

TEST_CASE("inventory readings: the run records them; judging them again gives its findings") {
  NodeReading node = test::healthy_node(8);
  node.gpus[3].pcie_gen_max_link = 4;  // a Gen4 link on a Gen5 SKU; the GPU's own max not read
  node.gpus[3].pcie_gen_max_gpu.reset();
  node.gpus[6].temperature_c = 80;
  const Verdict v = run_node(node, {"inventory"}, nullptr, NodeExpectations{8});
  const CheckResult& inv = check_of(v, "inventory");
  REQUIRE_FALSE(inv.readings.is_null());
  CHECK(inv.readings["expect_gpus"] == 8);
  CHECK(inv.readings["gpus"][3]["pcie_gen_max_link"] == 4);
  CHECK(inv.readings["gpus"][3]["probe"]["responsive"] == true);  // the probe's result is in
  REQUIRE(has(inv.findings, "PCIE_LINK_DEGRADED", "gpu3"));
  REQUIRE(has(inv.findings, "TEMPERATURE_HIGH", "gpu6"));
  for (const auto& f : inv.findings) CHECK(f.judged);

  const auto judged = InventoryCheck().judge(inv.readings, h100());
  REQUIRE(judged);
  CHECK(judged_lines(*judged) == lines(inv.findings));

  const Verdict again = rejudged(v, std::make_unique<InventoryCheck>());
  REQUIRE(again.rejudged);
  CHECK(again.rejudged->checks_rejudged == 1);
  const CheckResult& inv2 = check_of(again, "inventory");
  CHECK(lines(inv2.findings) == lines(inv.findings));
  CHECK(inv2.status == Status::fail);
  CHECK(again.verdict == Status::fail);
  CHECK_THAT(again.reason, Catch::Contains("gpu3"));
}

TEST_CASE("inventory readings: hand-written readings with fields left out load and are judged") {
  // As a corpus file has them: what nvidia-smi shows, nothing more.
  const Json j = Json::parse(R"({
    "expect_gpus": 2,
    "driver_version": "550.54.15",
    "cuda_driver_version": "12.4",
    "gpus": [
      {"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci_device_id": "0x2330",
       "pci_bus_id": "00000000:18:00.0", "pcie_gen_max_link": 5, "pcie_width_current": 16,
       "clock_event_reasons": ["gpu_idle"], "temperature_c": 31},
      {"index": 1, "name": "NVIDIA H100 80GB HBM3", "pci_device_id": 9008,
       "pci_bus_id": "00000000:2A:00.0", "pcie_gen_max_link": 4, "pcie_width_current": 16,
       "ecc_uncorrected_volatile": null}
    ]
  })");
  const auto readings = j.get<InventoryReadings>();
  const NodeReading& n = readings.node;
  CHECK(n.nvml_loaded);
  CHECK(n.cuda_driver_version == 12040);
  CHECK(n.cuda_device_count == 2);
  CHECK_FALSE(n.pci_gpu_count.has_value());
  REQUIRE(n.gpus.size() == 2);
  CHECK(n.gpus[1].cuda_ordinal == 1);
  CHECK(n.gpus[1].pci_device_id == 0x2330);
  CHECK_FALSE(n.gpus[1].temperature_c.has_value());
  CHECK_FALSE(n.gpus[1].ecc_uncorrected_volatile.has_value());
  CHECK_FALSE(n.gpus[1].responsive.has_value());
  CHECK(n.gpus[0].clock_event_reasons == clock_event::kGpuIdle);

  // Only the Gen4 link is wrong; what was not read is not judged.
  const auto findings = judge_inventory(readings, h100()).findings;
  CHECK(lines(findings) ==
        std::vector<std::string>{
            "PCIE_LINK_DEGRADED@gpu1 [fail] link reaches Gen4, SKU needs Gen5 observed"});

  // Through `preflight judge`: the same, and the thresholds decide (generic ones expect no
  // generation; they do flag the unknown SKU).
  Verdict v;
  v.tool.version = "test";
  v.thresholds = record_of(h100());
  CheckResult inv;
  inv.name = "inventory";
  inv.readings = j;
  v.checks.push_back(inv);
  aggregate(v, false);
  const Verdict fails = rejudged(v, std::make_unique<InventoryCheck>());
  CHECK(has(check_of(fails, "inventory").findings, "PCIE_LINK_DEGRADED", "gpu1"));
  CHECK(fails.exit_code == kExitUnhealthy);
  const Thresholds generic = preflight::test::builtin_thresholds(nullptr, "test");
  const Verdict generic_judged = rejudged(v, std::make_unique<InventoryCheck>(), &generic);
  CHECK_FALSE(has(check_of(generic_judged, "inventory").findings, "PCIE_LINK_DEGRADED", "gpu1"));
}

TEST_CASE("inventory readings: a malformed field is refused, naming it") {
  const auto error_of = [](const std::string& text) {
    try {
      (void)Json::parse(text).get<InventoryReadings>();
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of(R"({"gpus": [{"index": 0}, {"index": 1, "pcie_gen_max_link": "four"}]})"),
             Catch::StartsWith("gpus[1].pcie_gen_max_link: expected a whole number"));
  CHECK_THAT(error_of(R"({"gpus": [{"ecc_corrected_volatile": -3}]})"),
             Catch::StartsWith("gpus[0].ecc_corrected_volatile:"));
  CHECK_THAT(error_of(R"({"gpus": [{"recovery_action": -1}]})"),
             Catch::StartsWith("gpus[0].recovery_action:"));
  CHECK_THAT(error_of(R"({"gpus": [{"temperature_c": 35.5}]})"),
             Catch::StartsWith("gpus[0].temperature_c:"));
  CHECK_THAT(error_of(R"({"gpus": [{"pci_device_id": "2330"}]})"),
             Catch::StartsWith("gpus[0].pci_device_id: expected a PCI device id"));
  CHECK_THAT(error_of(R"({"gpus": [{"clock_event_reasons": ["hw_slowdwn"]}]})"),
             Catch::StartsWith("gpus[0].clock_event_reasons: unknown clock event reason"));
  CHECK_THAT(error_of(R"({"gpus": [{"probe": {"responsive": "yes"}}]})"),
             Catch::StartsWith("gpus[0].probe.responsive: expected true or false"));
  CHECK_THAT(error_of(R"({"cuda_driver_version": "thirteen", "gpus": []})"),
             Catch::StartsWith("cuda_driver_version: expected a CUDA version"));
  CHECK_THAT(error_of(R"({"gpus": {"index": 0}})"), Catch::StartsWith("gpus: expected an array"));
  CHECK_THAT(error_of(R"([1, 2])"), Catch::StartsWith("readings: expected an object"));

  // `preflight judge` says which check's readings.
  Verdict v;
  v.thresholds = record_of(h100());
  CheckResult inv;
  inv.name = "inventory";
  inv.readings = Json::parse(R"({"gpus": [{"nvlink_active": "all"}]})");
  v.checks.push_back(inv);
  CHECK_THROWS_WITH(rejudged(v, std::make_unique<InventoryCheck>()),
                    Catch::Contains("check inventory: readings: gpus[0].nvlink_active"));
}

TEST_CASE("nccl readings: a round trip gives the bus-bandwidth findings of the run") {
  test::FakeCollectiveEngine engine;
  engine.allgather_busbw_gbps = 150;  // H100 SXM: below 360 x 0.6
  const Verdict v = run_node(test::healthy_node(8), {"nccl"}, &engine);
  const CheckResult& nccl = check_of(v, "nccl");
  REQUIRE_FALSE(nccl.readings.is_null());
  CHECK(nccl.readings["gpus"].size() == 8);
  CHECK(nccl.readings["gpus"][7] == "gpu7");
  CHECK(nccl.readings["sizes_planned"].size() == 2);
  const Json& sizes = nccl.readings["collectives"]["allgather"]["sizes"];
  REQUIRE(sizes.size() == 2);
  CHECK(sizes[1]["bytes"] == 268435456);
  CHECK(sizes[1]["busbw_gbps"].get<double>() == Approx(150));
  CHECK(nccl.readings["collectives"]["allreduce"]["verified"] == true);
  CHECK(nccl.readings["collectives"]["allreduce"]["corrupt_elements"] == 0);
  REQUIRE(lines(nccl.findings).size() == 1);
  CHECK(nccl.findings[0].code == "NCCL_BUSBW_LOW");
  CHECK(nccl.findings[0].judged);

  const NcclReadings back = reparse(nccl.readings.get<NcclReadings>());
  CHECK(back.gpus.size() == 8);
  REQUIRE(back.collectives.size() == 2);
  CHECK(back.collectives[0].op == CollectiveOp::all_gather);
  CHECK(back.collectives[1].sizes[1].seconds > 0);
  CHECK(judged_lines(judge_nccl(back, h100())) == lines(nccl.findings));
  CHECK(lines(check_of(rejudged(v, std::make_unique<NcclCheck>()), "nccl").findings) ==
        lines(nccl.findings));
}

TEST_CASE("nccl readings: low bus bandwidth is judged; corruption stays whatever the limits") {
  test::FakeCollectiveEngine engine;
  engine.allgather_busbw_gbps = 150;
  engine.corrupt_senders = {3};
  const Verdict v = run_node(test::healthy_node(8), {"nccl"}, &engine);
  const CheckResult& nccl = check_of(v, "nccl");
  REQUIRE(has(nccl.findings, "NCCL_DATA_MISMATCH", "gpu3"));
  REQUIRE(has(nccl.findings, "NCCL_BUSBW_LOW", "node"));
  for (const auto& f : nccl.findings) CHECK(f.judged == (f.code == "NCCL_BUSBW_LOW"));
  CHECK(nccl.readings["collectives"]["allgather"]["corrupt_elements"].get<std::uint64_t>() > 0);

  // Generous limits: the bandwidth passes, the corrupted data still fails the node.
  Thresholds generous = h100();
  generous.apply_overrides(R"({"nccl": {"allgather_busbw_gbps": 100}})", "test");
  const Verdict again = rejudged(v, std::make_unique<NcclCheck>(), &generous);
  const CheckResult& nccl2 = check_of(again, "nccl");
  CHECK_FALSE(has(nccl2.findings, "NCCL_BUSBW_LOW", "node"));
  CHECK(has(nccl2.findings, "NCCL_DATA_MISMATCH", "gpu3"));
  CHECK(nccl2.status == Status::fail);
  CHECK(again.verdict == Status::fail);

  // And strict limits make the all-reduce's 420 GB/s marginal (below 0.7 x 650).
  Thresholds strict = h100();
  strict.apply_overrides(R"({"nccl": {"allreduce_busbw_gbps": 650}})", "test");
  CHECK(has(judge_nccl(nccl.readings.get<NcclReadings>(), strict), "NCCL_BUSBW_MARGINAL", "node"));
}

TEST_CASE("nccl readings: hand-written figures load; a collective cut short is not judged") {
  // nccl-tests' all_reduce_perf columns on a slow 8-GPU node, by hand.
  const Json j = Json::parse(R"({
    "gpus": ["gpu0", "gpu1", "gpu2", "gpu3", "gpu4", "gpu5", "gpu6", "gpu7"],
    "collectives": {
      "allreduce": {"sizes": [
        {"bytes": 1048576, "busbw_gbps": 40.1},
        {"bytes": 268435456, "time_us": 2330.5, "algbw_gbps": 115.2, "busbw_gbps": 201.6}
      ]}
    }
  })");
  const auto readings = j.get<NcclReadings>();
  REQUIRE(readings.collectives.size() == 1);
  CHECK(readings.collectives[0].initialized);
  CHECK_FALSE(readings.collectives[0].verified.has_value());
  const auto findings = judge_nccl(readings, h100());
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].code == "NCCL_BUSBW_LOW");
  CHECK(findings[0].message ==
        "all-reduce over 8 GPUs: bus bandwidth 201.6 GB/s at 256 MiB, the SKU's figure is "
        "360.0 GB/s");

  Json cut = j;
  cut["sizes_planned"] = {1048576, 268435456, 1073741824};
  CHECK(judge_nccl(cut.get<NcclReadings>(), h100()).empty());

  const auto error_of = [&](const std::function<void(Json&)>& spoil) {
    Json bad = j;
    spoil(bad);
    try {
      (void)bad.get<NcclReadings>();
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(
      error_of([](Json& b) { b["collectives"]["allreduce"]["sizes"][1]["busbw_gbps"] = "fast"; }),
      Catch::StartsWith("collectives.allreduce.sizes[1].busbw_gbps: expected a number"));
  CHECK_THAT(
      error_of([](Json& b) { b["collectives"]["allreduce"]["sizes"][0].erase("busbw_gbps"); }),
      Catch::StartsWith("collectives.allreduce.sizes[0].busbw_gbps: missing"));
  CHECK_THAT(error_of([](Json& b) { b["collectives"]["broadcast"] = Json::object(); }),
             Catch::StartsWith("collectives.broadcast: unknown collective"));
  CHECK_THAT(error_of([](Json& b) { b.erase("gpus"); }), Catch::StartsWith("gpus: missing"));
}
