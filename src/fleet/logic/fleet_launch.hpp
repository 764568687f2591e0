#pragma once
// Whether Open MPI can start under the launcher that started this process, decided from the
// environment alone, before MPI_Init (docs/fleet.md#launching). The Open MPI the package is built
// against (Debian 12's 4.1) reaches a Slurm step only through PMIx: started by srun without
// `--mpi=pmix`, MPI_Init prints a page about Slurm's PMI support and exits 1, the code that means
// "a node is faulty", with no verdict written. Refusing first turns that into a tool error
// (exit 3) and one line that names the fix.
#include <map>
#include <optional>
#include <string>

namespace preflight {

// Environment variables by name, as a process sees them.
using Environment = std::map<std::string, std::string>;
// The NAME=VALUE entries of a null-terminated array such as `environ`; an entry without '=' is
// skipped, and the first of two entries with one name wins, as getenv finds it.
Environment environment_from(const char* const* entries);

struct LaunchRefusal {
  std::string message;  // one line, without the newline
  // Whether this rank prints it: every task of the step is refused the same way, and srun
  // merges their stderr, so only task 0 prints (SLURM_PROCID 0); a task that cannot tell its
  // number prints too, so that the cause is never lost.
  bool print = true;
};

// Why MPI cannot start under this launcher, or nullopt when it can, or when nothing in the
// environment says it cannot (a plain run, a singleton in a batch script, mpirun; MPI_Init then
// decides). Refused: a task of a srun job step (SLURM_JOB_ID and a normal SLURM_STEP_ID) with
// no PMIx server (no PMIX_RANK, PMIX_NAMESPACE, PMIX_SERVER_URI*) and not started by mpirun's
// daemon (no OMPI_COMM_WORLD_RANK, OMPI_MCA_orte_hnp_uri, OMPI_MCA_orte_local_daemon_uri,
// OMPI_MCA_ess_base_jobid).
std::optional<LaunchRefusal> mpi_launch_refusal(const Environment& env);

// This process's rank as its launcher exports it, before MPI_Init (mpirun:
// OMPI_COMM_WORLD_RANK; a PMIx or PMI server: PMIX_RANK, PMI_RANK; srun: SLURM_PROCID), for
// what must happen before MPI is up (the launch-slow drill). nullopt when none says.
std::optional<int> rank_before_mpi(const Environment& env);

}  // namespace preflight
