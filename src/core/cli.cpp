#include "preflight/cli.hpp"

#include <CLI/CLI.hpp>

#include "preflight/build_info.hpp"

namespace preflight {

std::string version_string() {
  return std::string(build::kVersion) + " (git " + build::kGitRevision + ")";
}

namespace {

constexpr int kMaxTimeout = 7 * 24 * 3600;

void add_run_options(CLI::App& run, RunArgs& args, std::string& profile) {
  run.add_option("--profile", profile,
                 "quick (default): seconds, for prologs and CI gates; standard: minutes; "
                 "burnin: long stress runs")
      ->check(CLI::IsMember({"quick", "standard", "burnin"}));
  run.add_option("--checks", args.checks,
                 "comma-separated checks to run instead of the profile's (see 'preflight list'); "
                 "inventory always runs")
      ->delimiter(',')
      ->allow_extra_args(false);
  run.add_option("--json", args.json_path,
                 "write the verdict JSON to PATH atomically; '-' writes it to stdout and the "
                 "table to stderr");
  run.add_option("--timeout", args.timeout_s,
                 "deadline in seconds for the whole run (default: the checks' budgets + 30 s); "
                 "a check still running then fails with CHECK_TIMEOUT")
      ->check(CLI::Range(1, kMaxTimeout));
  run.add_option("--expect-gpus", args.expect_gpus,
                 "number of GPUs the node must have (default: at least one); 0 accepts a node "
                 "without GPUs and skips the GPU checks")
      ->check(CLI::Range(0, 1024));
  run.add_option("--thresholds", args.thresholds_path,
                 "JSON file overriding any subset of the thresholds (docs/thresholds.md)");
  run.add_flag("--strict", args.strict, "treat warnings as unhealthy (exit 1)");
  run.add_option("--inject-fault", args.inject_faults,
                 "KIND[:VALUE]@TARGET, repeatable: simulate a fault to test detection and "
                 "alerting (kinds: 'preflight list'); the verdict says it was injected")
      ->allow_extra_args(false);
  run.add_flag("--no-color{false}", args.colour, "no colours in the table");
}

}  // namespace

Invocation parse_command_line(int argc, const char* const* argv,
                              const std::vector<CheckOptionSpec>& check_options) {
  Invocation inv;
  CLI::App app{
      "preflight: checks a GPU node before it is trusted with a large training job.\n"
      "Exit codes: 0 healthy, 1 unhealthy, 2 invalid invocation, 3 internal error.",
      "preflight"};
  app.set_version_flag("--version", "preflight " + version_string());
  app.require_subcommand(1);

  std::string profile = "quick";
  CLI::App* run = app.add_subcommand(
      "run", "Diagnose this node: run the profile's checks, print a table, write the verdict");
  add_run_options(*run, inv.run, profile);
  // Options of the checks, as text; each check validates its own (plan_checks).
  std::vector<std::string> check_values(check_options.size());
  for (std::size_t i = 0; i < check_options.size(); ++i) {
    const CheckOptionSpec& spec = check_options[i];
    run->add_option(spec.flag, check_values[i], spec.description)
        ->type_name(spec.value_name)
        ->group("Check options");
  }

  CLI::App* list =
      app.add_subcommand("list", "List every check, profile and fault kind with time budgets");
  list->add_flag("--json", inv.list_json, "print the list as JSON");

  CLI::App* thresholds = app.add_subcommand(
      "thresholds", "Print the effective thresholds for this node's GPUs as JSON");
  thresholds->add_option("--sku", inv.thresholds.sku,
                         "show the thresholds of this SKU (id or name, see docs/thresholds.md) "
                         "instead of the detected one");
  thresholds->add_option("--thresholds", inv.thresholds.thresholds_path,
                         "apply this thresholds file on top, as 'run' would");

  const auto fail = [&inv](const std::string& what) {
    inv.command = Command::message;
    inv.message = "preflight: " + what + " (see 'preflight --help')";
    inv.exit_code = 2;
    return inv;
  };
  // CLI11 would only say "a subcommand is required" for a misspelt one.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    if (first != "run" && first != "list" && first != "thresholds") {
      return fail("unknown command '" + first + "' (known: run, list, thresholds)");
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    inv.command = Command::message;
    // Help for the subcommand the user asked about, if any.
    const CLI::App* target = &app;
    for (const CLI::App* sub : {run, list, thresholds}) {
      if (sub->parsed()) target = sub;
    }
    // Top-level help shows every subcommand's options, so `preflight --help` is complete.
    inv.message = target == &app ? app.help("", CLI::AppFormatMode::All) : target->help();
    inv.exit_code = 0;
    return inv;
  } catch (const CLI::CallForVersion& e) {
    inv.command = Command::message;
    inv.message = e.what();
    if (inv.message.empty() || inv.message.back() != '\n') inv.message += '\n';
    inv.exit_code = 0;
    return inv;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (auto& c : what) {
      if (c == '\n') c = ' ';
    }
    return fail(what);
  }

  if (run->parsed()) {
    // An empty path (say, from an unset variable in a prolog) would silently lose the verdict.
    if (run->count("--json") > 0 && inv.run.json_path.empty()) {
      return fail("--json: empty path");
    }
    for (std::size_t i = 0; i < check_options.size(); ++i) {
      if (run->count(check_options[i].flag) == 0) continue;
      if (check_values[i].empty()) return fail(check_options[i].flag + ": empty value");
      inv.run.check_options.set(check_options[i].flag, check_values[i]);
    }
    inv.command = Command::run;
    inv.run.profile = parse_profile(profile).value_or(Profile::quick);
  } else if (list->parsed()) {
    inv.command = Command::list;
  } else {
    inv.command = Command::thresholds;
  }
  return inv;
}

}  // namespace preflight
