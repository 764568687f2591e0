// The error counters read around the load checks (src/checks/common/counters.hpp): their
// judgement as a pure function of readings, the readings' round trip, and the sysfs reader on a
// made-up tree. End to end through the runner: test_counter_drills.cpp.
#include <catch2/catch.hpp>

#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "checks/common/counters.hpp"
#include "preflight/errors.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/scoped_env.hpp"

using namespace preflight;

namespace {

// The readings of one check whose window held these values.
Readings counter_readings(double seconds, const std::vector<CounterValue>& values) {
  CounterWindow w;
  w.seconds = seconds;
  w.values = values;
  Readings r = Readings::object();
  record_counters(r, w);
  return r;
}

CounterValue rose(const std::string& entity, const std::string& counter, std::uint64_t before,
                  std::uint64_t after) {
  return {entity, counter, before, after, false, std::nullopt};
}

std::set<std::string> judged_codes(double seconds, const std::vector<CounterValue>& values,
                                   const char* check) {
  return test::codes(judge_counters(counter_readings(seconds, values), test::h100(), check));
}

std::set<std::string> observed_codes(double seconds, const std::vector<CounterValue>& values) {
  return test::codes(observe_counters(counter_readings(seconds, values)));
}

// A made-up sysfs root, removed with everything in it.
struct CounterSysfsDir {
  std::string root;
  CounterSysfsDir() {
    char name[] = "/tmp/preflight-counters-XXXXXX";
    const char* made = ::mkdtemp(name);
    REQUIRE(made != nullptr);
    root = made;
  }
  ~CounterSysfsDir() { std::filesystem::remove_all(root); }
  CounterSysfsDir(const CounterSysfsDir&) = delete;
  CounterSysfsDir& operator=(const CounterSysfsDir&) = delete;
};

void write_sysfs_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

std::string aer_text(const char* total_key, int total) {
  return std::string("RxErr 0\nBadTLP ") + std::to_string(total) + "\nBadDLLP 0\n" + total_key +
         " " + std::to_string(total) + "\n";
}

}  // namespace

TEST_CASE("counters: corrected ECC warns by rate per second of load, counted over 1 s at least") {
  // 50 in 3 s is 16.7 per s: at or above 10 warns, on the GPU.
  CHECK(judged_codes(3.0, {rose("gpu1", "ecc_corrected_volatile", 100, 150)}, "gemm") ==
        std::set<std::string>{"ECC_CORRECTED_UNDER_LOAD@gpu1"});
  // 20 in 3 s is 6.7 per s: below.
  CHECK(judged_codes(3.0, {rose("gpu1", "ecc_corrected_volatile", 100, 120)}, "gemm").empty());
  // 9 in 0.2 s: counted over 1 s, 9 per s, below; 10 reaches it.
  CHECK(judged_codes(0.2, {rose("gpu0", "ecc_corrected_volatile", 0, 9)}, "hbm").empty());
  CHECK(judged_codes(0.2, {rose("gpu0", "ecc_corrected_volatile", 0, 10)}, "hbm").size() == 1);
  // A check without the key does not judge the counter (pcie has no ECC limit).
  CHECK(judged_codes(3.0, {rose("gpu1", "ecc_corrected_volatile", 0, 5000)}, "pcie").empty());
  // The finding carries the rate and the limit.
  const auto f =
      judge_counters(counter_readings(2.0, {rose("gpu0", "ecc_corrected_volatile", 0, 34000)}),
                     test::h100(), "gemm");
  REQUIRE(f.size() == 1);
  CHECK(f[0].severity == Severity::warn);
  REQUIRE(f[0].value);
  CHECK(*f[0].value == Approx(17000));
  CHECK(*f[0].threshold == Approx(10));
  CHECK_THAT(f[0].message, Catch::Contains("34000 corrected ECC errors over 2 s of load"));
}

TEST_CASE("counters: one stray PCIe replay in a short check never warns, a stream does") {
  // 1 replay in 0.4 s, counted over a minute: 1 per min.
  CHECK(judged_codes(0.4, {rose("gpu0", "pcie_replay", 12, 13)}, "pcie").empty());
  CHECK(judged_codes(0.4, {rose("gpu0", "pcie_replay", 12, 20)}, "pcie") ==
        std::set<std::string>{"PCIE_REPLAYS_UNDER_LOAD@gpu0"});
  // Standing still at any value is healthy (the H200 reads nonzero counters at idle).
  CHECK(judged_codes(0.4, {rose("gpu0", "pcie_replay", 4000, 4000)}, "pcie").empty());
  CHECK(judged_codes(0.4, {rose("gpu0", "aer_corrected", 3, 11)}, "pcie") ==
        std::set<std::string>{"PCIE_AER_CORRECTED_UNDER_LOAD@gpu0"});
  // Over 120 s the rate is per minute of it: 15 in 2 minutes is 7.5, below 8.
  CHECK(judged_codes(120.0, {rose("gpu0", "pcie_replay", 0, 15)}, "pcie").empty());
}

TEST_CASE("counters: NVLink CRC by rate, replays and recoveries from the first") {
  CHECK(judged_codes(
            1.0, {rose("gpu2", "nvlink_crc_flit", 0, 60), rose("gpu2", "nvlink_crc_data", 0, 40)},
            "nvlink") == std::set<std::string>{"NVLINK_CRC_UNDER_LOAD@gpu2"});
  CHECK(judged_codes(1.0, {rose("gpu2", "nvlink_crc_flit", 0, 99)}, "nccl").empty());
  CHECK(judged_codes(5.0, {rose("gpu3", "nvlink_recovery", 2, 3)}, "nccl") ==
        std::set<std::string>{"NVLINK_REPLAYS_UNDER_LOAD@gpu3"});
}

TEST_CASE("counters: RDMA link errors by rate; congestion counters are recorded, not judged") {
  CHECK(judged_codes(
            2.0, {rose("mlx5_0", "symbol_error", 0, 6), rose("mlx5_0", "port_rcv_errors", 0, 4)},
            "rdma") == std::set<std::string>{"RDMA_PORT_ERRORS_UNDER_LOAD@mlx5_0"});
  CHECK(judged_codes(2.0, {rose("mlx5_0:2", "symbol_error", 0, 9)}, "rdma").empty());
  CHECK(judged_codes(2.0,
                     {rose("mlx5_1", "port_xmit_discards", 0, 50000),
                      rose("mlx5_1", "out_of_sequence", 0, 900),
                      rose("mlx5_1", "local_ack_timeout_err", 0, 30)},
                     "rdma")
            .empty());
}

TEST_CASE("counters: uncorrectable rises fail at the first, whatever the thresholds") {
  CHECK(observed_codes(3.0, {rose("gpu0", "ecc_uncorrected_volatile", 0, 1)}) ==
        std::set<std::string>{"ECC_UNCORRECTED_UNDER_LOAD@gpu0"});
  CHECK(
      observed_codes(0.5, {rose("gpu1", "aer_fatal", 0, 1), rose("gpu1", "aer_nonfatal", 2, 3)}) ==
      std::set<std::string>{"PCIE_AER_UNCORRECTED_UNDER_LOAD@gpu1"});
  CHECK(observed_codes(2.0, {rose("mlx5_3", "link_downed", 7, 8)}) ==
        std::set<std::string>{"RDMA_LINK_DOWNED_UNDER_LOAD@mlx5_3"});
  const auto f =
      observe_counters(counter_readings(3.0, {rose("gpu0", "ecc_uncorrected_volatile", 5, 7)}));
  REQUIRE(f.size() == 1);
  CHECK(f[0].severity == Severity::fail);
  CHECK(f[0].action == Action::reset_gpu);
  // Nonzero but still: no finding. Totals are the inventory check's.
  CHECK(observed_codes(3.0, {rose("gpu0", "ecc_uncorrected_volatile", 5, 5)}).empty());
}

TEST_CASE("counters: a counter not read at both ends, or gone backwards, is no rise") {
  const std::vector<CounterValue> values = {
      {"gpu0", "ecc_uncorrected_volatile", std::nullopt, 4, false, std::nullopt},
      {"gpu0", "pcie_replay", 100, std::nullopt, false, std::nullopt},
      rose("gpu0", "ecc_corrected_volatile", 90000, 3),  // a driver reload reset it
      rose("mlx5_0", "link_downed", 9, 0),
  };
  CHECK(observed_codes(3.0, values).empty());
  for (const char* check : {"gemm", "pcie", "rdma"})
    CHECK(judged_codes(3.0, values, check).empty());
}

TEST_CASE("counters: readings round trip, and bad ones are refused naming the field") {
  CounterWindow w;
  w.seconds = 1.5;
  w.values = {rose("gpu0", "pcie_replay", 1, 2),
              {"gpu1", "aer_fatal", std::nullopt, 3, true, std::uint64_t{2}}};
  w.not_available = {"gpu1: PCIe replay counter: not supported"};
  Readings r = Readings::object();
  r["gpus"] = Readings::array();  // a check's own readings stay as they are
  record_counters(r, w);
  CHECK(r.contains("gpus"));
  const auto back = counters_of(Readings::parse(r.dump()));
  REQUIRE(back);
  CHECK(back->seconds == 1.5);
  REQUIRE(back->values.size() == 2);
  CHECK(back->values[0].before == 1u);
  CHECK(back->values[1].before == std::nullopt);
  CHECK(back->values[1].after == 3u);
  CHECK(back->values[1].injected);
  CHECK(back->values[0].previous_run == std::nullopt);
  CHECK(back->values[1].previous_run == 2u);
  CHECK(back->not_available == w.not_available);

  // A verdict of an older version: no window, nothing judged.
  CHECK_FALSE(counters_of(Readings::object()));
  CHECK(judge_counters(Readings::object(), test::h100(), "gemm").empty());

  Readings bad = r;
  bad["counters"]["values"][0]["after"] = -4;
  CHECK_THROWS_AS(counters_of(bad), InvalidInput);
  bad = r;
  bad["counters"]["seconds"] = -1;
  CHECK_THROWS_AS(counters_of(bad), InvalidInput);
  bad = r;
  bad["counters"] = "x";
  CHECK_THROWS_AS(counters_of(bad), InvalidInput);
}

TEST_CASE("counters: AER files are summed by their TOTAL lines") {
  CHECK(aer_total("RxErr 0\nBadTLP 2\nTOTAL_ERR_COR 2\n") == 2u);
  CHECK(aer_total("Undefined 0\nDLP 0\nTOTAL_ERR_FATAL 0\n") == 0u);
  CHECK(aer_total("TOTAL_ERR_NONFATAL 17") == 17u);  // no final newline
  CHECK_FALSE(aer_total("RxErr 3\nBadTLP 4\n"));
  CHECK_FALSE(aer_total(""));
  CHECK_FALSE(aer_total("TOTAL_ERR_COR x\n"));
}

TEST_CASE("counters: the watch reads AER and RDMA port counters from sysfs, and NVML's") {
  const CounterSysfsDir dir;
  const std::string root = dir.root;
  // The GPU of healthy_gpu(0) is at 00000000:10:00.0.
  const std::string pci = root + "/bus/pci/devices/0000:10:00.0";
  const std::string port = root + "/class/infiniband/mlx5_0/ports/1";
  const std::string port2 = root + "/class/infiniband/mlx5_0/ports/2";
  for (const std::string& d : {pci, port + "/counters", port + "/hw_counters", port2}) {
    std::filesystem::create_directories(d);
  }
  write_sysfs_file(pci + "/aer_dev_correctable", aer_text("TOTAL_ERR_COR", 1));
  write_sysfs_file(pci + "/aer_dev_nonfatal", aer_text("TOTAL_ERR_NONFATAL", 0));
  write_sysfs_file(pci + "/aer_dev_fatal", aer_text("TOTAL_ERR_FATAL", 0));
  write_sysfs_file(port + "/counters/symbol_error", "0\n");
  write_sysfs_file(port + "/counters/link_downed", "2\n");
  write_sysfs_file(port + "/hw_counters/out_of_sequence", "10\n");
  const test::ScopedEnv sysfs("PREFLIGHT_SYSFS_ROOT", root.c_str());

  NodeReading node = test::healthy_node(1);
  test::FakeBackend backend(node);
  GpuErrorCounters sample;
  sample.pcie_replay = 7;
  backend.error_counter_samples[0] = sample;
  CheckContext ctx;
  ctx.node = &node;
  ctx.engines = backend.engines();
  CounterWatch watch(ctx, "pcie", {CounterFamily::gpu_pcie, CounterFamily::rnic});
  write_sysfs_file(pci + "/aer_dev_correctable", aer_text("TOTAL_ERR_COR", 12));
  write_sysfs_file(pci + "/aer_dev_fatal", aer_text("TOTAL_ERR_FATAL", 1));
  write_sysfs_file(port + "/counters/symbol_error", "30\n");
  write_sysfs_file(port + "/counters/link_downed", "3\n");
  const CounterWindow w = watch.finish(ctx);

  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> got;
  for (const CounterValue& v : w.values) {
    REQUIRE(v.before);
    REQUIRE(v.after);
    got[v.entity + "." + v.counter] = {*v.before, *v.after};
  }
  CHECK(got["gpu0.aer_corrected"] == std::pair<std::uint64_t, std::uint64_t>{1, 12});
  CHECK(got["gpu0.aer_fatal"] == std::pair<std::uint64_t, std::uint64_t>{0, 1});
  CHECK(got["gpu0.pcie_replay"] == std::pair<std::uint64_t, std::uint64_t>{7, 7});
  CHECK(got["mlx5_0.symbol_error"] == std::pair<std::uint64_t, std::uint64_t>{0, 30});
  CHECK(got["mlx5_0.link_downed"] == std::pair<std::uint64_t, std::uint64_t>{2, 3});
  CHECK(got["mlx5_0.out_of_sequence"] == std::pair<std::uint64_t, std::uint64_t>{10, 10});
  // Port 2 has no counters: said, not failed.
  CHECK(std::find(w.not_available.begin(), w.not_available.end(),
                  "mlx5_0:2: port error counters: not in sysfs") != w.not_available.end());

  Readings r = Readings::object();
  record_counters(r, w);
  CHECK(test::codes(observe_counters(r)) ==
        std::set<std::string>{"PCIE_AER_UNCORRECTED_UNDER_LOAD@gpu0",
                              "RDMA_LINK_DOWNED_UNDER_LOAD@mlx5_0"});
  CHECK(test::codes(judge_counters(r, test::h100(), "pcie")) ==
        std::set<std::string>{"PCIE_AER_CORRECTED_UNDER_LOAD@gpu0"});
  CHECK(test::codes(judge_counters(r, test::h100(), "rdma")) ==
        std::set<std::string>{"RDMA_PORT_ERRORS_UNDER_LOAD@mlx5_0"});
}

TEST_CASE("counters: a node that exposes none is not available, never a finding") {
  const CounterSysfsDir dir;  // an empty sysfs
  const test::ScopedEnv sysfs("PREFLIGHT_SYSFS_ROOT", dir.root.c_str());
  NodeReading node = test::healthy_node(2);
  test::FakeBackend backend(node);  // no NVML counters
  CheckContext ctx;
  ctx.node = &node;
  ctx.engines = backend.engines();
  CounterWatch watch(ctx, "pcie", {CounterFamily::gpu_pcie, CounterFamily::gpu_ecc});
  const CounterWindow w = watch.finish(ctx);
  CHECK(w.values.empty());
  CHECK(w.not_available.size() == 4);  // per GPU: the AER files, NVML
  Readings r = Readings::object();
  record_counters(r, w);
  CHECK(observe_counters(r).empty());
  CHECK(judge_counters(r, test::h100(), "pcie").empty());
}

TEST_CASE("counters: with --state-dir the values are kept for the next run and compared with") {
  const CounterSysfsDir state;  // a state directory
  NodeReading node = test::healthy_node(1);
  test::FakeBackend backend(node);
  GpuErrorCounters sample;
  sample.pcie_replay = 40;
  backend.error_counter_samples[0] = sample;
  CheckContext ctx;
  ctx.node = &node;
  ctx.engines = backend.engines();
  ctx.state_dir = state.root;

  // First run: nothing to compare with; the end values are what a healthy verdict keeps.
  CounterWindow first = CounterWatch(ctx, "pcie", {CounterFamily::gpu_pcie}).finish(ctx);
  REQUIRE(first.values.size() == 1);
  CHECK(first.values[0].previous_run == std::nullopt);
  CHECK(first.state_file == "counters-pcie");
  CHECK(first.state == "gpu0 pcie_replay 40\n");
  CheckResult result;
  result.readings = Readings::object();
  close_counters(result, first, test::h100(), "pcie");
  REQUIRE(result.state_if_healthy.size() == 1);
  CHECK(result.state_if_healthy[0].file == "counters-pcie");
  write_sysfs_file(state.root + "/counters-pcie", first.state);

  // The next run: 40 was kept, 55 now; recorded, never judged.
  backend.error_counter_samples[0].pcie_replay = 55;
  CounterWindow second = CounterWatch(ctx, "pcie", {CounterFamily::gpu_pcie}).finish(ctx);
  REQUIRE(second.values.size() == 1);
  CHECK(second.values[0].previous_run == 40u);
  CHECK(second.values[0].after == 55u);
  Readings r = Readings::object();
  record_counters(r, second);
  CHECK(r["counters"]["values"][0]["previous_run"] == 40);
  CHECK(judge_counters(r, test::h100(), "pcie").empty());

  // A file that is not one is not trusted: said, and nothing compared.
  write_sysfs_file(state.root + "/counters-pcie", "gpu0 pcie_replay lots\n");
  CounterWindow third = CounterWatch(ctx, "pcie", {CounterFamily::gpu_pcie}).finish(ctx);
  CHECK(third.values[0].previous_run == std::nullopt);
  CHECK(std::find(third.not_available.begin(), third.not_available.end(),
                  "previous run's counters: " + state.root +
                      "/counters-pcie: not a counters file") != third.not_available.end());

  // A drill keeps nothing: its values are not the node's.
  const InjectedFault drill = [] {
    CheckRegistry registry;
    register_builtin_checks(registry);
    return parse_fault("pcie-replay-rise:9@gpu=0", registry.fault_kinds());
  }();
  const FaultPlan faults(std::vector<InjectedFault>{drill});
  ctx.faults = &faults;
  CounterWindow drilled = CounterWatch(ctx, "pcie", {CounterFamily::gpu_pcie}).finish(ctx);
  CHECK(drilled.state_file.empty());
  CHECK(drilled.state.empty());
}
