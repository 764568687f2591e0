// `preflight fleet` with the NCCL transport on a GPU node, as a fleet of one rank: the node's
// all-gather across its own GPUs (a one-rank communicator on a one-GPU machine) runs as the
// only group. main.cpp skips these tests (exit 77) where no GPU is visible.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

json run_fleet(const std::vector<std::string>& extra, RunResult& r) {
  TempDir dir;
  std::vector<std::string> argv{MPIEXEC_BINARY,
                                "--allow-run-as-root",
                                "-np",
                                "1",
                                preflight_binary(),
                                "fleet",
                                "--checks",
                                "inventory",
                                "--json",
                                dir.file("fleet.json")};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunOptions options;
  options.timeout_s = 280;
  options.env = {{"OMPI_MCA_btl", "self,vader"}};
  r = run_process(argv, options);
  INFO(r.describe() << "\nstdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(path_exists(dir.file("fleet.json")));
  return parse_json(read_file(dir.file("fleet.json")), "fleet verdict");
}

}  // namespace

TEST_CASE("gpu fleet: the NCCL transport runs a verified all-gather with one rank", "[gpu]") {
  RunResult r;
  const json v = run_fleet({}, r);
  INFO(v.dump(2));
  WARN("fleet, NCCL, one rank:\n" << r.out);
  CHECK(r.exit_code == 0);
  REQUIRE(v.at("rounds").size() == 1);
  CHECK(v.at("rounds").at(0).at("groups").at(0).at("outcome") == "ok");
  CHECK(v.at("nodes").at(0).at("verdict") == "healthy");
}

TEST_CASE("gpu fleet: corruption injected into the NCCL all-gather is caught", "[gpu]") {
  RunResult r;
  const json v = run_fleet({"--inject-fault", "allgather-corrupt@node=0"}, r);
  INFO(v.dump(2));
  CHECK(r.exit_code == 1);
  REQUIRE(v.at("rounds").size() == 1);
  CHECK(v.at("rounds").at(0).at("groups").at(0).at("outcome") == "corrupt");
  CHECK(v.at("nodes").at(0).at("verdict") == "faulty");
}

}  // namespace preflight::test
