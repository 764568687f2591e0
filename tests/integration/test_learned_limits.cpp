// The learned limits through the binary, as an admin uses them (docs/baseline.md): a baseline
// learned from a fleet's verdicts fails a node a few percent slower than its siblings that no
// datasheet limit fails; a node's own history flags a drop that stays, never one bad run; a
// corrupt or foreign file in the history changes no verdict; a bad --history is exit 2.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/recorded_verdict.hpp"
#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

// A healthy run's verdict as `run --json` writes one, cut to what the learned limits read: the
// node shape, and each of two GPUs' GEMM speed.
nlohmann::json ll_verdict(const std::string& host, int day, int hour, double tflops) {
  nlohmann::json metrics = nlohmann::json::object();
  for (int gpu = 0; gpu < 2; ++gpu) {
    metrics["gpu" + std::to_string(gpu) + ".bf16.tflops_median"] = tflops * (1 + 0.001 * gpu);
  }
  return recorded_verdict(host, november_2026(day, hour),
                          {{{"name", "gemm"}, {"status", "pass"}, {"metrics", metrics}}},
                          "--node-shape");
}

// The codes of a verdict's run-level findings.
std::vector<std::string> ll_codes(const nlohmann::json& verdict) {
  std::vector<std::string> codes;
  for (const auto& f : verdict.at("findings")) codes.push_back(f.at("code").get<std::string>());
  return codes;
}

bool ll_has(const std::vector<std::string>& codes, const std::string& code) {
  for (const auto& c : codes) {
    if (c == code) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("learned limits: a node 5.5% slower than its siblings fails once the baseline is learned",
          "[learned]") {
  TempDir fleet;
  for (int n = 0; n < 16; ++n) {
    for (int run = 0; run < 3; ++run) {
      // Node offsets within +-0.8%, run noise within +-0.3%.
      const double tflops =
          750 * (1 + 0.008 * (((n * 37) % 13) / 6.0 - 1) + 0.003 * (((n + run * 7) % 5) / 2.0 - 1));
      const std::string host = "gpu" + std::to_string(100 + n);
      write_file(fleet.file(host + "-" + std::to_string(run) + ".json"),
                 ll_verdict(host, 1 + run, 3, tflops).dump(2));
    }
  }
  TempDir work;
  const std::string site = work.file("site.json");
  const RunResult learned = preflight({"baseline", fleet.path(), "--out", site});
  INFO(describe(learned));
  REQUIRE(learned.exit_code == 0);

  const std::string slow = work.file("slow.json");
  write_file(slow, ll_verdict("gpu300", 10, 3, 750 * 0.945).dump(2));
  const std::string sibling = work.file("sibling.json");
  write_file(sibling, ll_verdict("gpu301", 10, 3, 751).dump(2));

  // Today's limits pass it: nothing the datasheet or the node's own GPUs say is wrong.
  const RunResult alone = preflight({"judge", slow});
  INFO(describe(alone));
  CHECK(alone.exit_code == 0);

  const RunResult judged = preflight({"judge", slow, "--thresholds", site, "--json", "-"});
  INFO(describe(judged));
  CHECK(judged.exit_code == 1);
  const nlohmann::json v = parse_json(judged.out, "judge's verdict");
  int below = 0;
  for (const auto& f : v.at("findings")) {
    if (f.at("code") != "FIGURE_BELOW_BASELINE") continue;
    ++below;
    CHECK(f.at("severity") == "fail");
    CHECK(f.at("action") == "service");
  }
  CHECK(below == 2);  // both GPUs
  CHECK(v.at("learned").at("baseline_group") == "hgx-h100");
  CHECK(v.at("learned").at("baseline_figures") == 2);

  // A sibling within the fleet's spread passes with the same file.
  const RunResult fine = preflight({"judge", sibling, "--thresholds", site});
  INFO(describe(fine));
  CHECK(fine.exit_code == 0);

  // With the node's history, its runs before at full speed: one bad run, noted, not failed.
  TempDir history;
  write_file(history.file("prolog-0.json"), ll_verdict("gpu300", 9, 3, 750).dump(2));
  write_file(history.file("prolog-1.json"), ll_verdict("gpu300", 9, 15, 749).dump(2));
  const RunResult once =
      preflight({"judge", slow, "--thresholds", site, "--history", history.path(), "--json", "-"});
  INFO(describe(once));
  CHECK(once.exit_code == 0);
  const std::vector<std::string> once_codes = ll_codes(parse_json(once.out, "judge's verdict"));
  CHECK(ll_has(once_codes, "FIGURE_BELOW_BASELINE_ONCE"));
  CHECK_FALSE(ll_has(once_codes, "FIGURE_BELOW_BASELINE"));
  // Slow in the run before too: the node is slow, and fails.
  write_file(history.file("prolog-2.json"), ll_verdict("gpu300", 9, 21, 750 * 0.946).dump(2));
  const RunResult twice =
      preflight({"judge", slow, "--thresholds", site, "--history", history.path(), "--json", "-"});
  INFO(describe(twice));
  CHECK(twice.exit_code == 1);
  CHECK(ll_has(ll_codes(parse_json(twice.out, "judge's verdict")), "FIGURE_BELOW_BASELINE"));
}

TEST_CASE(
    "learned limits: history flags a drop that stays, not one bad run, and trusts no stranger",
    "[learned]") {
  TempDir history;
  // Eight steady runs of this node, two a day.
  for (int i = 0; i < 8; ++i) {
    write_file(
        history.file("prolog-" + std::to_string(i) + ".json"),
        ll_verdict("gpu100", 10 + i / 2, 3 + 12 * (i % 2), 750 * (1 + 0.002 * (i % 3))).dump(2));
  }
  // One bad run, then a normal current run: no regression.
  write_file(history.file("prolog-8.json"), ll_verdict("gpu100", 14, 3, 690).dump(2));
  write_file(history.file("prolog-9.json"), ll_verdict("gpu100", 14, 15, 751).dump(2));
  TempDir work;
  const std::string current = work.file("current.json");
  write_file(current, ll_verdict("gpu100", 15, 3, 749).dump(2));
  const RunResult steady =
      preflight({"judge", current, "--history", history.path(), "--json", "-"});
  INFO(describe(steady));
  CHECK(steady.exit_code == 0);
  const nlohmann::json sv = parse_json(steady.out, "judge's verdict");
  CHECK(ll_codes(sv).empty());
  CHECK(sv.at("learned").at("history_runs") == 10);
  CHECK_FALSE(sv.at("learned").at("regressions").empty());

  // A corrupt file, another host's verdict and a drill beside them: each skipped with a note,
  // the verdict otherwise the same.
  write_file(history.file("torn.json"), "{\"schema\": \"preflight.verdict/1\", \"host\": ");
  write_file(history.file("other.json"), ll_verdict("gpu999", 14, 9, 100).dump(2));
  nlohmann::json drill = ll_verdict("gpu100", 14, 9, 100);
  drill["injected_faults"] = {"gemm-slow:0.1@gpu=0"};
  write_file(history.file("drill.json"), drill.dump(2));
  const RunResult noted = preflight({"judge", current, "--history", history.path(), "--json", "-"});
  INFO(describe(noted));
  CHECK(noted.exit_code == 0);
  const nlohmann::json nv = parse_json(noted.out, "judge's verdict");
  CHECK(ll_codes(nv) == std::vector<std::string>{"HISTORY_FILE_SKIPPED"});
  CHECK(nv.at("learned").at("history_skipped").size() == 3);
  CHECK(nv.at("learned").at("regressions") == sv.at("learned").at("regressions"));

  // 6% down in the last two runs and the current one: a regression on both GPUs (a warning).
  write_file(history.file("prolog-10.json"), ll_verdict("gpu100", 15, 15, 705).dump(2));
  write_file(history.file("prolog-11.json"), ll_verdict("gpu100", 16, 3, 704).dump(2));
  const std::string dropped = work.file("dropped.json");
  write_file(dropped, ll_verdict("gpu100", 16, 15, 706).dump(2));
  const RunResult down = preflight({"judge", dropped, "--history", history.path(), "--json", "-"});
  INFO(describe(down));
  CHECK(down.exit_code == 0);
  CHECK(ll_has(ll_codes(parse_json(down.out, "judge's verdict")), "FIGURE_REGRESSED"));
  const RunResult strict = preflight({"judge", dropped, "--history", history.path(), "--strict"});
  CHECK(strict.exit_code == 1);
}

TEST_CASE("learned limits: a --history that is not a directory is exit 2 before anything runs",
          "[learned]") {
  TempDir work;
  const std::string file = work.file("file.json");
  write_file(file, "{}");
  for (const std::string& bad : {file, work.path() + "/missing"}) {
    const RunResult r =
        preflight({"run", "--checks", "inventory", "--expect-gpus", "0", "--history", bad});
    INFO(describe(r));
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("--history"));
  }
}

}  // namespace preflight::test
