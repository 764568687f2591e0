// `preflight judge`: saved verdicts judged again from their readings (docs/judge.md).
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "app/commands.hpp"
#include "learned/apply_learned.hpp"
#include "model/host_info.hpp"
#include "preflight/errors.hpp"
#include "report/atomic_file.hpp"
#include "report/report.hpp"
#include "report/verdict_reader.hpp"
#include "run/rejudge.hpp"
#include "run/runner.hpp"

namespace preflight {

namespace {

std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The thresholds to judge one verdict with, and how they were chosen (for the verdict).
Thresholds thresholds_for(const CheckRegistry& registry, const Verdict& recorded,
                          const JudgeArgs& args, const std::string& origin, std::string& by) {
  if (args.recorded) {
    if (!recorded.thresholds) {
      throw InvalidInput(origin +
                         ": records no thresholds (a verdict of an older version, or "
                         "discovery failed): judge it with --sku or the detected SKU");
    }
    std::vector<std::string> unknown;
    Thresholds t =
        thresholds_from_record(registry.threshold_specs(), *recorded.thresholds, origin, unknown);
    by = "recorded";
    if (!unknown.empty()) {
      std::cerr << "preflight: " << origin << ": " << unknown.size()
                << " recorded thresholds unknown to this version ignored, first " << unknown.front()
                << '\n';
      by += " (" + std::to_string(unknown.size()) + " unknown keys ignored)";
    }
    return t;
  }
  Thresholds t;
  if (!args.sku.empty()) {
    t = Thresholds::for_sku(registry.threshold_specs(), &sku_from_flag(args.sku), "--sku");
    by = "--sku " + args.sku;
  } else if (recorded.thresholds && find_sku(recorded.thresholds->sku) != nullptr) {
    t = Thresholds::for_sku(registry.threshold_specs(), find_sku(recorded.thresholds->sku),
                            recorded.thresholds->detected_by);
    by = "today's values for the recorded SKU " + recorded.thresholds->sku;
  } else {
    // An older verdict: the SKU from the first GPU's recorded name.
    const SkuSpec* sku = nullptr;
    for (const GpuIdentity& g : recorded.system.gpus) {
      if (!g.name.empty()) {
        sku = detect_sku(0, g.name);
        break;
      }
    }
    t = Thresholds::for_sku(registry.threshold_specs(), sku, "recorded GPU name");
    by = sku ? "today's values for " + std::string(sku->id) + " (from the GPU name)"
             : "generic (no known GPU recorded)";
  }
  if (!args.thresholds_path.empty()) {
    t.apply_overrides_file(args.thresholds_path);
    by += " + " + args.thresholds_path;
  }
  const int gpus = static_cast<int>(recorded.system.gpus.size());
  if (!args.node_shape.empty()) {
    choose_node_shape(t, args.node_shape, "", gpus);
    by += " + --node-shape " + args.node_shape;
  } else if (recorded.thresholds && !recorded.thresholds->node_shape.empty()) {
    const MachineShape* shape =
        find_node_shape(recorded.thresholds->node_shape, t.site_node_shapes());
    if (shape == nullptr) {
      // A site's own shape, and its file not given again: judged without one, and said so.
      std::cerr << "preflight: " << origin << ": the recorded node shape "
                << recorded.thresholds->node_shape
                << " is neither built in nor in --thresholds: judged without a node shape\n";
    }
    t.set_node_shape(shape, recorded.thresholds->node_shape_by);
  } else {
    choose_node_shape(t, "", "", gpus);  // an older verdict: the reference board, if any
  }
  return t;
}

bool is_directory(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace

CommandResult judge_command(const Invocation& inv) {
  const JudgeArgs& args = inv.judge;
  CheckRegistry registry;
  register_builtin_checks(registry);
  std::vector<FaultKindSpec> kinds = runner_fault_kinds();
  for (const FaultKindSpec& k : registry.fault_kinds()) kinds.push_back(k);

  const FigureCatalogue figures = registry.figure_catalogue();
  const bool several = args.files.size() > 1;
  const bool json_to_stdout = args.json_path == "-";
  if (several && !args.json_path.empty() && !is_directory(args.json_path)) {
    throw InvalidInput("--json " + args.json_path +
                       ": with several verdicts, --json names an existing directory");
  }
  // Every input is read and judged before anything is written: bad input writes nothing.
  std::vector<std::pair<std::string, Verdict>> judged;
  for (const std::string& path : args.files) {
    const Verdict recorded = load_verdict_file(path);
    RejudgeSettings settings;
    const Thresholds thresholds =
        thresholds_for(registry, recorded, args, path, settings.thresholds_by);
    settings.thresholds = &thresholds;
    settings.source = path;
    settings.judged_at = utc_iso8601(std::chrono::system_clock::now());
    settings.strict = args.strict;
    settings.fault_kinds = kinds;
    Verdict verdict = rejudge(recorded, registry, settings);
    // The learned limits, as `run` applies them: the thresholds file's baseline and the node's
    // own history (the verdict's host's files in --history).
    std::optional<History> history;
    if (!args.history_dir.empty()) history = read_history(args.history_dir, recorded.host, {});
    LearnedInputs learned;
    learned.baseline = thresholds.baseline();
    learned.history = history ? &*history : nullptr;
    apply_learned(verdict, figures, learned, args.strict);
    judged.emplace_back(path, std::move(verdict));
  }
  std::vector<std::string> targets;
  for (const auto& [path, verdict] : judged) {
    (void)verdict;
    if (args.json_path.empty() || json_to_stdout) continue;
    targets.push_back(several ? args.json_path + "/" + base_name(path) : args.json_path);
    ensure_writable(targets.back());
  }

  int code = kExitHealthy;
  bool unhealthy = false;
  bool tool_error = false;
  FILE* table_stream = json_to_stdout ? stderr : stdout;
  TextStyle style;
  style.colour = args.colour && isatty(fileno(table_stream)) && std::getenv("NO_COLOR") == nullptr;
  for (std::size_t i = 0; i < judged.size(); ++i) {
    const Verdict& v = judged[i].second;
    const std::string json = verdict_to_json_text(v);
    if (json_to_stdout) {
      std::fwrite(json.data(), 1, json.size(), stdout);
    } else if (!targets.empty()) {
      try {
        write_file_atomically(targets[i], json);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "preflight: internal error: cannot write the verdict: %s\n", e.what());
        tool_error = true;
      }
    }
    if (several) std::fprintf(table_stream, "== %s\n", judged[i].first.c_str());
    const std::string table = verdict_to_text(v, style);
    std::fwrite(table.data(), 1, table.size(), table_stream);
    unhealthy = unhealthy || v.exit_code == kExitUnhealthy;
    tool_error = tool_error || v.exit_code == kExitInternalError;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  // One node unhealthy makes the answer 1; else a tool error 3; else 0 (docs/judge.md).
  if (unhealthy) {
    code = kExitUnhealthy;
  } else if (tool_error) {
    code = kExitInternalError;
  }
  return {code, false};
}

}  // namespace preflight
