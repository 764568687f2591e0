// `preflight baseline` as an admin runs it: a directory of verdicts in, a thresholds file out,
// and the exit codes of docs/baseline.md (0 learned, 1 nothing learnable, 2 bad input, 3 the
// file could not be written), nothing written unless learned.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/recorded_verdict.hpp"
#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

// A healthy run's verdict as `run --json` writes one, cut to what baseline reads: the node
// shape it was judged as, and the limited figures of two checks (a GPU's GEMM speed per GPU and
// the node's slowest NVLink pair).
nlohmann::json bcmd_verdict(const std::string& host, int day, double tflops) {
  nlohmann::json gemm_metrics = nlohmann::json::object();
  for (int gpu = 0; gpu < 2; ++gpu) {
    gemm_metrics["gpu" + std::to_string(gpu) + ".bf16.tflops_median"] = tflops * (1 + 0.001 * gpu);
    gemm_metrics["gpu" + std::to_string(gpu) + ".bf16.tflops_min"] = tflops * 0.95;
  }
  return recorded_verdict(host, november_2026(day, 3),
                          {{{"name", "gemm"}, {"status", "pass"}, {"metrics", gemm_metrics}},
                           {{"name", "nvlink"},
                            {"status", "pass"},
                            {"metrics", {{"unidirectional_min_gbps", 370.0 + day * 0.5}}}}},
                          "reference board of 8 x h100-sxm5-80gb");
}

// `nodes` nodes of two runs each, as the Slurm hooks' history folders collected centrally.
void bcmd_write_fleet(const TempDir& dir, int nodes) {
  for (int n = 0; n < nodes; ++n) {
    for (int run = 0; run < 2; ++run) {
      const std::string host = "gpu" + std::to_string(100 + n);
      // Distinct offsets between nodes within 1%, run noise within 0.2%.
      const double tflops = 700 * (1 + 0.01 * (((n * 37) % 13) / 6.0 - 1) +
                                   0.002 * (((n * 5 + run * 7) % 11) / 5.0 - 1));
      write_file(dir.file(host + "-" + std::to_string(run) + ".json"),
                 bcmd_verdict(host, 1 + run, tflops).dump(2));
    }
  }
}

}  // namespace

TEST_CASE("baseline: a directory of verdicts gives a thresholds file and a summary", "[baseline]") {
  TempDir verdicts;
  bcmd_write_fleet(verdicts, 12);
  nlohmann::json unhealthy = bcmd_verdict("gpu100", 5, 300);
  unhealthy["verdict"] = "fail";
  unhealthy["exit_code"] = 1;
  write_file(verdicts.file("gpu100-bad.json"), unhealthy.dump());
  write_file(verdicts.file("notes.txt"), "not a verdict, not read\n");
  TempDir out;
  const std::string site = out.file("site.json");

  const RunResult r = preflight({"baseline", verdicts.path(), "--out", site});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Learned from 24 of 25 verdicts"));
  CHECK_THAT(r.out,
             Catch::Contains("1 unhealthy run left out: " + verdicts.path() + "/gpu100-bad.json"));
  CHECK_THAT(r.out, Catch::Contains("Group hgx-h100: 12 nodes, 24 runs; 3 figures learned"));
  CHECK_THAT(r.out, Catch::Contains("gemm gpu0 bf16.tflops_median"));
  CHECK_THAT(r.out, Catch::Contains("Wrote " + site + ": 1 group, 3 figure limits."));
  CHECK(r.err.empty());

  const nlohmann::json doc = parse_json(read_file(site), "the thresholds file");
  CHECK(doc.at("schema") == "preflight.thresholds/1");
  const nlohmann::json& baseline = doc.at("baseline");
  CHECK(baseline.dump().find("hgx-h100") != std::string::npos);
  CHECK(baseline.dump().find("bf16.tflops_median") != std::string::npos);

  // The file is one `run` and `judge` take: `thresholds` reads it as they do.
  const RunResult shown = preflight({"thresholds", "--thresholds", site});
  INFO(describe(shown));
  CHECK(shown.exit_code == 0);
}

TEST_CASE("baseline: --out - writes the file to stdout and the summary to stderr", "[baseline]") {
  TempDir verdicts;
  bcmd_write_fleet(verdicts, 10);
  const RunResult r =
      preflight({"baseline", verdicts.path(), "--out", "-", "--min-nodes", "10", "--drop", "8"});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  const nlohmann::json doc = parse_json(r.out, "stdout");
  CHECK(doc.at("schema") == "preflight.thresholds/1");
  CHECK_THAT(r.err, Catch::Contains("Group hgx-h100: 10 nodes, 20 runs"));
}

TEST_CASE("baseline: a verdict named twice is read once", "[baseline]") {
  // A file given itself and inside its directory, and a second name for another (a link, as
  // archives made by hand have): counted twice, its run would weigh twice in its node's median.
  TempDir verdicts;
  bcmd_write_fleet(verdicts, 10);
  TempDir elsewhere;
  const std::string again = elsewhere.file("gpu101-0-again.json");
  REQUIRE(::symlink(verdicts.file("gpu101-0.json").c_str(), again.c_str()) == 0);
  TempDir out;
  const RunResult r = preflight({"baseline", verdicts.file("gpu100-0.json"), verdicts.path(), again,
                                 "--out", out.file("site.json")});
  INFO(describe(r));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("Learned from 20 of 20 verdicts"));
  CHECK_THAT(r.out, Catch::Contains("Group hgx-h100: 10 nodes, 20 runs"));
  CHECK_THAT(r.out, Catch::Contains("2 verdict files were named more than once: read once."));
}

TEST_CASE("baseline: too few nodes learn nothing: exit 1, the reason, no file", "[baseline]") {
  TempDir verdicts;
  bcmd_write_fleet(verdicts, 4);
  TempDir out;
  const std::string site = out.file("site.json");
  const RunResult r = preflight({"baseline", verdicts.path(), "--out", site});
  INFO(describe(r));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("Group hgx-h100: 4 nodes, 8 runs: refused: 4 nodes"));
  CHECK_THAT(r.out, Catch::Contains("Nothing learned"));
  CHECK_FALSE(path_exists(site));
  // Fewer nodes needed: learned.
  CHECK(preflight({"baseline", verdicts.path(), "--out", site, "--min-nodes", "3"}).exit_code == 0);
  CHECK(path_exists(site));
}

TEST_CASE("baseline: a bad input file is exit 2, one line naming it, nothing written",
          "[baseline]") {
  TempDir verdicts;
  bcmd_write_fleet(verdicts, 12);
  write_file(verdicts.file("gpu999.json"), "{\"schema\": \"preflight.verdict/1\", \"host\": ");
  TempDir out;
  const std::string site = out.file("site.json");
  const RunResult r = preflight({"baseline", verdicts.path(), "--out", site});
  INFO(describe(r));
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("preflight: ", 0) == 0);
  CHECK_THAT(r.err, Catch::Contains("gpu999.json"));
  CHECK(r.err.find('\n') == r.err.size() - 1);
  CHECK_FALSE(path_exists(site));

  // An existing file stays as it was.
  write_file(site, "{}\n");
  CHECK(preflight({"baseline", verdicts.path(), "--out", site}).exit_code == 2);
  CHECK(read_file(site) == "{}\n");

  // Arguments that are neither a regular file nor a directory, or name nothing.
  for (const std::string& path : {std::string("/dev/null"), verdicts.file("nosuch")}) {
    const RunResult odd = preflight({"baseline", path, "--out", site});
    INFO(describe(odd));
    CHECK(odd.exit_code == 2);
    CHECK_THAT(odd.err, Catch::Contains(path));
  }
  TempDir empty;
  CHECK(preflight({"baseline", empty.path(), "--out", site}).exit_code == 2);
  CHECK(read_file(site) == "{}\n");
}

TEST_CASE("baseline: a thresholds file that cannot be written is exit 3", "[baseline]") {
  TempDir verdicts;
  bcmd_write_fleet(verdicts, 10);
  const RunResult r =
      preflight({"baseline", verdicts.path(), "--out", verdicts.file("nosuch/site.json")});
  INFO(describe(r));
  CHECK(r.exit_code == 3);
  CHECK_THAT(r.err, Catch::Contains("cannot write the thresholds file"));
}

}  // namespace preflight::test
