// `preflight run --checks rdma` end to end on the fake libibverbs of tests/fake_ibverbs: the real
// binary loads it through PREFLIGHT_IBVERBS_LIBRARY, and the real engine reads its devices and
// runs every planned transfer (loopbacks, NIC pairs) through it, which the rdma check then
// judges. The node is made GPU-less (no NVML, no CUDA device), so no GPUDirect transfer is
// planned and the runs behave alike on any machine. The fake ports are SDR 1x (2.5 Gb/s), a rate
// the fake paces its completions to and that any machine copies memory faster than, so healthy
// transfers reach the port's rate; the check's 64 writes of 1 MiB in flight are 215 ms of it,
// so even a loaded machine keeps the port busy.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

// GPU-less, `devices` fake 10 Gb/s InfiniBand NICs, and `extra` variables for the fake.
RunOptions fake_rdma_options(int devices, const EnvVars& extra = {}) {
  RunOptions options = no_gpu_options();
  options.env.insert(options.env.end(), {{"PREFLIGHT_IBVERBS_LIBRARY", FAKE_IBVERBS_PATH},
                                         {"FAKE_IBV_DEVICES", std::to_string(devices)},
                                         {"FAKE_IBV_SPEED", "SDR"},
                                         {"FAKE_IBV_WIDTH", "1"}});
  options.env.insert(options.env.end(), extra.begin(), extra.end());
  return options;
}

// Runs the rdma check, requires `expected_exit`, and returns the rdma check's result.
json run_rdma(const TempDir& dir, const RunOptions& options, int expected_exit,
              std::vector<std::string> args = {}) {
  const std::string path = dir.file("v.json");
  args.insert(args.begin(), {"run", "--checks", "rdma", "--expect-gpus", "0"});
  args.insert(args.end(), {"--json", path});
  const RunResult r = run_preflight(args, options);
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  REQUIRE(r.exit_code == expected_exit);
  const json verdict = parse_json(read_file(path), path);
  INFO(verdict.dump(2));
  REQUIRE(verdict_shape_problems(verdict).empty());
  const json* rdma = find_check(verdict, "rdma");
  REQUIRE(rdma != nullptr);
  return *rdma;
}

std::string finding_message(const json& check, const std::string& code, const std::string& entity) {
  const json* finding = find_finding(check["findings"], code, entity);
  return finding != nullptr ? finding->value("message", "") : "(no " + code + " on " + entity + ")";
}

}  // namespace

TEST_CASE("fake ibverbs run: two healthy NICs pass with every transfer at the port's rate") {
  TempDir dir;
  // The standard profile's 2 s transfers: the fake's writes are memcpy on this machine's CPUs,
  // and quick's 0.15 s measured 0.72-0.88 of the rate when both cores were busy (1 run in 20).
  const json rdma =
      run_rdma(dir, fake_rdma_options(2), 0, {"--expect-rnics", "2", "--profile", "standard"});
  INFO(rdma.dump(2));
  CHECK(rdma["status"] == "pass");
  CHECK(rdma["summary"] == "2 RDMA devices, 2 usable ports, 4 of 4 transfers run");
  const json& metrics = rdma["metrics"];
  CHECK(metrics["usable_ports"] == 2.0);
  CHECK(metrics["fake0.rate_gbps"] == 2.5);
  for (const char* key : {"fake0.loopback_gbps", "fake1.loopback_gbps", "fake0-fake1.pair_gbps",
                          "fake1-fake0.pair_gbps"}) {
    INFO(key);
    REQUIRE(metrics.contains(key));
    CHECK(metrics[key].get<double>() >= 0.9 * 2.5);
    CHECK(metrics[key].get<double>() <= 2.5 * 1.001);
  }
}

TEST_CASE("fake ibverbs run: a down port, corruption and verbs failures become findings") {
  TempDir dir;
  SECTION("a port down") {
    const json rdma = run_rdma(dir, fake_rdma_options(2, {{"FAKE_IBV_DOWN", "fake1"}}), 1,
                               {"--expect-rnics", "2"});
    INFO(rdma.dump(2));
    CHECK(find_finding(rdma["findings"], "RDMA_PORT_DOWN", "fake1") != nullptr);
    CHECK(find_finding(rdma["findings"], "RDMA_COUNT_MISMATCH", "node") != nullptr);
    CHECK(rdma["metrics"].contains("fake0.loopback_gbps"));
  }
  SECTION("every write corrupted") {
    const json rdma = run_rdma(dir, fake_rdma_options(1, {{"FAKE_IBV_CORRUPT", "1"}}), 1);
    INFO(rdma.dump(2));
    CHECK(find_finding(rdma["findings"], "RDMA_DATA_MISMATCH", "fake0") != nullptr);
  }
  SECTION("a completion error") {
    const json rdma = run_rdma(dir, fake_rdma_options(1, {{"FAKE_IBV_FAIL_AT", "3"}}), 1);
    CHECK_THAT(finding_message(rdma, "RDMA_TRANSFER_ERROR", "fake0"),
               Catch::Contains("IBV_WC_RETRY_EXC_ERR: transport retry counter exceeded"));
  }
  SECTION("a queue pair that cannot reach RTR") {
    const json rdma = run_rdma(dir, fake_rdma_options(1, {{"FAKE_IBV_MODIFY_FAIL", "RTR"}}), 1);
    CHECK_THAT(finding_message(rdma, "RDMA_CONNECT_FAILED", "fake0"),
               Catch::Contains("ibv_modify_qp(RTR): Connection timed out"));
  }
}

TEST_CASE("fake ibverbs run: the rdma-slow drill halves the NIC's transfers") {
  TempDir dir;
  const json rdma =
      run_rdma(dir, fake_rdma_options(2), 1,
               {"--inject-fault", "rdma-slow:0.5@nic=fake1", "--profile", "standard"});
  INFO(rdma.dump(2));
  const json& metrics = rdma["metrics"];
  CHECK(metrics["fake0.loopback_gbps"].get<double>() >= 0.9 * 2.5);
  for (const char* key :
       {"fake1.loopback_gbps", "fake0-fake1.pair_gbps", "fake1-fake0.pair_gbps"}) {
    INFO(key);
    CHECK(metrics[key].get<double>() > 0.35 * 2.5);
    CHECK(metrics[key].get<double>() < 0.6 * 2.5);
  }
  CHECK(find_finding(rdma["findings"], "RDMA_BANDWIDTH_LOW", "fake1") != nullptr);
  CHECK(find_finding(rdma["findings"], "RDMA_BANDWIDTH_LOW", "fake0-fake1") != nullptr);
  CHECK(find_finding(rdma["findings"], "RDMA_BANDWIDTH_LOW", "fake0") == nullptr);
}

}  // namespace preflight::test
