#pragma once
#include "app/cli.hpp"

namespace preflight {

struct CommandResult {
  int exit_code = 0;
  // A thread is stuck in the driver: the process must end without joining it or running
  // destructors under it (main uses _Exit).
  bool threads_abandoned = false;
};

// They throw InvalidInput for bad input (exit 2); main maps anything else to an internal error
// (exit 3).
CommandResult run_command(const Invocation& inv, int argc, const char* const* argv);
CommandResult list_command(const Invocation& inv);
CommandResult thresholds_command(const Invocation& inv);
CommandResult report_command(const Invocation& inv);
CommandResult judge_command(const Invocation& inv);
CommandResult plan_command(const Invocation& inv);
CommandResult acknowledge_command(const Invocation& inv);  // acknowledge_command.cpp
CommandResult baseline_command(const Invocation& inv);     // baseline_command.cpp

// The SKU a --sku value names (id or name); InvalidInput listing the known ids otherwise.
const SkuSpec& sku_from_flag(const std::string& id);

}  // namespace preflight
