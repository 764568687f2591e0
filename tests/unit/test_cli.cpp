#include <catch2/catch.hpp>

#include "app/cli.hpp"
#include "support/command_line.hpp"

using namespace preflight;

TEST_CASE("cli: run with defaults") {
  const auto inv = test::parse_args({"run"});
  CHECK(inv.command == Command::run);
  CHECK(inv.run.profile == Profile::quick);
  CHECK(inv.run.checks.empty());
  CHECK_FALSE(inv.run.timeout_s);
  CHECK_FALSE(inv.run.expect_gpus);
  CHECK_FALSE(inv.run.strict);
  CHECK(inv.run.json_path.empty());
}

TEST_CASE("cli: run with every option") {
  const auto inv = test::parse_args(
      {"run", "--profile", "burnin", "--checks", "inventory,gemm", "--json", "-", "--timeout", "90",
       "--expect-gpus", "0", "--thresholds", "t.json", "--strict", "--inject-fault", "mig-on@gpu=0",
       "--inject-fault", "hang@check=inventory", "--no-color"});
  CHECK(inv.command == Command::run);
  CHECK(inv.run.profile == Profile::burnin);
  CHECK(inv.run.checks == std::vector<std::string>{"inventory", "gemm"});
  CHECK(inv.run.json_path == "-");
  CHECK(inv.run.timeout_s == 90);
  CHECK(inv.run.expect_gpus == 0);
  CHECK(inv.run.thresholds_path == "t.json");
  CHECK(inv.run.strict);
  CHECK(inv.run.inject_faults == std::vector<std::string>{"mig-on@gpu=0", "hang@check=inventory"});
  CHECK_FALSE(inv.run.colour);
}

TEST_CASE("cli: burn-in, metrics and report") {
  const auto burn = test::parse_args({"run", "--profile", "burnin", "--repeat", "12", "--duration",
                                      "1.5h", "--stop-on-fail", "--prom", "/tmp/m.prom"});
  CHECK(burn.command == Command::run);
  CHECK(burn.run.repeat == 12);
  CHECK(burn.run.duration_s == 5400.0);
  CHECK(burn.run.stop_on_fail);
  CHECK(burn.run.prom_path == "/tmp/m.prom");
  CHECK_FALSE(test::parse_args({"run"}).run.repeat);
  CHECK_FALSE(test::parse_args({"run"}).run.duration_s);

  const auto report = test::parse_args({"report", "a.json", "b.json", "-o", "r.html"});
  CHECK(report.command == Command::report);
  CHECK(report.report.files == std::vector<std::string>{"a.json", "b.json"});
  CHECK(report.report.output == "r.html");
  CHECK(report.report.format == "html");
  CHECK(test::parse_args({"report", "--format", "tsv", "-"}).report.format == "tsv");
}

TEST_CASE("cli: list and thresholds") {
  CHECK(test::parse_args({"list"}).command == Command::list);
  CHECK(test::parse_args({"list", "--json"}).list_json);
  const auto t = test::parse_args({"thresholds", "--sku", "h100-sxm5-80gb"});
  CHECK(t.command == Command::thresholds);
  CHECK(t.thresholds.sku == "h100-sxm5-80gb");
}

TEST_CASE("cli: help and version exit 0 with text") {
  const auto help = test::parse_args({"--help"});
  CHECK(help.command == Command::message);
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.message, Catch::Contains("run"));
  CHECK_THAT(help.message, Catch::Contains("--expect-gpus"));  // top-level help is complete
  CHECK_THAT(test::parse_args({"frobnicate"}).message,
             Catch::Contains("unknown command 'frobnicate'"));
  const auto run_help = test::parse_args({"run", "--help"});
  CHECK(run_help.exit_code == 0);
  for (const char* opt :
       {"--profile", "--checks", "--json", "--timeout", "--expect-gpus", "--thresholds", "--strict",
        "--inject-fault", "--prom", "--repeat", "--duration", "--stop-on-fail"}) {
    INFO(opt);
    CHECK_THAT(run_help.message, Catch::Contains(opt));
  }
  const auto version = test::parse_args({"--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.message, Catch::Contains(version_string()));
}

TEST_CASE("cli: bad invocations exit 2 with one line") {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"bogus"},
      {"run", "--bogus"},
      {"run", "--profile", "fast"},
      {"run", "--timeout", "0"},
      {"run", "--timeout", "-5"},
      {"run", "--timeout", "abc"},
      {"run", "--timeout", "99999999"},
      {"run", "--expect-gpus", "-1"},
      {"run", "--expect-gpus", "many"},
      {"run", "--json"},
      {"run", "extra-positional"},
      {"list", "--sku", "x"},
      {"run", "--json", ""},
      {"frobnicate"},
      {"run", "--repeat", "0"},
      {"run", "--duration", "5x"},
      {"run", "--duration", "0"},
      {"run", "--stop-on-fail"},
      {"run", "--prom", ""},
      {"report"},
      {"report", "v.json", "--format", "pdf"},
      {"report", "v.json", "--output", ""},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    INFO("args: " << joined);
    const auto inv = test::parse_args(args);
    CHECK(inv.command == Command::message);
    CHECK(inv.exit_code == 2);
    CHECK(inv.message.rfind("preflight: ", 0) == 0);
    CHECK(inv.message.find('\n') == std::string::npos);
  }
}

TEST_CASE("cli: --history on run and judge") {
  const auto run = test::parse_args({"run", "--history", "/var/lib/preflight/history"});
  CHECK(run.command == Command::run);
  CHECK(run.run.history_dir == "/var/lib/preflight/history");
  CHECK(test::parse_args({"run"}).run.history_dir.empty());
  const auto judge = test::parse_args({"judge", "v.json", "--history", "hist"});
  CHECK(judge.command == Command::judge);
  CHECK(judge.judge.history_dir == "hist");
  CHECK(test::parse_args({"judge", "v.json"}).judge.history_dir.empty());
  CHECK_THAT(test::parse_args({"run", "--help"}).message, Catch::Contains("--history"));
  CHECK_THAT(test::parse_args({"judge", "--help"}).message, Catch::Contains("--history"));
}

TEST_CASE("cli: baseline") {
  const auto b = test::parse_args({"baseline", "a.json", "verdicts/", "--out", "site.json",
                                   "--min-nodes", "20", "--drop", "7.5"});
  CHECK(b.command == Command::baseline);
  CHECK(b.baseline.inputs == std::vector<std::string>{"a.json", "verdicts/"});
  CHECK(b.baseline.out_path == "site.json");
  CHECK(b.baseline.min_nodes == 20);
  CHECK(b.baseline.drop_percent == 7.5);
  const auto defaults = test::parse_args({"baseline", "d", "--out", "-"});
  CHECK(defaults.command == Command::baseline);
  CHECK(defaults.baseline.out_path == "-");
  CHECK(defaults.baseline.min_nodes == 10);
  CHECK(defaults.baseline.drop_percent == 5);
  const auto help = test::parse_args({"baseline", "--help"});
  CHECK(help.command == Command::message);
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.message, Catch::Contains("--min-nodes") && Catch::Contains("--drop") &&
                               Catch::Contains("--out"));
  CHECK_THAT(test::parse_args({"--help"}).message, Catch::Contains("baseline"));
}

TEST_CASE("cli: bad baseline and --history invocations exit 2 with one line") {
  const std::vector<std::vector<std::string>> bad = {
      {"baseline"},
      {"baseline", "--out", "site.json"},
      {"baseline", "d"},
      {"baseline", "d", "--out"},
      {"baseline", "d", "--out", ""},
      {"baseline", "", "--out", "site.json"},
      {"baseline", "d", "--out", "s.json", "--min-nodes", "2"},
      {"baseline", "d", "--out", "s.json", "--min-nodes", "100001"},
      {"baseline", "d", "--out", "s.json", "--min-nodes", "ten"},
      {"baseline", "d", "--out", "s.json", "--drop", "-1"},
      {"baseline", "d", "--out", "s.json", "--drop", "90.5"},
      {"baseline", "d", "--out", "s.json", "--drop", "five"},
      {"baseline", "d", "--out", "s.json", "--bogus"},
      {"run", "--history", ""},
      {"run", "--history"},
      {"judge", "v.json", "--history", ""},
  };
  for (const auto& args : bad) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    INFO("args: " << joined);
    const auto inv = test::parse_args(args);
    CHECK(inv.command == Command::message);
    CHECK(inv.exit_code == 2);
    CHECK(inv.message.rfind("preflight: ", 0) == 0);
    CHECK(inv.message.find('\n') == std::string::npos);
  }
}
