#include "app/cli.hpp"

#include <CLI/CLI.hpp>

#include "model/build_info.hpp"
#include "preflight/errors.hpp"
#include "run/burnin.hpp"

namespace preflight {

std::string version_string() {
  return std::string(build::kVersion) + " (git " + build::kGitRevision + ")";
}

namespace {

constexpr int kMaxTimeout = 7 * 24 * 3600;

void add_run_options(CLI::App& run, RunArgs& args, std::string& profile, std::string& duration) {
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
                 "deadline in seconds for the whole run, verdict written (default: the profile's "
                 "plan for the node, see 'preflight plan'); the checks' work is sized to fit it, "
                 "and one below the node's floor is refused (docs/plan.md)")
      ->check(CLI::Range(1, kMaxTimeout));
  run.add_option("--rotation", args.rotation,
                 "run counter of the pair rotation: where the time does not allow every NVLink "
                 "or NIC pair, run N covers step N mod steps (docs/plan.md)");
  run.add_option("--state-dir", args.state_dir,
                 "keep the rotation counter in DIR/rotation, one step further each run (the "
                 "Slurm hooks pass their state directory)");
  run.add_option(
      "--history", args.history_dir,
      "a directory of this node's earlier verdicts (the Slurm hooks' history folder): figures "
      "that dropped and stayed down, counters that rose, repeated failures "
      "(docs/baseline.md)");
  run.add_option("--expect-gpus", args.expect_gpus,
                 "number of GPUs the node must have (default: at least one); 0 accepts a node "
                 "without GPUs and skips the GPU checks")
      ->check(CLI::Range(0, 1024));
  run.add_option("--thresholds", args.thresholds_path,
                 "JSON file overriding any subset of the thresholds (docs/thresholds.md)");
  run.add_option("--node-shape", args.node_shape,
                 "judge the node as this known machine type (aws-p5.48xlarge, hgx-h200, ...: "
                 "'preflight thresholds --node-shape'); default: the DMI product name, else the "
                 "reference board of the GPUs found (docs/node-shapes.md)");
  run.add_flag("--strict", args.strict, "treat warnings as unhealthy (exit 1)");
  run.add_option("--inject-fault", args.inject_faults,
                 "KIND[:VALUE]@TARGET, repeatable: simulate a fault to test detection and "
                 "alerting (kinds: 'preflight list'); the verdict says it was injected")
      ->allow_extra_args(false);
  run.add_flag("--no-color{false}", args.colour, "no colours in the table");
  run.add_option("--prom", args.prom_path,
                 "also write the verdict as Prometheus metrics to PATH atomically, for "
                 "node_exporter's textfile collector (docs/prometheus.md)");
  run.add_option("--repeat", args.repeat,
                 "burn-in: run the checks N times (passes); the verdict keeps every pass and "
                 "says which first failed; --timeout then bounds each pass")
      ->check(CLI::Range(1, kMaxRepeat))
      ->group("Burn-in");
  run.add_option("--duration", duration,
                 "burn-in: start new passes until this much time has passed (90, 45m, 2h, 1d); "
                 "the pass under way finishes")
      ->group("Burn-in");
  run.add_flag("--stop-on-fail", args.stop_on_fail, "burn-in: stop after the first unhealthy pass")
      ->group("Burn-in");
}

void add_fleet_options(CLI::App& fleet, FleetArgs& args, std::string& profile) {
  fleet
      .add_option("--transport", args.transport,
                  "nccl (default): the all-gathers run on the GPUs through NCCL; host: on the "
                  "CPUs through MPI (machines without GPUs, tests)")
      ->check(CLI::IsMember({"nccl", "host"}));
  fleet.add_option("--local-profile", profile, "profile of each node's local checks (quick)")
      ->check(CLI::IsMember({"quick", "standard", "burnin"}));
  fleet.add_option("--checks", args.checks, "local checks instead of the profile's")
      ->delimiter(',')
      ->allow_extra_args(false);
  fleet.add_option("--expect-gpus", args.expect_gpus, "GPUs every node must have, as for 'run'")
      ->check(CLI::Range(0, 1024));
  fleet.add_option("--thresholds", args.thresholds_path, "thresholds file, as for 'run'");
  fleet.add_option("--node-shape", args.node_shape, "node shape of every node, as for 'run'");
  fleet.add_option("--json", args.json_path,
                   "rank 0 writes the fleet verdict (preflight.fleet/1) to PATH atomically; "
                   "'-': stdout");
  fleet.add_option("--local-json", args.local_json_dir,
                   "every node also writes its own verdict to DIR/<host>-rank<R>.json");
  fleet
      .add_option("--timeout", args.timeout_s,
                  "deadline in seconds for the whole fleet run (default: local checks + the "
                  "round bound x the group timeout + margins)")
      ->check(CLI::Range(10, kMaxTimeout));
  fleet
      .add_option("--local-timeout", args.local_timeout_s,
                  "deadline in seconds for each node's local checks (default: the local "
                  "profile's)")
      ->check(CLI::Range(1, kMaxTimeout));
  fleet
      .add_option("--group-timeout", args.group_timeout_s,
                  "seconds a group's all-gathers may take before the group is a timeout and "
                  "its communicator is aborted (default: sized so all rounds fit the timeout)")
      ->check(CLI::Range(0.5, 3600.0));
  fleet
      .add_option("--group-size", args.group_size,
                  "nodes per group (2; an odd leftover joins "
                  "a group of 3)")
      ->check(CLI::Range(2, 64));
  fleet.add_option("--topology", args.topology_path,
                   "file of 'HOST SWITCH' lines: groups of the first round cross switches");
  fleet.add_option("--sizes", args.sizes,
                   "all-gather bytes per rank, comma-separated with K/M/G suffixes (default: "
                   "nccl 1M,64M; host 64K,1M)");
  fleet
      .add_option("--max-exclude-share", args.max_exclude_share,
                  "when more than this share of the nodes (and at least 3) fail by one cause, "
                  "the verdict is 'systemic' (exit 3) and does not exclude them (0.2; 1.0 lifts "
                  "the guard)")
      ->check(CLI::Range(0.0, 1.0));
  fleet
      .add_option("--slow-factor", args.slow_factor,
                  "a group below this fraction of the median bus bandwidth of comparable "
                  "groups is slow (0.8)")
      ->check(CLI::Range(0.05, 1.0));
  fleet
      .add_option("--min-busbw", args.min_busbw_gbps,
                  "a group below this bus bandwidth in GB/s is slow (default 0: no absolute "
                  "floor)")
      ->check(CLI::Range(0.0, 1e6));
  fleet
      .add_option("--inject-fault", args.inject_faults,
                  "KIND[:VALUE]@node=R, repeatable: allgather-corrupt, allgather-hang, "
                  "allgather-slow:FACTOR, local-fail; hostile peers (R > 0): "
                  "peer-malformed:local|report, peer-oversized:local|report, peer-freeze, "
                  "peer-die (docs/fleet.md)")
      ->allow_extra_args(false);
  fleet.add_flag("--no-color{false}", args.colour, "no colours in the table");
}

}  // namespace

Invocation parse_command_line(int argc, const char* const* argv,
                              const std::vector<CheckOptionSpec>& check_options,
                              const std::function<std::string()>& runtime_description) {
  Invocation inv;
  CLI::App app{
      "preflight: checks a GPU node before it is trusted with a large training job.\n"
      "Exit codes: 0 healthy, 1 unhealthy, 2 invalid invocation, 3 internal error.",
      "preflight"};
  app.set_version_flag(
      "--version",
      [&runtime_description] {
        std::string text = "preflight " + version_string() + "\n";
        if (runtime_description) text += runtime_description();
        return text;
      },
      "Print the version, the CUDA toolkit it was built with, the oldest driver it runs on and "
      "the CUDA libraries it finds, and exit");
  app.require_subcommand(1);

  std::string profile = "quick";
  std::string duration;
  CLI::App* run = app.add_subcommand(
      "run", "Diagnose this node: run the profile's checks, print a table, write the verdict");
  add_run_options(*run, inv.run, profile, duration);
  // Options of the checks, as text; each check validates its own (plan_checks).
  std::vector<std::string> check_values(check_options.size());
  for (std::size_t i = 0; i < check_options.size(); ++i) {
    const CheckOptionSpec& spec = check_options[i];
    run->add_option(spec.flag, check_values[i], spec.description)
        ->type_name(spec.value_name)
        ->group("Check options");
  }

  std::string local_profile = "quick";
  CLI::App* fleet = app.add_subcommand(
      "fleet",
      "Vet many nodes at once: launched with one process per node (srun --mpi=pmix, mpirun); "
      "local checks, then grouped all-gather rounds that localize faulty nodes, links and "
      "stragglers");
  add_fleet_options(*fleet, inv.fleet, local_profile);
  std::vector<std::string> fleet_check_values(check_options.size());
  for (std::size_t i = 0; i < check_options.size(); ++i) {
    const CheckOptionSpec& spec = check_options[i];
    fleet->add_option(spec.flag, fleet_check_values[i], spec.description)
        ->type_name(spec.value_name)
        ->group("Check options (local checks)");
  }

  std::string plan_profile = "quick";
  CLI::App* plan = app.add_subcommand(
      "plan",
      "Show how a run's time would be divided, without running anything: per check the "
      "modelled seconds, the deadline and the coverage (docs/plan.md)");
  plan->add_option("--profile", plan_profile, "quick (default), standard or burnin")
      ->check(CLI::IsMember({"quick", "standard", "burnin"}));
  plan->add_option("--checks", inv.plan.checks, "checks instead of the profile's")
      ->delimiter(',')
      ->allow_extra_args(false);
  plan->add_option("--timeout", inv.plan.timeout_s,
                   "plan for this deadline in seconds (default: the profile's default)")
      ->check(CLI::Range(1, kMaxTimeout));
  plan->add_option("--node", inv.plan.node,
                   "plan for a described node, gpus=N,sku=SKU,nics=M (sku: see 'preflight "
                   "thresholds --sku'); default: this node, by discovery");
  plan->add_option("--rotation", inv.plan.rotation, "the pair rotation's run counter, as for run");
  plan->add_option("--json", inv.plan.json_path, "write the plan as JSON to PATH ('-': stdout)");
  std::vector<std::string> plan_check_values(check_options.size());
  for (std::size_t i = 0; i < check_options.size(); ++i) {
    const CheckOptionSpec& spec = check_options[i];
    plan->add_option(spec.flag, plan_check_values[i], spec.description)
        ->type_name(spec.value_name)
        ->group("Check options");
  }

  CLI::App* list = app.add_subcommand(
      "list", "List every check, profile and fault kind with the time model's plan");
  list->add_flag("--json", inv.list_json, "print the list as JSON");

  CLI::App* thresholds = app.add_subcommand(
      "thresholds", "Print the effective thresholds for this node's GPUs as JSON");
  thresholds->add_option("--sku", inv.thresholds.sku,
                         "show the thresholds of this SKU (id or name, see docs/thresholds.md) "
                         "instead of the detected one");
  thresholds->add_option("--thresholds", inv.thresholds.thresholds_path,
                         "apply this thresholds file on top, as 'run' would");
  thresholds->add_option("--node-shape", inv.thresholds.node_shape,
                         "show what this node shape sets ('list' prints every shape with its "
                         "source); default: the one this node is detected as");

  CLI::App* report = app.add_subcommand(
      "report",
      "Render saved node and fleet verdicts: one self-contained HTML page, or key/value lines "
      "for scripts");
  report
      ->add_option("FILE", inv.report.files,
                   "verdict files (preflight.verdict/1 or "
                   "preflight.fleet/1); '-' reads stdin")
      ->required();
  report->add_option("--output,-o", inv.report.output,
                     "write to PATH atomically instead of stdout");
  report
      ->add_option("--format", inv.report.format,
                   "html (default): one page with a summary, bandwidth heat maps, TFLOP/s bars, "
                   "fleet rounds and findings; tsv: key<TAB>value lines per file (docs/report.md)")
      ->check(CLI::IsMember({"html", "tsv"}));

  CLI::App* judge = app.add_subcommand(
      "judge",
      "Judge the readings of saved verdicts again, with today's or other thresholds, and write "
      "new verdicts (docs/judge.md); exit codes as for run");
  judge->add_option("VERDICT", inv.judge.files, "verdict files written by 'preflight run --json'")
      ->required();
  judge->add_option("--thresholds", inv.judge.thresholds_path,
                    "JSON file overriding any subset of the thresholds, on top of the SKU's");
  judge->add_option("--node-shape", inv.judge.node_shape,
                    "judge as this node shape (docs/node-shapes.md); default: the one the run "
                    "recorded, else the reference board of the recorded GPUs");
  judge->add_option("--sku", inv.judge.sku,
                    "judge as this SKU (see 'preflight thresholds --sku'); default: the SKU the "
                    "run recorded");
  judge->add_flag("--recorded-thresholds", inv.judge.recorded,
                  "judge with the very values the run was judged with (reproduces its findings)");
  judge->add_option("--json", inv.judge.json_path,
                    "write the new verdict to PATH atomically ('-': stdout, the table to "
                    "stderr); with several files, PATH is a directory and each verdict keeps "
                    "its file name");
  judge->add_option(
      "--history", inv.judge.history_dir,
      "a directory of this node's earlier verdicts (the Slurm hooks' history folder): figures "
      "that dropped and stayed down, counters that rose, repeated failures "
      "(docs/baseline.md)");
  judge->add_flag("--strict", inv.judge.strict, "treat warnings as unhealthy (exit 1)");
  judge->add_flag("--no-color{false}", inv.judge.colour, "no colours in the table");

  CLI::App* baseline = app.add_subcommand(
      "baseline",
      "Learn site limits from many nodes' verdicts (written by 'preflight run --json'): per "
      "node shape, a fail limit for every figure with a limit; written as a thresholds file "
      "for run and judge (docs/baseline.md)");
  baseline
      ->add_option("VERDICT", inv.baseline.inputs,
                   "verdict files, or directories whose *.json files are verdicts (not "
                   "recursive); unhealthy, drill and re-judged verdicts are left out, and a "
                   "file named twice is read once")
      ->required();
  baseline
      ->add_option("--out", inv.baseline.out_path,
                   "write the thresholds file (a \"baseline\" block) to FILE atomically; '-': "
                   "stdout, the summary to stderr")
      ->required();
  baseline
      ->add_option("--min-nodes", inv.baseline.min_nodes,
                   "nodes a group needs, outliers removed, to learn a figure's limit (10)")
      ->check(CLI::Range(3, 100000));
  baseline
      ->add_option("--drop", inv.baseline.drop_percent,
                   "the limit is at least this many percent below the median (5)")
      ->check(CLI::Range(0.0, 90.0));

  CLI::App* acknowledge = app.add_subcommand(
      "acknowledge",
      "Acknowledge the kernel events logged so far (after a GPU reset or a repair): later runs "
      "with this --state-dir count only events logged after now (docs/checks/events.md)");
  acknowledge
      ->add_option("--state-dir", inv.acknowledge.state_dir,
                   "the state directory the runs use (the Slurm hooks' PREFLIGHT_STATE_DIR)")
      ->required();

  const auto fail = [&inv](const std::string& what) {
    inv.command = Command::message;
    inv.message = "preflight: " + what + " (see 'preflight --help')";
    inv.exit_code = 2;
    return inv;
  };
  // CLI11 would only say "a subcommand is required" for a misspelt one.
  if (argc > 1 && argv[1][0] != '-') {
    const std::string first = argv[1];
    if (first != "run" && first != "list" && first != "thresholds" && first != "fleet" &&
        first != "report" && first != "judge" && first != "plan" && first != "acknowledge" &&
        first != "baseline") {
      return fail("unknown command '" + first +
                  "' (known: run, fleet, plan, list, thresholds, report, judge, baseline, "
                  "acknowledge)");
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    inv.command = Command::message;
    // Help for the subcommand the user asked about, if any.
    const CLI::App* target = &app;
    for (const CLI::App* sub :
         {run, fleet, plan, list, thresholds, report, judge, baseline, acknowledge}) {
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
    if (run->count("--prom") > 0 && inv.run.prom_path.empty()) return fail("--prom: empty path");
    if (run->count("--duration") > 0) {
      try {
        inv.run.duration_s = parse_duration(duration, "--duration");
      } catch (const InvalidInput& e) {
        return fail(e.what());
      }
    }
    if (inv.run.stop_on_fail && !inv.run.repeat && !inv.run.duration_s) {
      return fail("--stop-on-fail: only with --repeat or --duration");
    }
    for (std::size_t i = 0; i < check_options.size(); ++i) {
      if (run->count(check_options[i].flag) == 0) continue;
      if (check_values[i].empty()) return fail(check_options[i].flag + ": empty value");
      inv.run.check_options.set(check_options[i].flag, check_values[i]);
    }
    if (run->count("--state-dir") > 0 && inv.run.state_dir.empty()) {
      return fail("--state-dir: empty path");
    }
    if (run->count("--history") > 0 && inv.run.history_dir.empty()) {
      return fail("--history: empty path");
    }
    if (inv.run.rotation && !inv.run.state_dir.empty()) {
      return fail("--rotation: not with --state-dir (which keeps the counter itself)");
    }
    inv.command = Command::run;
    inv.run.profile = parse_profile(profile).value_or(Profile::quick);
  } else if (fleet->parsed()) {
    if (fleet->count("--json") > 0 && inv.fleet.json_path.empty()) {
      return fail("--json: empty path");
    }
    if (fleet->count("--local-json") > 0 && inv.fleet.local_json_dir.empty()) {
      return fail("--local-json: empty path");
    }
    for (std::size_t i = 0; i < check_options.size(); ++i) {
      if (fleet->count(check_options[i].flag) == 0) continue;
      if (fleet_check_values[i].empty()) return fail(check_options[i].flag + ": empty value");
      inv.fleet.check_options.set(check_options[i].flag, fleet_check_values[i]);
    }
    inv.command = Command::fleet;
    inv.fleet.profile = parse_profile(local_profile).value_or(Profile::quick);
  } else if (plan->parsed()) {
    if (plan->count("--json") > 0 && inv.plan.json_path.empty()) return fail("--json: empty path");
    for (std::size_t i = 0; i < check_options.size(); ++i) {
      if (plan->count(check_options[i].flag) == 0) continue;
      if (plan_check_values[i].empty()) return fail(check_options[i].flag + ": empty value");
      inv.plan.check_options.set(check_options[i].flag, plan_check_values[i]);
    }
    inv.command = Command::plan;
    inv.plan.profile = parse_profile(plan_profile).value_or(Profile::quick);
  } else if (list->parsed()) {
    inv.command = Command::list;
  } else if (report->parsed()) {
    if (report->count("--output") > 0 && inv.report.output.empty()) {
      return fail("--output: empty path");
    }
    inv.command = Command::report;
  } else if (judge->parsed()) {
    if (judge->count("--json") > 0 && inv.judge.json_path.empty()) {
      return fail("--json: empty path");
    }
    if (inv.judge.recorded && (!inv.judge.sku.empty() || !inv.judge.thresholds_path.empty() ||
                               !inv.judge.node_shape.empty())) {
      return fail("--recorded-thresholds: not with --sku, --thresholds or --node-shape");
    }
    if (inv.judge.files.size() > 1 && inv.judge.json_path == "-") {
      return fail("--json -: one verdict file only (give a directory for several)");
    }
    if (judge->count("--history") > 0 && inv.judge.history_dir.empty()) {
      return fail("--history: empty path");
    }
    inv.command = Command::judge;
  } else if (baseline->parsed()) {
    if (inv.baseline.out_path.empty()) return fail("--out: empty path");
    for (const std::string& input : inv.baseline.inputs) {
      if (input.empty()) return fail("VERDICT: empty path");
    }
    inv.command = Command::baseline;
  } else if (acknowledge->parsed()) {
    if (inv.acknowledge.state_dir.empty()) return fail("--state-dir: empty path");
    inv.command = Command::acknowledge;
  } else {
    inv.command = Command::thresholds;
  }
  return inv;
}

}  // namespace preflight
