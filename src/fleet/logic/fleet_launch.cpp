#include "fleet/logic/fleet_launch.hpp"

#include <cstring>

namespace preflight {

namespace {

// Slurm's SLURM_MAX_NORMAL_STEP_ID (slurm.h). The ids above it are the steps no srun started:
// the batch script, the extern step, the interactive step, a pending step.
constexpr unsigned long long kMaxNormalStepId = 0xfffffff0ULL;

bool is_set(const Environment& env, const std::string& name) {
  const auto it = env.find(name);
  return it != env.end() && !it->second.empty();
}

std::string value_of(const Environment& env, const std::string& name) {
  const auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

// A count or id as Slurm writes it: decimal digits only. nullopt for anything else.
std::optional<unsigned long long> decimal(const std::string& text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  unsigned long long value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<unsigned long long>(c - '0');
  }
  return value;
}

// A task srun started in a job step. The batch script of sbatch (and salloc's interactive
// step) is no such task: Slurm exports SLURM_STEP_ID only for steps with a normal id, and a
// special id is accepted here as "not srun" too, whatever a Slurm version writes. Open MPI
// makes the same cut (schizo/slurm: SLURM_STEP_ID set means direct launch, else a singleton).
bool srun_task(const Environment& env) {
  if (!is_set(env, "SLURM_JOB_ID") && !is_set(env, "SLURM_JOBID")) return false;
  const std::string step =
      is_set(env, "SLURM_STEP_ID") ? value_of(env, "SLURM_STEP_ID") : value_of(env, "SLURM_STEPID");
  const auto id = decimal(step);
  return id && *id <= kMaxNormalStepId;
}

// A PMIx server this process can reach: srun --mpi=pmix's, or that of mpirun's daemon (Open
// MPI 4.1 serves its own ranks over PMIx too).
bool pmix_server(const Environment& env) {
  if (is_set(env, "PMIX_RANK") || is_set(env, "PMIX_NAMESPACE")) return true;
  // PMIX_SERVER_URI, PMIX_SERVER_URI2, PMIX_SERVER_URI21, PMIX_SERVER_URI3, ...: one per
  // protocol version the server speaks.
  const std::string prefix = "PMIX_SERVER_URI";
  for (auto it = env.lower_bound(prefix); it != env.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    if (!it->second.empty()) return true;
  }
  return false;
}

// What mpirun's daemon (orted) gives every rank it starts, also when it runs inside a Slurm
// allocation, where the daemon itself is a srun task and its ranks inherit SLURM_STEP_ID. Not
// any OMPI_MCA_orte_*: users export some of those themselves (docs/fleet.md suggests
// OMPI_MCA_orte_abort_on_non_zero_status), and srun passes them on to its tasks.
bool started_by_mpirun(const Environment& env) {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "OMPI_MCA_orte_hnp_uri",
                           "OMPI_MCA_orte_local_daemon_uri", "OMPI_MCA_ess_base_jobid"}) {
    if (is_set(env, name)) return true;
  }
  return false;
}

// The value quoted in the one line: printable ASCII, short, so that no environment can make
// the line two lines or a page.
std::string quoted(const std::string& text) {
  constexpr std::size_t kLongest = 32;
  std::string out;
  for (const char c : text.substr(0, kLongest)) out += (c >= ' ' && c <= '~') ? c : '?';
  if (text.size() > kLongest) out += "...";
  return out;
}

std::string refusal_message(const Environment& env) {
  // srun exports the MPI plugin it loaded, slurm.conf's MpiDefault when --mpi was not given
  // (MpiDefault=none: "none"); unset, no plugin was loaded at all.
  const std::string type = is_set(env, "SLURM_MPI_TYPE") ? value_of(env, "SLURM_MPI_TYPE") : "none";
  std::string how = "srun --mpi=" + quoted(type);
  // A PMIx type all the same: the plugin ran but its variables did not reach the task.
  if (type.compare(0, 4, "pmix") == 0) how += ", yet no PMIX_* variable reached this rank";
  return "preflight fleet: srun started this rank without PMIx (" + how +
         "); Debian's Open MPI needs srun --mpi=pmix (or MpiDefault=pmix in slurm.conf)";
}

}  // namespace

Environment environment_from(const char* const* entries) {
  Environment env;
  for (const char* const* e = entries; e != nullptr && *e != nullptr; ++e) {
    const char* equals = std::strchr(*e, '=');
    if (equals == nullptr) continue;
    env.emplace(std::string(*e, equals), std::string(equals + 1));
  }
  return env;
}

std::optional<LaunchRefusal> mpi_launch_refusal(const Environment& env) {
  if (!srun_task(env) || pmix_server(env) || started_by_mpirun(env)) return std::nullopt;
  LaunchRefusal refusal;
  refusal.message = refusal_message(env);
  const auto task = decimal(value_of(env, "SLURM_PROCID"));
  refusal.print = !task || *task == 0;
  return refusal;
}

}  // namespace preflight

namespace preflight {

std::optional<int> rank_before_mpi(const Environment& env) {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const auto rank = decimal(value_of(env, name)); rank && *rank < (1ULL << 30)) {
      return static_cast<int>(*rank);
    }
  }
  return std::nullopt;
}

}  // namespace preflight
