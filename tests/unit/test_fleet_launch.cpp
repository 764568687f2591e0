// Issue 18: whether `preflight fleet` can start MPI under its launcher, decided from the
// environment before MPI_Init. The environments are those Slurm 22.05 and Open MPI 4.1 give a
// process; no Slurm runs here.
#include <catch2/catch.hpp>
#include <string>

#include "fleet/logic/fleet_launch.hpp"

namespace preflight {
namespace {

const std::string kPmi2Line =
    "preflight fleet: srun started this rank without PMIx (srun --mpi=pmi2); Debian's Open MPI "
    "needs srun --mpi=pmix (or MpiDefault=pmix in slurm.conf)";

// What srun gives every task of a step, whatever its --mpi.
Environment srun_task(int procid, const std::string& mpi_type) {
  Environment env{{"PATH", "/usr/bin:/bin"},
                  {"SLURM_JOB_ID", "42"},
                  {"SLURM_JOBID", "42"},
                  {"SLURM_STEP_ID", "0"},
                  {"SLURM_STEPID", "0"},
                  {"SLURM_PROCID", std::to_string(procid)},
                  {"SLURM_NODELIST", "gpu[001-004]"},
                  {"SLURM_STEP_NUM_TASKS", "4"}};
  if (!mpi_type.empty()) env["SLURM_MPI_TYPE"] = mpi_type;
  return env;
}

// What srun --mpi=pmix adds: the PMIx server of the step.
Environment with_pmix(Environment env) {
  env["PMIX_NAMESPACE"] = "slurm.pmix.42.0";
  env["PMIX_RANK"] = env["SLURM_PROCID"];
  env["PMIX_SERVER_URI41"] = "pmix-server.1234;tcp4://127.0.0.1:40000";
  env["PMIX_SERVER_TMPDIR"] = "/var/spool/slurmd/pmix.42.0/";
  return env;
}

// What srun --mpi=pmi2 adds: the PMI-2 socket, which this Open MPI cannot use.
Environment with_pmi2(Environment env) {
  env["PMI_FD"] = "5";
  env["PMI_RANK"] = env["SLURM_PROCID"];
  env["PMI_SIZE"] = "4";
  env["PMI_JOBID"] = "42.0";
  return env;
}

// What mpirun's daemon gives each rank it starts (Open MPI 4.1 serves them over PMIx).
Environment with_mpirun(Environment env, int rank) {
  env["OMPI_COMM_WORLD_RANK"] = std::to_string(rank);
  env["OMPI_COMM_WORLD_SIZE"] = "8";
  env["OMPI_MCA_orte_hnp_uri"] = "1234.0;tcp://10.0.0.1:41000";
  env["OMPI_MCA_ess_base_jobid"] = "80871425";
  env["PMIX_NAMESPACE"] = "80871425";
  env["PMIX_RANK"] = std::to_string(rank);
  env["PMIX_SERVER_URI3"] = "80871424.0;tcp4://127.0.0.1:41001";
  return env;
}

// The batch script of sbatch: the job's variables, task 0, and no SLURM_STEP_ID (Slurm exports
// it only for steps with a normal id).
Environment batch_script() {
  return {{"SLURM_JOB_ID", "42"},       {"SLURM_JOBID", "42"},    {"SLURM_PROCID", "0"},
          {"SLURM_NODELIST", "gpu001"}, {"ENVIRONMENT", "BATCH"}, {"SLURM_MPI_TYPE", "pmi2"}};
}

}  // namespace

TEST_CASE("fleet launch: no launcher at all starts MPI (a singleton)") {
  CHECK_FALSE(mpi_launch_refusal({}));
  CHECK_FALSE(mpi_launch_refusal({{"PATH", "/usr/bin"}, {"HOME", "/root"}}));
}

TEST_CASE("fleet launch: srun --mpi=pmix starts MPI") {
  for (const std::string type : {"pmix", "pmix_v4", ""}) {
    INFO("SLURM_MPI_TYPE=" << type);
    CHECK_FALSE(mpi_launch_refusal(with_pmix(srun_task(0, type))));
    CHECK_FALSE(mpi_launch_refusal(with_pmix(srun_task(3, type))));
  }
  // Any one of the server's variables is enough, a URI of any protocol version included.
  for (const char* name : {"PMIX_RANK", "PMIX_NAMESPACE", "PMIX_SERVER_URI", "PMIX_SERVER_URI2",
                           "PMIX_SERVER_URI21", "PMIX_SERVER_URI3", "PMIX_SERVER_URI4"}) {
    INFO(name);
    Environment env = srun_task(0, "pmix");
    env[name] = "1";
    CHECK_FALSE(mpi_launch_refusal(env));
  }
}

TEST_CASE("fleet launch: srun --mpi=pmi2 is refused with the fix, printed by task 0 only") {
  const auto refused = mpi_launch_refusal(with_pmi2(srun_task(0, "pmi2")));
  REQUIRE(refused);
  CHECK(refused->message == kPmi2Line);
  CHECK(refused->print);
  const auto other = mpi_launch_refusal(with_pmi2(srun_task(3, "pmi2")));
  REQUIRE(other);
  CHECK(other->message == kPmi2Line);
  CHECK_FALSE(other->print);
}

TEST_CASE("fleet launch: srun without --mpi (MpiDefault=none) is refused") {
  // srun exports slurm.conf's MpiDefault as SLURM_MPI_TYPE; unset, no plugin ran at all.
  for (const std::string type : {"none", ""}) {
    INFO("SLURM_MPI_TYPE=" << type);
    const auto refused = mpi_launch_refusal(srun_task(0, type));
    REQUIRE(refused);
    CHECK(refused->message ==
          "preflight fleet: srun started this rank without PMIx (srun --mpi=none); Debian's Open "
          "MPI needs srun --mpi=pmix (or MpiDefault=pmix in slurm.conf)");
  }
}

TEST_CASE("fleet launch: srun --mpi=pmix whose variables did not reach the task is refused") {
  const auto refused = mpi_launch_refusal(srun_task(0, "pmix_v3"));
  REQUIRE(refused);
  CHECK_THAT(refused->message,
             Catch::Contains("(srun --mpi=pmix_v3, yet no PMIX_* variable reached this rank)"));
  CHECK_THAT(refused->message, Catch::Contains("needs srun --mpi=pmix"));
  // An empty variable is no server.
  Environment env = srun_task(0, "pmix");
  env["PMIX_RANK"] = "";
  env["PMIX_SERVER_URI41"] = "";
  CHECK(mpi_launch_refusal(env));
}

TEST_CASE("fleet launch: mpirun inside a Slurm allocation starts MPI") {
  // salloc, then mpirun: on mpirun's own node the ranks have the job but no step.
  Environment local = batch_script();
  CHECK_FALSE(mpi_launch_refusal(with_mpirun(local, 0)));
  // On the other nodes mpirun's daemon is itself a srun task (--mpi=none), and its ranks inherit
  // that step's variables.
  CHECK_FALSE(mpi_launch_refusal(with_mpirun(srun_task(1, "none"), 5)));
  // Open MPI's own variables alone say mpirun, whatever PMIx variables are there.
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "OMPI_MCA_orte_hnp_uri",
                           "OMPI_MCA_orte_local_daemon_uri", "OMPI_MCA_ess_base_jobid"}) {
    INFO(name);
    Environment env = srun_task(1, "none");
    env[name] = "1";
    CHECK_FALSE(mpi_launch_refusal(env));
  }
}

TEST_CASE("fleet launch: an Open MPI setting the user exported does not pass for mpirun") {
  // docs/fleet.md suggests exporting this one; srun passes it on to its tasks.
  Environment env = with_pmi2(srun_task(0, "pmi2"));
  env["OMPI_MCA_orte_abort_on_non_zero_status"] = "0";
  env["OMPI_MCA_btl"] = "self,vader";
  const auto refused = mpi_launch_refusal(env);
  REQUIRE(refused);
  CHECK(refused->message == kPmi2Line);
}

TEST_CASE("fleet launch: a singleton in an sbatch script starts MPI") {
  CHECK_FALSE(mpi_launch_refusal(batch_script()));
  // The steps no srun started carry special ids (Slurm 20.11 and later: pending, extern,
  // batch, interactive; earlier: batch 0xfffffffe, extern 0xffffffff), should one be exported.
  for (const std::string id : {"4294967293", "4294967292", "4294967291", "4294967290", "4294967294",
                               "4294967295", "99999999999", "batch", "-2", ""}) {
    INFO("SLURM_STEP_ID=" << id);
    Environment env = batch_script();
    env["SLURM_STEP_ID"] = id;
    CHECK_FALSE(mpi_launch_refusal(env));
  }
  // SLURM_MAX_NORMAL_STEP_ID is still a step srun started.
  Environment last = batch_script();
  last["SLURM_STEP_ID"] = "4294967280";
  CHECK(mpi_launch_refusal(last));
}

TEST_CASE("fleet launch: a step id without a job, or the obsolete names, are read as Slurm does") {
  CHECK_FALSE(mpi_launch_refusal({{"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"}}));
  CHECK(mpi_launch_refusal({{"SLURM_JOBID", "7"}, {"SLURM_STEPID", "2"}}));
  // The brief environment of a hand-made test: job, step, task, plugin.
  const auto refused = mpi_launch_refusal({{"SLURM_JOB_ID", "1"},
                                           {"SLURM_STEP_ID", "0"},
                                           {"SLURM_PROCID", "0"},
                                           {"SLURM_MPI_TYPE", "pmi2"}});
  REQUIRE(refused);
  CHECK(refused->message == kPmi2Line);
  CHECK(refused->print);
}

TEST_CASE("fleet launch: a task that cannot tell its number prints, and the line stays one") {
  Environment env = srun_task(0, std::string("pmi2\nEVIL") + std::string(100, 'x'));
  env.erase("SLURM_PROCID");
  auto refused = mpi_launch_refusal(env);
  REQUIRE(refused);
  CHECK(refused->print);
  CHECK(refused->message.find('\n') == std::string::npos);
  CHECK_THAT(refused->message, Catch::Contains("(srun --mpi=pmi2?EVILxxx"));
  CHECK_THAT(refused->message, Catch::Contains("...)"));
  CHECK(refused->message.size() < 200);
  env["SLURM_PROCID"] = "task0";
  refused = mpi_launch_refusal(env);
  REQUIRE(refused);
  CHECK(refused->print);
}

TEST_CASE("fleet launch: the rank before MPI_Init, as each launcher exports it") {
  CHECK_FALSE(rank_before_mpi({}));
  CHECK(rank_before_mpi({{"OMPI_COMM_WORLD_RANK", "7"}, {"PMIX_RANK", "9"}}) == 7);
  CHECK(rank_before_mpi({{"PMIX_RANK", "9"}, {"SLURM_PROCID", "3"}}) == 9);
  CHECK(rank_before_mpi({{"SLURM_PROCID", "3"}}) == 3);
  CHECK(rank_before_mpi({{"PMI_RANK", "0"}}) == 0);
  // Not a number: the next launcher's word, else none.
  CHECK(rank_before_mpi({{"OMPI_COMM_WORLD_RANK", "-1"}, {"SLURM_PROCID", "2"}}) == 2);
  CHECK_FALSE(rank_before_mpi({{"OMPI_COMM_WORLD_RANK", "x"}}));
  CHECK_FALSE(rank_before_mpi({{"PMIX_RANK", "99999999999"}}));
}

TEST_CASE("fleet launch: the environment is read as getenv reads it") {
  const char* entries[] = {"A=1", "B=x=y", "C=", "NOEQUALS", "A=2", nullptr};
  const Environment env = environment_from(entries);
  CHECK(env.size() == 3);
  CHECK(env.at("A") == "1");
  CHECK(env.at("B") == "x=y");
  CHECK(env.at("C").empty());
  CHECK(environment_from(nullptr).empty());
}

}  // namespace preflight
