// `preflight baseline`: site limits learned from many nodes' verdicts (docs/baseline.md).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "learned/baseline_learning.hpp"
#include "model/bounded_input.hpp"
#include "model/host_info.hpp"
#include "model/text_format.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "preflight/thresholds.hpp"
#include "report/atomic_file.hpp"
#include "report/verdict_reader.hpp"

namespace preflight {

namespace {

// A fleet's verdicts over months: enough for any site, and a bound on what one invocation
// reads (each file is itself bounded by load_verdict_file).
constexpr std::size_t kMaxVerdictFiles = 100000;

bool has_json_suffix(const std::string& name) {
  const std::string suffix = ".json";
  return name.size() > suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void check_file_count(std::size_t count) {
  if (count > kMaxVerdictFiles) {
    throw InvalidInput("more than " + std::to_string(kMaxVerdictFiles) +
                       " verdict files given: learn from fewer, or from a newer subset");
  }
}

// The regular *.json files directly inside `dir`, sorted by name; anything else there (a
// subdirectory, a FIFO, notes) is not a verdict and is passed over.
void add_directory(const std::string& dir, std::vector<std::string>& files) {
  const std::unique_ptr<DIR, int (*)(DIR*)> stream(::opendir(dir.c_str()), ::closedir);
  if (!stream) {
    throw InvalidInput(printable(dir) + ": cannot read the directory: " + std::strerror(errno));
  }
  std::vector<std::string> names;
  while (const dirent* entry = ::readdir(stream.get())) {
    const std::string name = entry->d_name;
    if (!has_json_suffix(name)) continue;
    struct stat info {};
    if (::stat((dir + "/" + name).c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    names.push_back(name);
    // Counted while listing: a directory of millions of files is refused without holding them.
    check_file_count(files.size() + names.size());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) files.push_back(dir + "/" + name);
}

// The verdict files the arguments name, in order. Throws InvalidInput for an argument that is
// neither a regular file nor a directory, and for too many files or none.
std::vector<std::string> verdict_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    struct stat info {};
    if (::stat(input.c_str(), &info) != 0) {
      throw InvalidInput(printable(input) + ": " + std::strerror(errno));
    }
    if (S_ISDIR(info.st_mode)) {
      add_directory(input, files);
    } else if (S_ISREG(info.st_mode)) {
      files.push_back(input);
      check_file_count(files.size());
    } else {
      throw InvalidInput(printable(input) + ": neither a regular file nor a directory");
    }
  }
  if (files.empty()) throw InvalidInput("no verdict files: the directories hold no *.json file");
  return files;
}

std::size_t figure_count(const BaselineLimits& limits) {
  std::size_t count = 0;
  for (const BaselineGroup& group : limits.groups) count += group.figures.size();
  return count;
}

}  // namespace

CommandResult baseline_command(const Invocation& inv) {
  const BaselineArgs& args = inv.baseline;
  const bool file_to_stdout = args.out_path == "-";
  FILE* summary_stream = file_to_stdout ? stderr : stdout;

  // Every file is read before anything is written: one bad file writes nothing (exit 2).
  const std::vector<std::string> files = verdict_files(args.inputs);
  CheckRegistry registry;
  register_builtin_checks(registry);
  BaselineLearner learner(registry.figure_catalogue());
  for (const std::string& path : files) learner.add(path, load_verdict_file(path));

  LearnOptions options;
  options.min_nodes = args.min_nodes;
  options.drop = args.drop_percent / 100;
  BaselineLearning learning = learner.learn(options);
  learning.limits.learned_at = utc_iso8601(std::chrono::system_clock::now());

  const std::string summary = baseline_summary(learning);
  std::fwrite(summary.data(), 1, summary.size(), summary_stream);
  if (!learning.learned_any()) {
    std::fprintf(summary_stream, "\nNothing learned: %s not written.\n",
                 file_to_stdout ? "no thresholds file" : args.out_path.c_str());
    std::fflush(summary_stream);
    return {kExitUnhealthy, false};
  }

  nlohmann::ordered_json document;
  document["schema"] = std::string(kThresholdsSchema);
  document["baseline"] = baseline_to_json(learning.limits);
  const std::string text = document.dump(2) + "\n";
  const std::string what = count_of(learning.limits.groups.size(), "group", "groups") + ", " +
                           count_of(figure_count(learning.limits), "figure limit", "figure limits");
  if (file_to_stdout) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0) {
      std::fprintf(stderr, "preflight: cannot write the thresholds file to stdout: %s\n",
                   std::strerror(errno));
      return {kExitInternalError, false};
    }
    std::fprintf(stderr, "\nWrote the thresholds file to stdout: %s.\n", what.c_str());
    return {kExitHealthy, false};
  }
  try {
    write_file_atomically(args.out_path, text);
  } catch (const std::exception& e) {
    std::fflush(summary_stream);
    std::fprintf(stderr, "preflight: cannot write the thresholds file: %s\n", e.what());
    return {kExitInternalError, false};
  }
  std::fprintf(summary_stream, "\nWrote %s: %s.\n", args.out_path.c_str(), what.c_str());
  std::fflush(summary_stream);
  return {kExitHealthy, false};
}

}  // namespace preflight
