// Issue 16 as a user meets it: `preflight plan` for described nodes (the quick profile's totals,
// a --timeout divided, a --timeout below the floor refused), and `preflight run` keeping its
// --timeout with the plan and the rotation recorded in the verdict.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

json plan_json(std::vector<std::string> args) {
  args.insert(args.begin(), "plan");
  args.insert(args.end(), {"--json", "-"});
  const RunResult r = preflight(args);
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  REQUIRE(r.exit_code == 0);
  return parse_json(r.out, "plan --json -");
}

}  // namespace

TEST_CASE("plan: quick on one H100 is expected within 15 s, on 8 GPUs and 8 NICs within 30 s",
          "[plan]") {
  const json one = plan_json({"--node", "gpus=1,sku=h100-sxm5-80gb"});
  CHECK(one.at("schema") == "preflight.plan/1");
  CHECK(one.at("expected_s").get<double>() <= 15.0);
  CHECK_FALSE(one.at("reduced").get<bool>());
  const json eight = plan_json({"--node", "gpus=8,sku=h100-sxm5-80gb,nics=8"});
  CHECK(eight.at("expected_s").get<double>() <= 30.0);
  // The pairs that do not fit rotate, and the plan says so.
  bool rotated = false;
  for (const auto& c : eight.at("checks")) {
    if (c.at("rotation_steps").get<int>() > 1) rotated = true;
  }
  CHECK(rotated);
}

TEST_CASE("plan: a --timeout of 20 s is divided so that every deadline fits it", "[plan]") {
  const json p = plan_json({"--node", "gpus=1,sku=h100-sxm5-80gb", "--timeout", "20"});
  CHECK(p.at("timeout_s") == 20.0);
  CHECK(p.at("timeout_given") == true);
  double total = p.at("discovery").at("expected_s").get<double>() * 1.5 + 0.5;
  for (const auto& c : p.at("checks")) {
    INFO(c.dump());
    CHECK(c.at("deadline_s").get<double>() <= 20.0);
    CHECK(c.at("deadline_s").get<double>() >= 1.5 * c.at("expected_s").get<double>());
    total += c.at("deadline_s").get<double>();
  }
  CHECK(total + 1.0 <= 20.0 + 0.01);  // the plan's seconds are rounded to the millisecond
}

TEST_CASE("plan: a --timeout below the node's floor is refused with exit 2 naming the floor",
          "[plan]") {
  const RunResult r = preflight({"plan", "--node", "gpus=1,sku=h100-sxm5-80gb", "--timeout", "2"});
  INFO(r.describe() << "\n" << r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::Matches("preflight: --timeout 2\\.0 s is below the [0-9.]+ s this "
                                   "node \\(1 GPU, 0 NICs\\) needs for a meaningful verdict.*\n"));
  const RunResult bad = preflight({"plan", "--node", "gpus=1,sku=z100"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("unknown sku 'z100'"));
}

TEST_CASE("plan: without --node it plans for this node by discovery", "[plan]") {
  const RunResult r = preflight({"plan"});
  INFO(r.describe() << "\n" << r.out << r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("this node"));
  CHECK_THAT(r.out, Catch::Contains("0 GPUs") || Catch::Contains("discovery"));
}

TEST_CASE("plan: run keeps its --timeout and records the plan and the rotation", "[plan]") {
  TempDir dir;
  for (int run = 0; run < 2; ++run) {
    const RunResult r = preflight({"run", "--expect-gpus", "0", "--timeout", "6", "--state-dir",
                                   dir.path(), "--json", dir.file("v.json")});
    INFO(r.describe() << "\n" << r.out << r.err);
    REQUIRE(r.exited());
    CHECK(r.exit_code == 0);
    // Wall-clock time adds starting and ending the process, which a busy machine stretches.
    CHECK(r.elapsed_s < 6.0 + 4.0);
    const json v = parse_json(read_file(dir.file("v.json")), "verdict");
    // The run's own clock, from its start to its verdict, keeps the --timeout.
    CHECK(v.at("duration_s").get<double>() <= 6.0);
    const json& plan = v.at("plan");
    CHECK(plan.at("timeout_s").get<double>() == Approx(6.0).margin(0.01));
    CHECK(plan.at("timeout_given") == true);
    CHECK(plan.at("rotation") == run);
    CHECK_THAT(plan.at("rotation_from").get<std::string>(), Catch::Contains("--state-dir"));
    for (const auto& c : v.at("checks")) {
      INFO(c.at("name"));
      if (c.at("status") == "skip") continue;
      REQUIRE(c.at("plan").is_object());
      CHECK(c.at("plan").at("deadline_s").get<double>() <= 6.0);
    }
  }
  CHECK(read_file(dir.file("rotation")) == "2\n");
}

TEST_CASE("plan: run refuses a --timeout below the floor and writes nothing", "[plan]") {
  TempDir dir;
  const RunResult r =
      preflight({"run", "--expect-gpus", "0", "--timeout", "2", "--json", dir.file("v.json")});
  INFO(r.describe() << "\n" << r.err);
  REQUIRE(r.exited());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--timeout 2.0 s is below the"));
  CHECK_FALSE(path_exists(dir.file("v.json")));
  const RunResult both = preflight({"run", "--rotation", "3", "--state-dir", dir.path()});
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Catch::Contains("--rotation: not with --state-dir"));
}

}  // namespace preflight::test
