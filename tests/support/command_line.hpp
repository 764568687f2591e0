#pragma once
// A command line parsed as main() parses it, for the tests of the cli and of fleet setup.
#include <string>
#include <vector>

#include "app/cli.hpp"

namespace preflight::test {

// `args` are what follows the program name: {"run", "--checks", "gemm"}.
inline Invocation parse_args(std::vector<std::string> args) {
  args.insert(args.begin(), "preflight");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

}  // namespace preflight::test
