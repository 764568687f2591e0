#pragma once
// Command-line parsing (CLI11). Parsing only: it produces an Invocation and never runs
// anything, so every flag combination is unit-testable.
#include <optional>
#include <string>
#include <vector>

#include "preflight/check.hpp"

namespace preflight {

enum class Command { run, list, thresholds, message };

struct RunArgs {
  Profile profile = Profile::quick;
  std::vector<std::string> checks;
  std::string json_path;  // "-" for stdout; empty: no JSON file
  std::optional<int> timeout_s;
  std::optional<int> expect_gpus;
  std::string thresholds_path;
  bool strict = false;
  std::vector<std::string> inject_faults;
  bool colour = true;          // --no-color turns it off; it is only used on a terminal anyway
  CheckOptions check_options;  // options the checks add (--gemm-dtypes ...), as text
};

struct ThresholdsArgs {
  std::string sku;              // --sku ID or NAME
  std::string thresholds_path;  // --thresholds FILE: show the file applied
};

struct Invocation {
  Command command = Command::message;
  RunArgs run;
  ThresholdsArgs thresholds;
  bool list_json = false;
  // Command::message: text for stdout (help, version) or an error line for stderr.
  std::string message;
  int exit_code = 0;
};

// check_options: the options the registered checks add to `run` (every CheckInfo::options);
// the parser stores their values as text for the checks to validate.
Invocation parse_command_line(int argc, const char* const* argv,
                              const std::vector<CheckOptionSpec>& check_options = {});

// "0.1.0 (git abc123)"
std::string version_string();

}  // namespace preflight
