// `preflight run --checks rdma` end to end on the fake libibverbs in EFA mode: the node of an AWS
// p5.48xlarge, 32 EFA devices, which the real engine finds through verbs and efadv (both from the
// fake: PREFLIGHT_IBVERBS_LIBRARY and PREFLIGHT_EFADV_LIBRARY name it) and moves bytes between on
// SRD queue pairs. GPU-less, as in test_fake_ibverbs_run.cpp. Where rates are judged the ports
// are SDR 2x (5 Gb/s): the fake's RDMA is memcpy on this machine's CPUs, which cannot carry
// EFA's real 100 Gb/s (EDR 4x) when the cores are busy, and the check would rightly call that
// slow; 5 Gb/s came out at 0.956 of the rate or better with both cores busy, and drains the
// check's 64 MiB in flight in 0.1 s, where 2.5 Gb/s took 0.2 s of each of the 64 transfers
// (18.6 s for the run against 25.5). The quick profile keeps the 32 NICs' run short: their pairs
// rotate over the runs, 32 of 992 in each.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

// GPU-less, `devices` fake EFA devices (p5.48xlarge: 32) offering RDMA read and write, with
// ports of `speed` x `width`.
RunOptions efa_run_options(int devices, const std::string& speed, const std::string& width) {
  RunOptions options = no_gpu_options(110.0);
  options.env.insert(options.env.end(), {{"PREFLIGHT_IBVERBS_LIBRARY", FAKE_IBVERBS_PATH},
                                         {"PREFLIGHT_EFADV_LIBRARY", FAKE_IBVERBS_PATH},
                                         {"FAKE_IBV_EFA", "1"},
                                         {"FAKE_IBV_DEVICES", std::to_string(devices)},
                                         {"FAKE_IBV_SPEED", speed},
                                         {"FAKE_IBV_WIDTH", width}});
  return options;
}

// fake0,fake1,...,fake31
std::string efa_device_list(int devices) {
  std::string list;
  for (int i = 0; i < devices; ++i) list += (i > 0 ? "," : "") + ("fake" + std::to_string(i));
  return list;
}

// Runs the rdma check, requires `expected_exit`, and returns its result.
json run_efa_rdma(const TempDir& dir, const RunOptions& options, int expected_exit,
                  std::vector<std::string> args) {
  const std::string path = dir.file("v.json");
  // The quick profile's 28 s by default: a loaded machine takes most of it for 64 transfers.
  args.insert(args.begin(), {"run", "--checks", "rdma", "--expect-gpus", "0", "--timeout", "100"});
  args.insert(args.end(), {"--json", path});
  const RunResult r = run_preflight(args, options);
  INFO(describe(r));
  REQUIRE(r.exited());
  REQUIRE(r.exit_code == expected_exit);
  const json verdict = parse_json(read_file(path), path);
  REQUIRE(verdict_shape_problems(verdict).empty());
  const json* rdma = find_check(verdict, "rdma");
  REQUIRE(rdma != nullptr);
  return *rdma;
}

}  // namespace

TEST_CASE("fake ibverbs run: 32 EFA devices pass with verified SRD transfers") {
  TempDir dir;
  const json rdma = run_efa_rdma(dir, efa_run_options(32, "SDR", "2"), 0, {"--expect-rnics", "32"});
  INFO(rdma.dump(2));
  CHECK(rdma["status"] == "pass");
  CHECK(rdma["metrics"]["usable_ports"] == 32.0);
  const json& readings = rdma["readings"];
  REQUIRE(readings["devices"].size() == 32);
  for (const json& device : readings["devices"]) {
    INFO(device.dump());
    CHECK(device["transport"] == "efa");
    CHECK_FALSE(device.contains("operations"));  // both offered: nothing to record
    CHECK(device["ports"][0]["link_layer"] == "Unspecified");
    CHECK(device["ports"][0]["rate_gbps"] == 5.0);
  }
  const json& transfers = readings["transfers"];
  // At least a loopback on every device; pairs rotate.
  REQUIRE(transfers.size() >= 32);
  for (const json& transfer : transfers) {
    INFO(transfer.dump());
    CHECK(transfer["queue_pair"] == "srd");
    CHECK(transfer["connected"] == true);
    CHECK(transfer["verified"] == true);
    CHECK(transfer["bad_bytes"] == 0);
    CHECK_FALSE(transfer.contains("error"));
  }
}

TEST_CASE("fake ibverbs run: an EFA device missing from --rdma-devices is named") {
  TempDir dir;
  // EFA's own 100 Gb/s: the run takes 12 s instead of 18, and the bandwidth findings that a busy
  // machine's memcpy earns there are beside the point.
  const json rdma = run_efa_rdma(dir, efa_run_options(31, "EDR", "4"), 1,
                                 {"--rdma-devices", efa_device_list(32)});
  INFO(rdma.dump(2));
  CHECK(rdma["status"] == "fail");
  CHECK(find_finding(rdma["findings"], "RDMA_DEVICE_MISSING", "fake31") != nullptr);
  CHECK(find_finding(rdma["findings"], "RDMA_DEVICE_MISSING", "fake30") == nullptr);
}

}  // namespace preflight::test
