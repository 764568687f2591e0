// The command line: the input split into arguments at NUL and newline bytes, after "preflight",
// through parse_command_line with the options of every built-in check, as main() calls it.
// Parsing never runs anything: help and --version come back as Command::message, never exit().
#include <cstddef>
#include <cstdint>

#include <CLI/CLI.hpp>

#include "app/cli.hpp"
#include "fuzz_support.hpp"
#include "preflight/errors.hpp"

using namespace preflight;

namespace {

const std::vector<CheckOptionSpec>& check_options() {
  static const std::vector<CheckOptionSpec> options = [] {
    std::vector<CheckOptionSpec> out;
    for (const Check* check : fuzz::builtin_registry().all()) {
      for (const auto& spec : check->info().options) out.push_back(spec);
    }
    return out;
  }();
  return options;
}

// main() limits nothing, but a shell does: more arguments only slow the search down.
constexpr std::size_t kMaxArguments = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> words =
      fuzz::split(fuzz::as_text(data, size), std::string_view("\0\n", 2));
  if (words.size() > kMaxArguments) return 0;
  std::vector<const char*> argv{"preflight"};
  for (const std::string& w : words) argv.push_back(w.c_str());
  argv.push_back(nullptr);  // as the kernel passes it
  try {
    const Invocation inv =
        parse_command_line(static_cast<int>(argv.size() - 1), argv.data(), check_options(),
                           [] { return std::string("fuzz\n"); });
    if (inv.command == Command::message && inv.message.empty() && inv.exit_code != 0) {
      fuzz::violated("a rejected command line without a message");
    }
  } catch (const InvalidInput&) {
  } catch (const CLI::Error&) {
  }
  return 0;
}
