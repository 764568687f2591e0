// The NCCL collective engine on a real GPU. On a one-GPU node the nccl check skips, so the engine
// is driven through preflight-bench-nccl with a one-rank communicator (NCCL refuses two ranks of
// one communicator on one GPU): every element verified clean, and an injected corruption counted
// against its source. With two or more GPUs the check itself runs too. main.cpp skips these
// tests (exit 77) where no GPU is visible.
#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

json run_bench(const std::vector<std::string>& args, RunResult& r) {
  std::vector<std::string> argv = {built_program("PREFLIGHT_TEST_NCCL_BENCH", NCCL_BENCH_BINARY)};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions options;
  options.timeout_s = 280;
  r = run_process(argv, options);
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  json out = parse_json(r.out, "preflight-bench-nccl output");
  // The node's NCCL must load for the engine to be tested at all.
  REQUIRE(out.at("unavailable") == "");
  return out;
}

std::uint64_t corrupt_elements(const json& run) {
  return run.at("corrupt_elements").get<std::uint64_t>();
}

}  // namespace

TEST_CASE("gpu nccl: a one-rank communicator runs both collectives, verified clean", "[gpu]") {
  RunResult r;
  const json out = run_bench({"--gpus", "0"}, r);
  INFO(out.dump(2));
  WARN("preflight-bench-nccl --gpus 0:\n" << r.err);
  CHECK(r.exit_code == 0);
  CHECK(out.at("clean") == true);
  REQUIRE(out.at("runs").size() == 2);
  for (const json& run : out.at("runs")) {
    CHECK(run.at("initialized") == true);
    CHECK(run.at("error") == "");
    CHECK(run.at("timed_out") == false);
    CHECK(run.at("verified") == true);
    CHECK(corrupt_elements(run) == 0);
    REQUIRE(run.at("sizes").size() == 2);
    CHECK(run.at("sizes").at(1).at("bytes") == 256u << 20);
    CHECK(run.at("sizes").at(1).at("seconds").get<double>() > 0);
    CHECK(run.at("sizes").at(1).at("algbw_gbps").get<double>() > 0);
    // One rank moves nothing over a bus: nccl-tests prints 0 as well.
    CHECK(run.at("sizes").at(1).at("busbw_gbps").get<double>() == 0);
  }
}

TEST_CASE("gpu nccl: a corrupted send buffer is counted against its source", "[gpu][faults]") {
  RunResult r;
  const json out = run_bench({"--gpus", "0", "--inject", "corrupt"}, r);
  INFO(out.dump(2));
  CHECK(r.exit_code == 1);
  CHECK(out.at("clean") == false);
  REQUIRE(out.at("runs").size() == 2);
  for (const json& run : out.at("runs")) {
    CHECK(run.at("error") == "");
    CHECK(run.at("verified") == true);
    // One changed element per size, seen by the only receiver in rank 0's slot.
    CHECK(run.at("corrupt_from").at(0).at(0).get<std::uint64_t>() == 2);
  }
}

TEST_CASE("gpu nccl: a rank that never enqueues is reported as a timeout, on time", "[gpu]") {
  RunResult r;
  const json out =
      run_bench({"--gpus", "0", "--op", "all_gather", "--inject", "hang", "--timeout", "5"}, r);
  INFO(out.dump(2));
  CHECK(r.exit_code == 1);
  CHECK(out.at("runs").at(0).at("timed_out") == true);
  CHECK(r.elapsed_s < 60);
}

TEST_CASE("gpu nccl: the nccl check skips one GPU and runs on several", "[gpu]") {
  RunOptions options;
  options.timeout_s = 280;
  const RunResult r = run_preflight({"run", "--checks", "nccl", "--json", "-"}, options);
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exited());
  const json verdict = parse_json(r.out, "verdict");
  const json* check = find_check(verdict, "nccl");
  REQUIRE(check != nullptr);
  INFO(check->dump(2));
  if (verdict.at("system").at("gpus").size() == 1) {
    CHECK(check->at("status") == "skip");
    CHECK(check->at("skip_reason") == "one GPU: nothing to all-gather between");
    return;
  }
  WARN("nccl check:\n" << check->dump(2));
  CHECK(find_finding(check->at("findings"), "NCCL_DATA_MISMATCH") == nullptr);
  CHECK(find_finding(check->at("findings"), "NCCL_ERROR") == nullptr);
  CHECK(find_finding(check->at("findings"), "NCCL_TIMEOUT") == nullptr);
  const RunResult drill = run_preflight(
      {"run", "--checks", "nccl", "--inject-fault", "nccl-corrupt@gpu=0", "--json", "-"}, options);
  const json v = parse_json(drill.out, "drill verdict");
  const json* c = find_check(v, "nccl");
  REQUIRE(c != nullptr);
  const json* f = find_finding(c->at("findings"), "NCCL_DATA_MISMATCH", "gpu0");
  REQUIRE(f != nullptr);
  CHECK(f->at("injected") == true);
}

}  // namespace preflight::test
