// `preflight run`, `list`, `thresholds`, `--version` and `--help` as a user runs them, on a
// node made to look GPU-less (no NVML, no CUDA device) so they behave alike on any machine.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

const std::vector<std::string> kRunOptions = {
    "--profile", "--checks", "--json", "--timeout", "--expect-gpus", "--thresholds", "--strict",
    "--inject-fault",
    // Check options, added from the registry.
    "--gemm-dtypes", "--gemm-seconds", "--gemm-size", "--gemm-memory-mib", "--gemm-detectors"};

// Runs, requires the exit code, and returns the verdict file parsed and shape-checked.
json run_for_verdict(const TempDir& dir, std::vector<std::string> args, int expected_exit) {
  const std::string path = dir.file("v.json");
  args.insert(args.end(), {"--json", path});
  const RunResult r = preflight(args);
  INFO("preflight " << joined(args) << r.describe() << "\nstdout:\n"
                    << r.out << "\nstderr:\n"
                    << r.err);
  REQUIRE(r.exited());
  REQUIRE(r.exit_code == expected_exit);
  const json v = parse_json(read_file(path), path);
  INFO(v.dump(2));
  CHECK(joined(verdict_shape_problems(v)) == "");
  CHECK(v.value("exit_code", -1) == expected_exit);
  return v;
}

}  // namespace

TEST_CASE("run: a node without GPU is unhealthy with NO_GPU_VISIBLE", "[run]") {
  TempDir dir;
  const json v = run_for_verdict(dir, {"run"}, 1);
  INFO(v.dump(2));
  CHECK(v["verdict"] == "fail");
  CHECK(v["reason"].get<std::string>().find("no GPU") != std::string::npos);
  CHECK(v["system"]["gpus"].empty());
  CHECK(v["injected_faults"].empty());
  const json* inventory = find_check(v, "inventory");
  REQUIRE(inventory != nullptr);
  CHECK((*inventory)["status"] == "fail");
  const json* f = find_finding((*inventory)["findings"], "NO_GPU_VISIBLE", "node");
  REQUIRE(f != nullptr);
  CHECK((*f)["severity"] == "fail");
  CHECK((*f)["injected"] == false);
  CHECK_FALSE((*f)["remediation"].get<std::string>().empty());
}

TEST_CASE("run: --expect-gpus 0 accepts a node without GPU", "[run]") {
  TempDir dir;
  const json v = run_for_verdict(dir, {"run", "--expect-gpus", "0"}, 0);
  INFO(v.dump(2));
  CHECK(v["verdict"] == "pass");
  CHECK(v["reason"] == "");
  const json* inventory = find_check(v, "inventory");
  REQUIRE(inventory != nullptr);
  CHECK((*inventory)["status"] == "pass");
  const json* f = find_finding((*inventory)["findings"], "NO_GPU_EXPECTED", "node");
  REQUIRE(f != nullptr);
  CHECK((*f)["severity"] == "info");
  CHECK(find_finding((*inventory)["findings"], "NO_GPU_VISIBLE") == nullptr);
}

TEST_CASE("run: --json - writes only the JSON to stdout and the table to stderr", "[run]") {
  TempDir dir;
  RunOptions options = no_gpu_options();
  options.cwd = dir.path();
  const RunResult r = run_preflight({"run", "--expect-gpus", "0", "--json", "-"}, options);
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  REQUIRE(r.exit_code == 0);
  const json v = parse_json(r.out, "stdout");  // the whole of stdout, nothing else
  CHECK(joined(verdict_shape_problems(v)) == "");
  CHECK(v["verdict"] == "pass");
  CHECK(r.err.find("inventory") != std::string::npos);
  CHECK(r.err.find("\"schema\"") == std::string::npos);
  CHECK(r.out.find("Verdict:") == std::string::npos);
  CHECK(dir.entries().empty());  // "-" is not a file name
}

TEST_CASE("run: the verdict JSON has every documented key with the right type", "[run]") {
  TempDir dir;
  const std::vector<std::string> args = {"run", "--profile", "standard", "--timeout", "100"};
  for (int expect : {-1, 0}) {
    std::vector<std::string> a = args;
    if (expect >= 0) a.insert(a.end(), {"--expect-gpus", std::to_string(expect)});
    const json v = run_for_verdict(dir, a, expect == 0 ? 0 : 1);
    INFO(v.dump(2));
    CHECK(v["schema"] == "preflight.verdict/1");
    CHECK(v["tool"]["name"] == "preflight");
    CHECK_FALSE(v["tool"]["version"].get<std::string>().empty());
    CHECK_FALSE(v["host"].get<std::string>().empty());
    CHECK(std::regex_match(v["started_at"].get<std::string>(),
                           std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z)")));
    CHECK(v["duration_s"].get<double>() >= 0.0);
    CHECK(v["profile"] == "standard");
    // argv as given, after the program name.
    a.insert(a.end(), {"--json", dir.file("v.json")});
    REQUIRE(v["argv"].size() == a.size() + 1);
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(v["argv"][i + 1] == a[i]);
    CHECK(v["system"]["cuda_runtime"].is_string());
    REQUIRE(v["checks"].size() >= 1);
    const json* inventory = find_check(v, "inventory");
    REQUIRE(inventory != nullptr);
    CHECK((*inventory)["metrics"]["gpu_count"].is_number());
    CHECK((*inventory)["metrics"]["gpu_count"].get<double>() == 0.0);
    if (expect < 0) {
      const json* f = find_finding((*inventory)["findings"], "NO_GPU_VISIBLE");
      REQUIRE(f != nullptr);
      CHECK((*f)["value"].is_number());
      CHECK((*f)["threshold"].is_number());
      CHECK((*f)["unit"] == "GPUs");
    }
  }
}

TEST_CASE("run: the verdict file has mode 0644 and no temporary file is left", "[run]") {
  TempDir dir;
  const mode_t old_mask = umask(077);  // the file must be 0644 whatever the umask
  const RunResult r = preflight({"run", "--expect-gpus", "0", "--json", dir.file("verdict.json")});
  umask(old_mask);
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(file_mode(dir.file("verdict.json")) == 0644);
  CHECK(dir.entries() == std::vector<std::string>{"verdict.json"});
}

TEST_CASE("run: an existing verdict file is replaced", "[run]") {
  TempDir dir;
  const std::string path = dir.file("v.json");
  write_file(path, "old contents, not a verdict\n");
  chmod(path.c_str(), 0600);

  json v = run_for_verdict(dir, {"run", "--expect-gpus", "0"}, 0);
  CHECK(v["verdict"] == "pass");
  CHECK(file_mode(path) == 0644);
  CHECK(dir.entries() == std::vector<std::string>{"v.json"});

  // And a second run replaces the first verdict.
  v = run_for_verdict(dir, {"run"}, 1);
  CHECK(v["verdict"] == "fail");
  CHECK(dir.entries() == std::vector<std::string>{"v.json"});
}

TEST_CASE("run: --strict does not change a passing verdict", "[run]") {
  TempDir dir;
  const json v = run_for_verdict(dir, {"run", "--strict", "--expect-gpus", "0"}, 0);
  CHECK(v["verdict"] == "pass");
  CHECK(v["reason"] == "");
}

TEST_CASE("run: a drill whose check is skipped is no pass: warn, and fail with --strict",
          "[run][drill]") {
  TempDir dir;
  const std::vector<std::string> drill = {"run", "--expect-gpus", "0", "--inject-fault",
                                          "hang@check=gemm"};
  const json v = run_for_verdict(dir, drill, 0);
  INFO(v.dump(2));
  CHECK(v["verdict"] == "warn");
  CHECK(v["injected_faults"] == json::array({"hang@check=gemm"}));
  CHECK((*find_check(v, "gemm"))["status"] == "skip");
  REQUIRE(v["findings"].size() == 1);
  const json& f = v["findings"][0];
  CHECK(f["code"] == "INJECTED_FAULT_NOT_EXERCISED");
  CHECK(f["severity"] == "warn");
  CHECK(f["entity"] == "node");
  CHECK(f["injected"] == true);
  CHECK(f["message"] ==
        "--inject-fault 'hang@check=gemm' was not exercised: gemm was skipped (no GPU on this "
        "node (--expect-gpus 0))");
  CHECK_THAT(v["reason"].get<std::string>(),
             Catch::StartsWith("injected fault: INJECTED_FAULT_NOT_EXERCISED --inject-fault "
                               "hang@check=gemm was not exercised: gemm was skipped"));

  std::vector<std::string> strict = drill;
  strict.push_back("--strict");
  const json s = run_for_verdict(dir, strict, 1);
  CHECK(s["verdict"] == "warn");
  CHECK(s["findings"][0]["code"] == "INJECTED_FAULT_NOT_EXERCISED");
}

TEST_CASE("run: a drill of a check that runs fails by its own finding and says nothing more",
          "[run][drill]") {
  TempDir dir;
  const json v = run_for_verdict(dir,
                                 {"run", "--checks", "inventory", "--expect-gpus", "0", "--timeout",
                                  "4", "--inject-fault", "hang@check=inventory"},
                                 1);
  INFO(v.dump(2));
  CHECK(v["verdict"] == "fail");
  const json* inventory = find_check(v, "inventory");
  REQUIRE(inventory != nullptr);
  CHECK(find_finding((*inventory)["findings"], "CHECK_TIMEOUT") != nullptr);
  CHECK(v["findings"].empty());
  CHECK(v.dump().find("INJECTED_FAULT_NOT_EXERCISED") == std::string::npos);
}

TEST_CASE("run: list names every check, profile and fault kind", "[list]") {
  const RunResult r = preflight({"list"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("inventory") != std::string::npos);
  for (const char* profile : {"quick", "standard", "burnin"}) {
    CHECK(r.out.find(profile) != std::string::npos);
  }
  CHECK(r.out.find("hang@check") != std::string::npos);
  CHECK(r.out.find("mig-on@gpu") != std::string::npos);
}

TEST_CASE("run: list --json describes checks, profiles and fault kinds", "[list]") {
  const RunResult r = preflight({"list", "--json"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json doc = parse_json(r.out, "list --json");

  bool inventory = false;
  for (const auto& c : doc.at("checks")) {
    if (c.at("name") != "inventory") continue;
    inventory = true;
    CHECK(c.at("always_runs") == true);
    CHECK(c.at("needs_gpu") == false);
    // The time model's seconds for the default node (8 x H100 SXM5, 8 NICs).
    CHECK(c.at("expected_s").at("quick").is_number());
  }
  CHECK(inventory);

  std::vector<std::string> profiles;
  for (const auto& p : doc.at("profiles")) {
    profiles.push_back(p.at("name"));
    CHECK(p.at("default_timeout_s").is_number());
    CHECK(p.at("expected_s").get<double>() < p.at("default_timeout_s").get<double>());
    const auto& checks = p.at("checks");
    CHECK(std::find(checks.begin(), checks.end(), "inventory") != checks.end());
  }
  CHECK(profiles == std::vector<std::string>{"quick", "standard", "burnin"});
  CHECK(doc.at("model_node").at("gpus") == 8);
  // Issue 16: the quick profile is planned within 30 s on 8 GPUs and 8 NICs.
  CHECK(doc.at("profiles").at(0).at("expected_s").get<double>() <= 30.0);

  const json* hang = nullptr;
  const json* mig = nullptr;
  for (const auto& k : doc.at("fault_kinds")) {
    INFO(k.dump());
    CHECK(k.at("kind").is_string());
    CHECK_FALSE(k.at("description").get<std::string>().empty());
    CHECK_FALSE(k.at("targets").empty());
    // Fleet kinds make nodes faulty in the fleet verdict; they produce no node finding.
    if (k.at("check") != "fleet") CHECK_FALSE(k.at("finding_codes").empty());
    if (k["kind"] == "hang") hang = &k;
    if (k["kind"] == "mig-on") mig = &k;
  }
  REQUIRE(hang != nullptr);
  CHECK((*hang)["targets"] == json::array({"check"}));
  CHECK((*hang)["finding_codes"] == json::array({"CHECK_TIMEOUT"}));
  REQUIRE(mig != nullptr);
  CHECK((*mig)["targets"] == json::array({"gpu"}));
  CHECK((*mig)["finding_codes"] == json::array({"MIG_ENABLED"}));
  // Each kind names the check that implements it: a drill knows which check to run.
  CHECK((*hang)["check"] == "any");
  CHECK((*mig)["check"] == "inventory");
  bool gemm_kind = false;
  for (const auto& k : doc.at("fault_kinds")) {
    if (k["kind"] == "gemm-bitflip") gemm_kind = k["check"] == "gemm";
  }
  CHECK(gemm_kind);
  int fleet_kinds = 0;
  for (const auto& k : doc.at("fault_kinds")) {
    if (k["check"] == "fleet") {
      ++fleet_kinds;
      CHECK(k["targets"] == json::array({"node"}));
    }
  }
  CHECK(fleet_kinds == 9);

  // Each kind says what VALUE it takes, so a script can build a valid spec from the list.
  std::map<std::string, json> values;
  for (const auto& k : doc.at("fault_kinds")) values[k.at("kind")] = k.at("value");
  CHECK(values.at("mig-on") == json{{"kind", "none"}});
  CHECK(values.at("temperature").at("kind") == "number");
  CHECK(values.at("temperature").at("min") == 0.0);
  CHECK(values.at("temperature").at("max") == 200.0);
  CHECK(values.at("gemm-bitflip").at("kind") == "optional_number");
  CHECK(values.at("gemm-bitflip").at("integer") == true);
  CHECK(values.at("throttle").at("kind") == "word");
  CHECK(values.at("throttle").at("words").size() == 5);
  CHECK(values.at("launch-slow").at("min") == 1.0);
  CHECK(values.at("launch-slow").at("max") == 600.0);
}

TEST_CASE("run: gemm options are accepted where the check runs; without GPU it is skipped",
          "[run]") {
  const RunResult r =
      preflight({"run", "--expect-gpus", "0", "--checks", "gemm", "--gemm-dtypes", "fp64,bf16",
                 "--gemm-seconds", "2", "--gemm-detectors", "checksum,repeat", "--json", "-"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json v = parse_json(r.out, "verdict");
  const json* gemm = find_check(v, "gemm");
  REQUIRE(gemm != nullptr);
  CHECK((*gemm)["status"] == "skip");
  CHECK_THAT((*gemm)["skip_reason"].get<std::string>(), Catch::Contains("no GPU"));
}

TEST_CASE("run: thresholds --sku prints a document that run --thresholds accepts", "[thresholds]") {
  TempDir dir;
  const RunResult r = preflight({"thresholds", "--sku", "h100-sxm5-80gb"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json doc = parse_json(r.out, "thresholds --sku h100-sxm5-80gb");
  CHECK(doc.at("schema") == "preflight.thresholds/1");
  CHECK(doc.at("sku") == "h100-sxm5-80gb");
  CHECK(doc.at("inventory").at("expected_pcie_gen").is_number());
  CHECK(doc.at("inventory").at("expected_pcie_gen") == 5);

  const std::string file = dir.file("h100.json");
  write_file(file, r.out);
  const json v = run_for_verdict(dir, {"run", "--thresholds", file, "--expect-gpus", "0"}, 0);
  CHECK(v["verdict"] == "pass");

  // Applying the document on top of the same SKU changes nothing.
  const RunResult again =
      preflight({"thresholds", "--sku", "h100-sxm5-80gb", "--thresholds", file});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(parse_json(again.out, "thresholds --thresholds") == doc);
}

TEST_CASE("run: thresholds without --sku on a node without GPU prints the generic values",
          "[thresholds]") {
  const RunResult r = preflight({"thresholds"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const json doc = parse_json(r.out, "thresholds");
  CHECK(doc.at("sku") == "generic");
  CHECK(doc.at("inventory").at("temperature_fail_c").is_number());
}

TEST_CASE("run: --version prints the version", "[cli]") {
  const RunResult r = preflight({"--version"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.rfind("preflight ", 0) == 0);
  CHECK(std::regex_search(r.out, std::regex(R"(\d+\.\d+\.\d+)")));

  // The same version the verdict records.
  const RunResult run = preflight({"run", "--expect-gpus", "0", "--json", "-"});
  REQUIRE(run.exit_code == 0);
  const json v = parse_json(run.out, "verdict");
  const std::string version = v["tool"]["version"];
  CHECK_FALSE(version.empty());
  CHECK(r.out.find(version) != std::string::npos);
}

TEST_CASE("run: --help mentions every run option", "[cli]") {
  const RunResult r = preflight({"--help"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("run") != std::string::npos);
  for (const auto& option : kRunOptions) {
    INFO(option);
    CHECK(r.out.find(option) != std::string::npos);
  }
}

TEST_CASE("run: run --help mentions every run option", "[cli]") {
  const RunResult r = preflight({"run", "--help"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());
  for (const auto& option : kRunOptions) {
    INFO(option);
    CHECK(r.out.find(option) != std::string::npos);
  }
}

}  // namespace preflight::test
