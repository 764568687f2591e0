// The Prometheus textfile: verdict, check statuses, findings and the key figures, with names
// in base units and entities as labels. (tests/integration also parses a real run's file with
// the Prometheus client library.)
#include <catch2/catch.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "checks/inventory/inventory_findings.hpp"
#include "preflight/catalogue.hpp"
#include "report/prometheus.hpp"
#include "run/burnin.hpp"
#include "support/builtin_figures.hpp"

using namespace preflight;

namespace {

Verdict node_with_figures() {
  Verdict v;
  v.tool.version = "0.1.0";
  v.tool.git = "abc\"def";  // a quote must be escaped in a label value
  v.host = "node01";
  v.started_at = "2026-11-25T03:04:05Z";
  v.duration_s = 12.5;
  v.profile = "quick";
  CheckResult inv;
  inv.name = "inventory";
  inv.add_metric("", "gpu_count", 2, "count");
  inv.add_metric("gpu1", "temperature_c", 41, "C");
  inv.add_metric("gpu1", "probe_ms", 3.5, "ms");
  inv.findings.push_back(
      make_finding(inventory_findings(), "ECC_UNCORRECTABLE_VOLATILE", "gpu1", "2 errors"));
  inv.findings.push_back(
      make_finding(inventory_findings(), "ECC_UNCORRECTABLE_VOLATILE", "gpu1", "again"));
  inv.status = status_from_findings(inv.findings);
  CheckResult gemm;
  gemm.name = "gemm";
  gemm.add_metric("gpu0", "bf16.tflops_median", 771.25, "TFLOP/s");
  gemm.add_metric("gpu0", "bf16.sm_clock_mhz_median", 1980, "MHz");
  gemm.add_metric("", "bf16.node_median_tflops", 770, "TFLOP/s");
  gemm.add_metric("gpu0", "bf16.products", 40, "count");  // not a key figure: JSON only
  CheckResult nvlink;
  nvlink.name = "nvlink";
  nvlink.add_metric("", "unidirectional_min_gbps", 370, "GB/s");
  Matrix m;
  m.name = "unidirectional_gbps";
  m.unit = "GB/s";
  m.labels = {"gpu0", "gpu1"};
  m.values = {{std::nullopt, 371.5}, {368.0, std::nullopt}};
  nvlink.matrices.push_back(m);
  CheckResult rdma;
  rdma.name = "rdma";
  rdma.add_metric("mlx5_0", "rate_gbps", 400, "Gb/s");
  rdma.add_metric("mlx5_0-mlx5_3", "pair_gbps", 390.5, "Gb/s");
  rdma.add_metric("mlx5_0", "loopback_gbps", 395, "Gb/s");
  CheckResult pcie;
  pcie.name = "pcie";
  pcie.status = Status::skip;
  v.checks = {inv, gemm, nvlink, rdma, pcie};
  aggregate(v, false);
  return v;
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("prometheus: verdict, health, timestamp and duration of the run") {
  const std::string text = verdict_to_prometheus(node_with_figures(), test::builtin_figures());
  CHECK(has_line(text, "preflight_verdict{verdict=\"fail\"} 1"));
  CHECK(has_line(text, "preflight_verdict{verdict=\"pass\"} 0"));
  CHECK(has_line(text, "preflight_healthy 0"));
  CHECK(has_line(text, "preflight_exit_code 1"));
  CHECK(has_line(text, "preflight_injected 0"));
  CHECK(has_line(text, "preflight_last_run_timestamp_seconds 1795575845"));
  CHECK(has_line(text, "preflight_last_run_duration_seconds 12.5"));
  CHECK_THAT(text, Catch::Contains("git=\"abc\\\"def\""));
}

TEST_CASE("prometheus: one status series per check and status, durations of checks that ran") {
  const std::string text = verdict_to_prometheus(node_with_figures(), test::builtin_figures());
  CHECK(has_line(text, "preflight_check_status{check=\"inventory\",status=\"fail\"} 1"));
  CHECK(has_line(text, "preflight_check_status{check=\"inventory\",status=\"pass\"} 0"));
  CHECK(has_line(text, "preflight_check_status{check=\"pcie\",status=\"skip\"} 1"));
  CHECK_THAT(text, Catch::Contains("preflight_check_duration_seconds{check=\"gemm\"}"));
  CHECK_THAT(text, !Catch::Contains("preflight_check_duration_seconds{check=\"pcie\"}"));
  // The same finding twice is one series: a duplicate would make node_exporter drop the file.
  CHECK(has_line(text,
                 "preflight_finding{check=\"inventory\",code=\"ECC_UNCORRECTABLE_VOLATILE\","
                 "entity=\"gpu1\",severity=\"fail\",injected=\"false\"} 1"));
  CHECK(text.find("code=\"ECC_UNCORRECTABLE_VOLATILE\"") ==
        text.rfind("code=\"ECC_UNCORRECTABLE_VOLATILE\""));
}

TEST_CASE("prometheus: key figures per GPU, NIC and pair in base units") {
  const std::string text = verdict_to_prometheus(node_with_figures(), test::builtin_figures());
  CHECK(has_line(text, "preflight_gpus 2"));
  CHECK(has_line(text, "preflight_gpu_temperature_celsius{gpu=\"1\"} 41"));
  CHECK(has_line(text, "preflight_gpu_probe_seconds{gpu=\"1\"} 0.0035"));
  CHECK(has_line(text, "preflight_gemm_tflops{gpu=\"0\",dtype=\"bf16\"} 771.25"));
  CHECK(has_line(text, "preflight_gemm_sm_clock_hertz{gpu=\"0\",dtype=\"bf16\"} 1980000000"));
  CHECK(has_line(text, "preflight_gemm_node_median_tflops{dtype=\"bf16\"} 770"));
  CHECK(has_line(text, "preflight_nvlink_min_bandwidth_bytes_per_second 370000000000"));
  CHECK(has_line(text,
                 "preflight_nvlink_pair_bandwidth_bytes_per_second{src=\"gpu0\",dst=\"gpu1\","
                 "mode=\"unidirectional\"} 371500000000"));
  CHECK(has_line(text, "preflight_rdma_port_rate_bits_per_second{port=\"mlx5_0\"} 400000000000"));
  CHECK(has_line(
      text, "preflight_rdma_pair_bits_per_second{src=\"mlx5_0\",dst=\"mlx5_3\"} 390500000000"));
  CHECK(has_line(text, "preflight_rdma_loopback_bits_per_second{port=\"mlx5_0\"} 395000000000"));
  CHECK_THAT(text, !Catch::Contains("_products"));  // gpuN.<dtype>.products: JSON only
}

TEST_CASE("prometheus: every family has HELP and TYPE once, before its samples, and valid names") {
  Verdict v = node_with_figures();
  const std::string text = verdict_to_prometheus(v, test::builtin_figures());
  const std::regex sample(R"(([a-z_:][a-z0-9_:]*)(\{.*\})? (-?[0-9.e+]+))");
  std::set<std::string> typed;
  std::string current;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    INFO(line);
    if (line.rfind("# HELP ", 0) == 0) {
      current = line.substr(7, line.find(' ', 7) - 7);
      CHECK(typed.count(current) == 0);  // a family appears once: its samples are together
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      CHECK(line == "# TYPE " + current + " gauge");
      typed.insert(current);
      continue;
    }
    std::smatch m;
    REQUIRE(std::regex_match(line, m, sample));
    CHECK(m[1].str() == current);
    CHECK(m[1].str().rfind("preflight_", 0) == 0);
  }
  CHECK(typed.size() > 15);
}

TEST_CASE("prometheus: a burn-in says how many passes ran and failed") {
  Verdict v = node_with_figures();
  Verdict ok = v;
  ok.checks.resize(1);
  ok.checks[0].findings.clear();
  ok.checks[0].status = Status::pass;
  aggregate(ok, false);
  BurninRequest request;
  request.repeat = 3;
  const Verdict burn = combine_passes({ok, v, ok}, request, "repeat", 40, false);
  const std::string text = verdict_to_prometheus(burn, test::builtin_figures());
  CHECK(has_line(text, "preflight_burnin_passes 3"));
  CHECK(has_line(text, "preflight_burnin_failed_passes 1"));
}

TEST_CASE("prometheus: timestamps from the verdict's UTC time") {
  CHECK(epoch_seconds_of("1970-01-01T00:00:00Z") == 0);
  CHECK(epoch_seconds_of("2026-11-25T03:04:05Z") == 1795575845);
  CHECK(epoch_seconds_of("") == 0);
  CHECK(epoch_seconds_of("2026-11-25 03:04:05") == 0);
}
