// Issue 18: `preflight fleet` under a launcher Open MPI cannot start under. The binary runs in
// the environment srun would give a task (no Slurm runs here): without PMIx it must end with
// exit 3 and one line before MPI_Init, where Open MPI would print a page and exit 1 ("a node is
// faulty"). With no launcher, in a batch script and under mpirun it must run as before.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

const std::string kPmi2Line =
    "preflight fleet: srun started this rank without PMIx (srun --mpi=pmi2); Debian's Open MPI "
    "needs srun --mpi=pmix (or MpiDefault=pmix in slurm.conf)\n";

// The environment of a process no launcher started: whatever Slurm, PMIx or mpirun variables
// the test itself runs under are removed.
RunOptions no_launcher_options(double timeout_s) {
  RunOptions options = no_gpu_options(timeout_s);
  options.unset_env = {"SLURM_JOB_ID",
                       "SLURM_JOBID",
                       "SLURM_STEP_ID",
                       "SLURM_STEPID",
                       "SLURM_PROCID",
                       "SLURM_MPI_TYPE",
                       "SLURM_NODELIST",
                       "SLURM_JOB_NODELIST",
                       "PMIX_RANK",
                       "PMIX_NAMESPACE",
                       "PMIX_SERVER_URI",
                       "PMIX_SERVER_URI2",
                       "PMIX_SERVER_URI21",
                       "PMIX_SERVER_URI3",
                       "PMIX_SERVER_URI4",
                       "PMIX_SERVER_URI41",
                       "OMPI_COMM_WORLD_RANK",
                       "OMPI_MCA_orte_hnp_uri",
                       "OMPI_MCA_orte_local_daemon_uri",
                       "OMPI_MCA_ess_base_jobid"};
  // Shared memory only; no network probing in a container.
  options.env.push_back({"OMPI_MCA_btl", "self,vader"});
  options.env.push_back({"OMPI_MCA_btl_vader_single_copy_mechanism", "none"});
  return options;
}

// A task of a srun step, as srun sets it. SLURM_NODELIST too, so that Open MPI, were it
// started, would take the process for a direct launch and fail in MPI_Init.
RunOptions srun_task_options(int procid, const std::string& mpi_type) {
  RunOptions options = no_launcher_options(30);
  options.env.push_back({"SLURM_JOB_ID", "4242"});
  options.env.push_back({"SLURM_STEP_ID", "0"});
  options.env.push_back({"SLURM_PROCID", std::to_string(procid)});
  options.env.push_back({"SLURM_NODELIST", "localhost"});
  if (!mpi_type.empty()) options.env.push_back({"SLURM_MPI_TYPE", mpi_type});
  return options;
}

std::vector<std::string> fleet_args(const TempDir& dir) {
  return {"fleet",    "--transport", "host",   "--expect-gpus",       "0",
          "--checks", "inventory",   "--json", dir.file("fleet.json")};
}

// A one-rank fleet that ran: exit 0 and a verdict with that one node.
void check_one_rank_fleet(const RunResult& r, const TempDir& dir) {
  INFO(r.describe() << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  REQUIRE(path_exists(dir.file("fleet.json")));
  const auto verdict = parse_json(read_file(dir.file("fleet.json")), "fleet verdict");
  CHECK(verdict.at("nodes").size() == 1);
  CHECK(verdict.at("exit_code") == 0);
}

}  // namespace

TEST_CASE("fleet launch: srun --mpi=pmi2 ends every task with exit 3 before MPI_Init") {
  TempDir dir;
  const RunResult first = run_preflight(fleet_args(dir), srun_task_options(0, "pmi2"));
  INFO(first.describe() << "\nstderr:\n" << first.err);
  CHECK(first.exit_code == 3);
  // Exactly the one line: no page of Open MPI's, so MPI_Init was never called.
  CHECK(first.err == kPmi2Line);
  CHECK(first.out.empty());
  CHECK(first.elapsed_s < 1.0);
  CHECK_FALSE(path_exists(dir.file("fleet.json")));
  // The other tasks of the step stop the same way, in silence.
  for (int procid : {1, 3}) {
    const RunResult other = run_preflight(fleet_args(dir), srun_task_options(procid, "pmi2"));
    INFO("SLURM_PROCID=" << procid << ": " << other.describe() << "\nstderr:\n" << other.err);
    CHECK(other.exit_code == 3);
    CHECK(other.err.empty());
  }
}

TEST_CASE("fleet launch: srun without --mpi (MpiDefault=none) ends with exit 3 and the fix") {
  TempDir dir;
  for (const std::string type : {"none", ""}) {
    const RunResult r = run_preflight(fleet_args(dir), srun_task_options(0, type));
    INFO("SLURM_MPI_TYPE=" << type << ": " << r.describe() << "\nstderr:\n" << r.err);
    CHECK(r.exit_code == 3);
    CHECK_THAT(r.err, Catch::Contains("(srun --mpi=none)"));
    CHECK_THAT(r.err, Catch::Contains("--mpi=pmix"));
    CHECK(r.err.find('\n') == r.err.size() - 1);
  }
}

TEST_CASE("fleet launch: with no launcher at all the fleet is one rank, as before") {
  TempDir dir;
  check_one_rank_fleet(run_preflight(fleet_args(dir), no_launcher_options(60)), dir);
}

TEST_CASE("fleet launch: a singleton in an sbatch script runs (no SLURM_STEP_ID there)") {
  TempDir dir;
  RunOptions options = no_launcher_options(60);
  options.env.push_back({"SLURM_JOB_ID", "4242"});
  options.env.push_back({"SLURM_JOBID", "4242"});
  options.env.push_back({"SLURM_PROCID", "0"});
  options.env.push_back({"SLURM_NODELIST", "localhost"});
  options.env.push_back({"SLURM_MPI_TYPE", "pmi2"});
  options.env.push_back({"ENVIRONMENT", "BATCH"});
  check_one_rank_fleet(run_preflight(fleet_args(dir), options), dir);
}

// Inside an allocation mpirun starts its daemons on the other nodes with srun, so their ranks
// inherit a step's variables: Open MPI's own ones must let them through.
TEST_CASE("fleet launch: mpirun ranks that inherit a srun step's variables run") {
  TempDir dir;
  RunOptions options = no_launcher_options(100);
  options.env.push_back({"SLURM_JOB_ID", "4242"});
  options.env.push_back({"SLURM_STEP_ID", "0"});
  options.env.push_back({"SLURM_PROCID", "1"});
  options.env.push_back({"SLURM_MPI_TYPE", "none"});
  options.env.push_back({"OMPI_MCA_rmaps_base_oversubscribe", "1"});
  std::vector<std::string> argv{
      MPIEXEC_BINARY, "--allow-run-as-root", "--oversubscribe", "-np", "2", preflight_binary()};
  const auto args = fleet_args(dir);
  argv.insert(argv.end(), args.begin(), args.end());
  const RunResult r = run_process(argv, options);
  INFO(r.describe() << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 0);
  REQUIRE(path_exists(dir.file("fleet.json")));
  const auto verdict = parse_json(read_file(dir.file("fleet.json")), "fleet verdict");
  CHECK(verdict.at("nodes").size() == 2);
}

}  // namespace preflight::test
