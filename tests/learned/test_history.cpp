// A node's own history (`--history DIR`, src/learned/history.hpp): what is read and what is
// skipped, and the three judgements (a figure that stayed down, a counter that rose, failures
// that repeat), on verdicts built here and written to a temporary directory.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "learned/history.hpp"
#include "learned/history_detail.hpp"
#include "preflight/errors.hpp"
#include "report/report.hpp"

using namespace preflight;

namespace {

namespace hfs = std::filesystem;

constexpr const char* kHistTestHost = "gpu-a017";

// A fresh directory, removed with everything in it.
class HistoryTestDir {
 public:
  HistoryTestDir() {
    std::string pattern = (hfs::temp_directory_path() / "preflight-history-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) FAIL("mkdtemp failed");
    path_ = pattern;
  }
  ~HistoryTestDir() {
    std::error_code ignored;
    hfs::remove_all(path_, ignored);
  }
  HistoryTestDir(const HistoryTestDir&) = delete;
  HistoryTestDir& operator=(const HistoryTestDir&) = delete;
  std::string path() const { return path_.string(); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
  }

 private:
  hfs::path path_;
};

// UTC time `hours` after 2026-11-01T03:04:05Z: "2026-11-02T03:04:05Z" for 24.
std::string history_test_time(double hours) {
  std::tm base{};
  base.tm_year = 2026 - 1900;
  base.tm_mon = 10;
  base.tm_mday = 1;
  base.tm_hour = 3;
  base.tm_min = 4;
  base.tm_sec = 5;
  const std::time_t t = timegm(&base) + static_cast<std::time_t>(hours * 3600);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

// A hook's file name for the run: "prolog-20261102T030405Z-pass.json".
std::string history_test_name(const Verdict& v) {
  std::string stamp;
  for (const char c : v.started_at) {
    if (c != '-' && c != ':') stamp += c;
  }
  return "prolog-" + stamp + (v.exit_code == 0 ? "-pass" : "-fail") + ".json";
}

struct HistTestRun {
  HistTestRun(double start_hours, double gemm_tflops, bool is_unhealthy = false)
      : hours(start_hours), tflops(gemm_tflops), unhealthy(is_unhealthy) {}
  double hours;  // after the first day
  double tflops;
  bool unhealthy;
  std::optional<double> ecc_aggregate;
  std::string uuid = "GPU-5c0e1111";
};

// A run with one limited figure (gemm gpu0 bf16.tflops_median) and, where given, the inventory's
// lifetime ECC count in its readings; unhealthy: a GPU fell off the bus.
Verdict history_test_verdict(const HistTestRun& run) {
  Verdict v;
  v.host = kHistTestHost;
  v.started_at = history_test_time(run.hours);
  v.profile = "quick";
  v.argv = {"preflight", "run", "--json", "-"};
  CheckResult gemm;
  gemm.name = "gemm";
  gemm.add_metric("gpu0", "bf16.tflops_median", run.tflops, "TFLOP/s");
  if (run.unhealthy) {
    Finding f;
    f.code = "GPU_FELL_OFF_BUS";
    f.severity = Severity::fail;
    f.entity = "gpu0";
    f.message = "fell off the bus";
    gemm.findings.push_back(f);
  }
  gemm.status = status_from_findings(gemm.findings);
  v.checks.push_back(gemm);
  CheckResult inventory;
  inventory.name = "inventory";
  Readings gpu = {{"index", 0}, {"uuid", run.uuid}};
  if (run.ecc_aggregate) gpu["ecc_uncorrected_aggregate"] = *run.ecc_aggregate;
  inventory.readings = {{"gpus", Readings::array({gpu})}};
  v.checks.push_back(inventory);
  aggregate(v, false);
  return v;
}

std::string history_test_save(const HistoryTestDir& dir, const Verdict& v, std::string name = "") {
  if (name.empty()) name = history_test_name(v);
  dir.write(name, verdict_to_json_text(v));
  return name;
}

FigureCatalogue history_test_catalogue() {
  CheckFigures gemm;
  gemm.check = "gemm";
  gemm.exports.push_back(Figure<1>("{dtype}.tflops_median", "TFLOP/s", "median TFLOP/s")
                             .per({"gpu"})
                             .limited()
                             .spec());
  return {gemm};
}

// The runs saved, read back as `run --history` reads them, and the current run judged.
struct HistTestOutcome {
  History history;
  HistoryJudgement judgement;
};

HistTestOutcome history_test_judge(const std::vector<HistTestRun>& earlier,
                                   const HistTestRun& current,
                                   const BaselineGroup* fleet = nullptr) {
  HistoryTestDir dir;
  for (const HistTestRun& run : earlier) history_test_save(dir, history_test_verdict(run));
  const HistoryOptions options;
  HistTestOutcome out;
  out.history = read_history(dir.path(), kHistTestHost, options);
  out.judgement = judge_history(history_test_verdict(current), out.history,
                                history_test_catalogue(), fleet, options);
  return out;
}

std::vector<const Finding*> history_test_codes(const HistoryJudgement& j, const std::string& code) {
  std::vector<const Finding*> out;
  for (const Finding& f : j.findings) {
    if (f.code == code) out.push_back(&f);
  }
  return out;
}

bool history_test_has(const std::vector<std::string>& notes, const std::string& text) {
  for (const std::string& n : notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

// Ten healthy runs a day apart about 750 TFLOP/s, with a little noise.
std::vector<HistTestRun> history_test_steady_runs() {
  const double values[] = {750, 752, 748, 751, 749, 753, 747, 750, 751, 749};
  std::vector<HistTestRun> runs;
  for (int i = 0; i < 10; ++i) runs.emplace_back(24.0 * i, values[i]);
  return runs;
}

}  // namespace

TEST_CASE("history: files that are not this node's measurements are skipped with a note",
          "[history]") {
  HistoryTestDir dir;
  HistoryTestDir elsewhere;
  history_test_save(dir, history_test_verdict({0, 750}));
  history_test_save(dir, history_test_verdict({24, 750}));
  dir.write("broken.json", "{\"schema\": \"preflight.verdict/1\", ");
  REQUIRE(::mkfifo(dir.file("fifo.json").c_str(), 0600) == 0);
  history_test_save(elsewhere, history_test_verdict({48, 750}), "target.json");
  REQUIRE(::symlink(elsewhere.file("target.json").c_str(), dir.file("link.json").c_str()) == 0);
  hfs::create_directory(dir.file("folder.json"));
  dir.write("notes.txt", "not a verdict, not even named like one");
  // Each of these would make the node's failures repeat if it were trusted.
  Verdict other = history_test_verdict({70, 750, true});
  other.host = "gpu-b002";
  history_test_save(dir, other, "other.json");
  Verdict drill = history_test_verdict({71, 600, true});
  drill.injected_faults = {"gemm-slow:0.8@gpu=0"};
  history_test_save(dir, drill, "drill.json");
  Verdict rejudged = history_test_verdict({72, 750, true});
  rejudged.rejudged = RejudgeRecord{};
  history_test_save(dir, rejudged, "rejudged.json");
  Verdict undated = history_test_verdict({73, 750, true});
  undated.started_at = "2026-11-04 03:04:05";
  history_test_save(dir, undated, "undated.json");
  // The same run saved twice (last.json beside its copy).
  history_test_save(dir, history_test_verdict({24, 750}), "last.json");

  const HistoryOptions options;
  const History history = read_history(dir.path(), kHistTestHost, options);
  REQUIRE(history.runs.size() == 2);
  CHECK(history.runs[0].verdict.started_at == history_test_time(0));
  CHECK(history.runs[1].verdict.started_at == history_test_time(24));
  CHECK(history.skipped.size() == 9);
  CHECK(history_test_has(history.skipped, "broken.json: "));
  CHECK(history_test_has(history.skipped, "fifo.json: a FIFO"));
  CHECK(history_test_has(history.skipped, "link.json: a symbolic link"));
  CHECK(history_test_has(history.skipped, "folder.json: a directory"));
  CHECK(history_test_has(history.skipped, "other.json: another host's verdict (gpu-b002)"));
  CHECK(history_test_has(history.skipped, "drill.json: a drill (--inject-fault gemm-slow"));
  CHECK(history_test_has(history.skipped, "rejudged.json: re-judged"));
  CHECK(history_test_has(history.skipped, "undated.json: started_at"));
  CHECK((history_test_has(history.skipped, "last.json: the same run as") ||
         history_test_has(history.skipped, "-pass.json: the same run as last.json")));
  for (const std::string& note : history.skipped) {
    CHECK(note.size() <= 200);
    CHECK(note.find('\n') == std::string::npos);
  }

  // An unhealthy current run: with the other host's, the drill's or the re-judged failure it
  // would repeat; none of them counts, and nothing but the note is added.
  const HistoryJudgement judged = judge_history(history_test_verdict({80, 750, true}), history,
                                                history_test_catalogue(), nullptr, options);
  REQUIRE(judged.findings.size() == 1);
  const Finding& note = judged.findings.front();
  CHECK(note.code == "HISTORY_FILE_SKIPPED");
  CHECK(note.severity == Severity::info);
  CHECK(note.entity == "node");
  CHECK(note.judged);
  CHECK(note.message.rfind("9 files in ", 0) == 0);
  CHECK(note.message.find("and 6 more") != std::string::npos);
}

TEST_CASE("history: DIR must be a directory", "[history]") {
  HistoryTestDir dir;
  dir.write("verdict.json", "{}");
  const HistoryOptions options;
  CHECK_THROWS_AS(read_history(dir.file("verdict.json"), kHistTestHost, options), InvalidInput);
  CHECK_THROWS_AS(read_history(dir.file("absent"), kHistTestHost, options), InvalidInput);
  CHECK_NOTHROW(read_history(dir.path(), kHistTestHost, options));
}

TEST_CASE("history: the newest files by the time stamp in their name are read", "[history]") {
  HistoryTestDir dir;
  // Two hooks' files: by the stamp, not the hook's name, the healthcheck's is the newer.
  const Verdict oldest = history_test_verdict({0, 750});
  const Verdict middle = history_test_verdict({24, 751});
  const Verdict newest = history_test_verdict({48, 752});
  history_test_save(dir, oldest, "prolog-20261101T030405Z-pass.json");
  history_test_save(dir, middle, "prolog-20261102T030405Z-pass.json");
  history_test_save(dir, newest, "healthcheck-20261103T030405Z-pass.json");
  HistoryOptions options;
  options.max_files = 2;
  const History history = read_history(dir.path(), kHistTestHost, options);
  REQUIRE(history.runs.size() == 2);
  CHECK(history.runs[0].file == "prolog-20261102T030405Z-pass.json");
  CHECK(history.runs[1].file == "healthcheck-20261103T030405Z-pass.json");
  REQUIRE(history.skipped.size() == 1);
  CHECK(history.skipped[0] ==
        "prolog-20261101T030405Z-pass.json: older than the newest 2 files read");
}

TEST_CASE("history: a drop held over the last runs is FIGURE_REGRESSED", "[history]") {
  std::vector<HistTestRun> earlier = history_test_steady_runs();
  earlier.push_back({240, 705});
  earlier.push_back({264, 706});
  const HistTestOutcome out = history_test_judge(earlier, {288, 705});
  CHECK(out.history.skipped.empty());
  const auto regressed = history_test_codes(out.judgement, "FIGURE_REGRESSED");
  REQUIRE(regressed.size() == 1);
  const Finding& f = *regressed.front();
  CHECK(f.severity == Severity::warn);
  CHECK(f.entity == "gpu0");
  CHECK(f.judged);
  CHECK_FALSE(f.injected);
  CHECK(f.message.find("gemm gpu0 bf16.tflops_median 705 TFLOP/s: 6.") != std::string::npos);
  CHECK(f.message.find("below its own history (median 750 of 10 runs") != std::string::npos);
  CHECK(f.message.find("low in each of the last 3 runs since " + history_test_time(240)) !=
        std::string::npos);
  REQUIRE(f.value);
  CHECK(*f.value == Approx(705));
  CHECK(f.unit == "TFLOP/s");
  REQUIRE(f.threshold);
  CHECK(*f.threshold > 705);
  CHECK(*f.threshold < 750);
  REQUIRE(out.judgement.records.size() == 1);
  const RegressionRecord& r = out.judgement.records.front();
  CHECK(r.regressed);
  CHECK(r.check == "gemm");
  CHECK(r.entity == "gpu0");
  CHECK(r.metric == "bf16.tflops_median");
  CHECK(r.reference_by == "own history");
  CHECK(r.reference_runs == 10);
  CHECK(r.reference == Approx(750));
  CHECK(r.drop == Approx(0.06).margin(0.002));
}

TEST_CASE("history: one bad run is not a regression", "[history]") {
  std::vector<HistTestRun> earlier = history_test_steady_runs();
  earlier.push_back({240, 750});
  earlier.push_back({264, 751});
  const HistTestOutcome out = history_test_judge(earlier, {288, 705});
  CHECK(history_test_codes(out.judgement, "FIGURE_REGRESSED").empty());
  CHECK(out.judgement.findings.empty());
  REQUIRE(out.judgement.records.size() == 1);
  CHECK_FALSE(out.judgement.records.front().regressed);
  CHECK(out.judgement.records.front().reference_by == "own history");
}

TEST_CASE("history: figures of unhealthy runs are no reference", "[history]") {
  // Three earlier runs, two of them unhealthy: too few healthy ones, and no fleet baseline.
  const std::vector<HistTestRun> earlier = {
      {0, 750}, {24, 750, true}, {48, 750, true}, {72, 705}, {96, 705}};
  const HistTestOutcome out = history_test_judge(earlier, {200, 705});
  CHECK(history_test_codes(out.judgement, "FIGURE_REGRESSED").empty());
  CHECK(out.judgement.records.empty());
}

TEST_CASE("history: a new node's slow figure is judged by the fleet baseline", "[history]") {
  const std::vector<HistTestRun> earlier = {{0, 750}, {24, 705}, {48, 706}};
  BaselineGroup group;
  group.id = "hgx-h100";
  FigureBaseline figure;
  figure.check = "gemm";
  figure.entity = "gpu0";
  figure.metric = "bf16.tflops_median";
  figure.unit = "TFLOP/s";
  figure.median = 750;
  figure.node_spread = 0.01;
  figure.run_spread = 0.005;
  figure.limit = 690;
  group.figures.push_back(figure);

  const HistTestOutcome out = history_test_judge(earlier, {72, 705}, &group);
  const auto regressed = history_test_codes(out.judgement, "FIGURE_REGRESSED");
  REQUIRE(regressed.size() == 1);
  CHECK(regressed.front()->message.find("below the fleet baseline of hgx-h100 (median 750") !=
        std::string::npos);
  REQUIRE(out.judgement.records.size() == 1);
  CHECK(out.judgement.records.front().regressed);
  CHECK(out.judgement.records.front().reference_by == "fleet baseline");
  CHECK(out.judgement.records.front().reference_runs == 0);

  // Without the baseline: one earlier run of its own is too few to judge.
  const HistTestOutcome alone = history_test_judge(earlier, {72, 705});
  CHECK(alone.judgement.findings.empty());
  CHECK(alone.judgement.records.empty());
}

TEST_CASE("history: a rising lifetime ECC count is COUNTER_ROSE", "[history]") {
  HistTestRun before{0, 750};
  before.ecc_aggregate = 0;
  HistTestRun now{24, 750};
  now.ecc_aggregate = 2;

  SECTION("the same GPU") {
    const HistTestOutcome out = history_test_judge({before}, now);
    const auto rose = history_test_codes(out.judgement, "COUNTER_ROSE");
    REQUIRE(rose.size() == 1);
    CHECK(rose.front()->severity == Severity::warn);
    CHECK(rose.front()->entity == "gpu0");
    CHECK(rose.front()->judged);
    CHECK(rose.front()->message.find("uncorrectable ECC errors") != std::string::npos);
    CHECK(rose.front()->message.find("rose from 0 to 2 since the run of " + history_test_time(0)) !=
          std::string::npos);
    CHECK(*rose.front()->value == 2);
    CHECK(*rose.front()->threshold == 0);
  }
  SECTION("compared with the newest earlier run that read it") {
    HistTestRun unread{12, 750};
    HistTestRun later = before;
    later.hours = 6;
    later.ecc_aggregate = 2;
    CHECK(history_test_codes(history_test_judge({before, later, unread}, now).judgement,
                             "COUNTER_ROSE")
              .empty());
  }
  SECTION("a GPU swapped in is not a rise") {
    now.uuid = "GPU-9f3e2222";
    CHECK(history_test_judge({before}, now).judgement.findings.empty());
  }
  SECTION("a counter not read on either side is not a rise") {
    HistTestRun unread = now;
    unread.ecc_aggregate.reset();
    CHECK(history_test_judge({before}, unread).judgement.findings.empty());
    HistTestRun unread_before = before;
    unread_before.ecc_aggregate.reset();
    CHECK(history_test_judge({unread_before}, now).judgement.findings.empty());
  }
  SECTION("a count that stands still is healthy") {
    before.ecc_aggregate = 2;
    CHECK(history_test_judge({before}, now).judgement.findings.empty());
  }
}

TEST_CASE("history: failures that repeat within the window are REPEATED_FAILURES", "[history]") {
  const HistTestRun current{24 * 10, 750, true};

  SECTION("two unhealthy runs within 7 days") {
    const HistTestOutcome out = history_test_judge({{24 * 7, 750, true}}, current);
    const auto repeated = history_test_codes(out.judgement, "REPEATED_FAILURES");
    REQUIRE(repeated.size() == 1);
    const Finding& f = *repeated.front();
    CHECK(f.severity == Severity::fail);
    CHECK(f.action == Action::service);
    CHECK(f.entity == "node");
    CHECK(f.judged);
    CHECK(f.message == "unhealthy in 2 of its runs within 7 days: " + history_test_time(240) +
                           " (GPU_FELL_OFF_BUS on gpu0), " + history_test_time(168) +
                           " (GPU_FELL_OFF_BUS on gpu0)");
  }
  SECTION("two unhealthy runs 10 days apart") {
    CHECK(history_test_judge({{0, 750, true}}, current).judgement.findings.empty());
  }
  SECTION("a healthy current run with one unhealthy run before it") {
    CHECK(history_test_judge({{24 * 7, 750, true}}, {240, 750}).judgement.findings.empty());
  }
  SECTION("the current run saved in the history already counts once") {
    CHECK(history_test_judge({current}, current).judgement.findings.empty());
  }
  SECTION("a run unhealthy only by the history's own finding does not count") {
    HistoryTestDir dir;
    Verdict echo = history_test_verdict({24 * 8, 750});
    Finding repeated;
    repeated.code = "REPEATED_FAILURES";
    repeated.severity = Severity::fail;
    repeated.entity = "node";
    echo.findings.push_back(repeated);
    aggregate(echo, false);
    REQUIRE(echo.exit_code == kExitUnhealthy);
    history_test_save(dir, echo);
    const HistoryOptions options;
    const History history = read_history(dir.path(), kHistTestHost, options);
    REQUIRE(history.runs.size() == 1);
    const HistoryJudgement j = judge_history(history_test_verdict(current), history,
                                             history_test_catalogue(), nullptr, options);
    CHECK(j.findings.empty());
  }
  SECTION("at most five runs are named") {
    std::vector<HistTestRun> earlier;
    for (int i = 0; i < 6; ++i) earlier.push_back({24.0 * 4 + 12.0 * i, 750, true});
    const HistTestOutcome out = history_test_judge(earlier, current);
    const auto repeated = history_test_codes(out.judgement, "REPEATED_FAILURES");
    REQUIRE(repeated.size() == 1);
    CHECK(repeated.front()->message.rfind("unhealthy in 7 of its runs within 7 days: ", 0) == 0);
    CHECK(repeated.front()->message.find(" and 2 more") != std::string::npos);
  }
}

TEST_CASE("history: run start times are parsed strictly", "[history]") {
  using history_detail::parse_utc_time;
  REQUIRE(parse_utc_time("2026-11-22T03:04:05Z"));
  CHECK(*parse_utc_time("1970-01-02T00:00:00Z") == 86400);
  CHECK(*parse_utc_time("2026-11-22T03:04:05.250Z") ==
        Approx(*parse_utc_time("2026-11-22T03:04:05Z") + 0.25));
  CHECK(parse_utc_time("2028-02-29T00:00:00Z"));
  for (const char* bad :
       {"", "2026-11-22T03:04:05", "2026-11-22 03:04:05Z", "2026-11-22T03:04:05+01:00",
        "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-22T24:00:00Z",
        "2026-11-22T03:04:05.Z", "2026-11-22T03:04:05Zjunk", "yesterday at noon please"}) {
    INFO(bad);
    CHECK_FALSE(parse_utc_time(bad));
  }
}
