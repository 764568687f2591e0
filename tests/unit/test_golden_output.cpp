// The renderers' output, byte for byte, on a node verdict that every check wrote through the
// runner with fake engines: the JSON document, the table, the Prometheus exposition and the
// summary a fleet rank sends. A change that moves code around must leave these files as they are;
// a change that means to alter the output regenerates them (PREFLIGHT_GOLDEN_WRITE=DIR writes
// what the code renders now) and says so in docs/verdict.md.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fleet/logic/fleet_verdict.hpp"
#include "report/prometheus.hpp"
#include "report/report.hpp"
#include "report/report_documents.hpp"
#include "run/runner.hpp"
#include "support/builtin_figures.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"
#include "support/fake_collective_engine.hpp"
#include "support/fake_gemm_engine.hpp"
#include "support/fake_rdma_engine.hpp"

using namespace preflight;
using namespace std::chrono_literals;

namespace {

// Every check on a 4-GPU H100 node with 4 NICs, three of them drills so that findings, injected
// marks and the figures of a slow GPU, pair and NIC appear in the output. Times are fixed: the
// output depends on the code, not on the machine.
Verdict golden_verdict() {
  CheckRegistry registry;
  register_builtin_checks(registry);
  CheckOptions options;
  options.set("--gemm-seconds", "1");
  const auto plan = plan_checks(registry, Profile::quick, {}, options);
  const std::vector<std::string> specs = {"gemm-slow:0.8@gpu=1", "nvlink-slow:0.5@pair=0-2",
                                          "rdma-slow:0.5@nic=mlx5_2", "ecc-correctable:7@gpu=3"};
  std::vector<InjectedFault> faults;
  for (const auto& spec : specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan fault_plan(faults);
  test::FakeBackend backend(test::healthy_node(4));
  test::FakeGemmEngine gemm;
  test::FakeBandwidthEngine bandwidth;
  test::FakeRdmaEngine rdma(4, true);
  test::FakeCollectiveEngine collective;
  backend.gemm = &gemm;
  backend.bandwidth = &bandwidth;
  backend.rdma = &rdma;
  backend.collective = &collective;
  GpuTelemetry sample;
  sample.sm_clock_mhz = 1980;
  sample.temperature_c = 61;
  sample.power_w = 690.0;
  sample.clock_event_reasons = 0;
  backend.telemetry_sample = sample;
  Verdict skeleton;
  skeleton.tool.version = "0.0.0-golden";
  skeleton.tool.git = "golden";
  skeleton.host = "golden-node";
  skeleton.started_at = "2026-01-02T03:04:05Z";
  skeleton.profile = "quick";
  skeleton.argv = {"preflight", "run"};
  skeleton.injected_faults = specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.profile = Profile::quick;
  settings.deadline = SteadyClock::now() + 120s;
  settings.options = options;
  Runner runner(backend.engines(), fault_plan);
  auto outcome = runner.run(state, plan, settings);
  REQUIRE(outcome.invalid.empty());
  Verdict v = outcome.verdict;
  v.duration_s = 12.5;
  for (auto& c : v.checks) {
    c.duration_s = 1.25;
    // A check's share of the time follows how long the ones before it took.
    if (c.plan) c.plan->deadline_s = 10.0;
    // The kernel log the tests read lies in the source tree, wherever that is checked out.
    // ... and this boot's id is the machine's: the CI machine is not this one.
    if (c.name == "events" && c.readings.is_object()) {
      c.readings["path"] = "/dev/kmsg";
      c.readings["boot_id"] = "00000000-0000-4000-8000-000000000000";
    }
    // The error counters' window lasts as long as the check's load took.
    if (c.readings.is_object() && c.readings.contains("counters")) {
      c.readings["counters"]["seconds"] = 1.0;
    }
  }
  if (v.plan) v.plan->timeout_s = 120.0;
  aggregate(v, false);
  return v;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void compare(const std::string& name, const std::string& actual) {
  if (const char* dir = std::getenv("PREFLIGHT_GOLDEN_WRITE")) {
    std::ofstream(std::string(dir) + "/" + name, std::ios::binary) << actual;
  }
  const std::string path = std::string(PREFLIGHT_SOURCE_DIR) + "/tests/unit/golden/" + name;
  const std::string expected = read_file(path);
  INFO("tests/unit/golden/" << name << " differs from what the code renders now");
  CHECK(actual == expected);
}

std::string local_summary_text(const Verdict& v) {
  const LocalSummary s = summarize_local(v, test::builtin_figures());
  std::string out = s.verdict + " " + std::to_string(s.exit_code) + " " + s.reason + "\n";
  for (const auto& f : s.findings) out += "finding " + f + "\n";
  for (const auto& [figure, value] : s.figures) {
    std::ostringstream line;
    line.precision(17);
    line << "figure " << figure << " " << value << "\n";
    out += line.str();
  }
  return out;
}

}  // namespace

TEST_CASE("golden: every renderer's output on a verdict the checks wrote is unchanged") {
  const Verdict v = golden_verdict();
  compare("node.json", verdict_to_json_text(v));
  compare("node.txt", verdict_to_text(v, TextStyle{}));
  compare("node.prom", verdict_to_prometheus(v, test::builtin_figures()));
  compare("node.local", local_summary_text(v));

  // The page and the script lines, from the JSON above and from the fleet fixture.
  ReportDocument node;
  node.path = "node.json";
  node.doc = nlohmann::ordered_json::parse(verdict_to_json_text(v));
  ReportDocument fleet = load_report_document(std::string(PREFLIGHT_SOURCE_DIR) +
                                              "/tests/report/data/fleet-6node.json");
  fleet.path = "fleet-6node.json";  // the page shows the path: keep the checkout's out of it
  HtmlReportOptions html;
  html.generated_at = "2026-01-02T03:05:00Z";
  html.tool_version = "0.0.0-golden";
  html.figures = test::builtin_figures();
  compare("node.tsv", report_fields_tsv(node));
  compare("report.html", render_html_report({node, fleet}, html));
}
