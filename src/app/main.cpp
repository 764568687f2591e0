// preflight: the only place that decides how the process ends.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <vector>

#include "app/commands.hpp"
#include "app/system_engines.hpp"
#ifdef PREFLIGHT_HAVE_MPI
#include "fleet/mpi/fleet_command.hpp"
#endif
#include "preflight/errors.hpp"
#include "preflight/verdict.hpp"

namespace {

int finish(const preflight::CommandResult& result) {
  if (result.threads_abandoned) {
    // A thread stuck in the driver can be neither joined nor left to run under static
    // destructors: end here, after flushing what was written.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    std::_Exit(result.exit_code);
  }
  return result.exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace preflight;
  std::vector<CheckOptionSpec> check_options;
  {
    CheckRegistry registry;
    register_builtin_checks(registry);
    for (const Check* check : registry.all()) {
      for (const auto& spec : check->info().options) check_options.push_back(spec);
    }
  }
  const Invocation inv = parse_command_line(argc, argv, check_options, describe_gpu_runtime);
  try {
    switch (inv.command) {
      case Command::message:
        (inv.exit_code == 0 ? std::cout : std::cerr)
            << inv.message << (inv.exit_code == 0 ? "" : "\n");
        return inv.exit_code;
      case Command::run:
        return finish(run_command(inv, argc, argv));
      case Command::fleet: {
#ifdef PREFLIGHT_HAVE_MPI
        const FleetCommandResult r = fleet_command(inv.fleet, argc, argv, make_system_engines);
        return finish(CommandResult{r.exit_code, r.threads_abandoned});
#else
        std::cerr << "preflight: fleet: this binary was built without MPI "
                     "(-DPREFLIGHT_WITH_MPI=OFF)\n";
        return kExitInvalidInvocation;
#endif
      }
      case Command::list:
        return finish(list_command(inv));
      case Command::thresholds:
        return finish(thresholds_command(inv));
      case Command::report:
        return finish(report_command(inv));
      case Command::judge:
        return finish(judge_command(inv));
      case Command::plan:
        return finish(plan_command(inv));
      case Command::acknowledge:
        return finish(acknowledge_command(inv));
      case Command::baseline:
        return finish(baseline_command(inv));
    }
  } catch (const InvalidInput& e) {
    std::cerr << "preflight: " << e.what() << '\n';
    return kExitInvalidInvocation;
  } catch (const std::exception& e) {
    std::cerr << "preflight: internal error: " << e.what() << '\n';
    return kExitInternalError;
  }
  return kExitInternalError;
}
