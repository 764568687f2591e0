// `preflight baseline`: site limits learned from many nodes' verdicts (docs/baseline.md).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

// The verdict files to read, each file once: a file named twice (given itself and inside a
// directory given too, or through two links) would count its run twice, and its node's median
// would lean on it.
struct VerdictFiles {
  std::vector<std::string> paths;
  std::set<std::pair<dev_t, ino_t>> seen;
  std::size_t repeated = 0;  // names of a file already listed, passed over

  void add(const std::string& path, const struct stat& info) {
    if (!seen.emplace(info.st_dev, info.st_ino).second) {
      ++repeated;
      return;
    }
    paths.push_back(path);
    check_file_count(paths.size());
  }
};

// The regular *.json files directly inside `dir`, sorted by name; anything else there (a
// subdirectory, a FIFO, notes) is not a verdict and is passed over.
void add_directory(const std::string& dir, VerdictFiles& files) {
  const std::unique_ptr<DIR, int (*)(DIR*)> stream(::opendir(dir.c_str()), ::closedir);
  if (!stream) {
    throw InvalidInput(printable(dir) + ": cannot read the directory: " + std::strerror(errno));
  }
  std::vector<std::pair<std::string, struct stat>> entries;
  while (const dirent* entry = ::readdir(stream.get())) {
    const std::string name = entry->d_name;
    if (!has_json_suffix(name)) continue;
    struct stat info {};
    if (::stat((dir + "/" + name).c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
    entries.emplace_back(name, info);
    // Counted while listing: a directory of millions of files is refused without holding them.
    check_file_count(files.paths.size() + entries.size());
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [name, info] : entries) files.add(dir + "/" + name, info);
}

// The verdict files the arguments name, in order, each once. Throws InvalidInput for an
// argument that is neither a regular file nor a directory, and for too many files or none.
VerdictFiles verdict_files(const std::vector<std::string>& inputs) {
  VerdictFiles files;
  for (const std::string& input : inputs) {
    struct stat info {};
    if (::stat(input.c_str(), &info) != 0) {
      throw InvalidInput(printable(input) + ": " + std::strerror(errno));
    }
    if (S_ISDIR(info.st_mode)) {
      add_directory(input, files);
    } else if (S_ISREG(info.st_mode)) {
      files.add(input, info);
    } else {
      throw InvalidInput(printable(input) + ": neither a regular file nor a directory");
    }
  }
  if (files.paths.empty()) {
    throw InvalidInput("no verdict files: the directories hold no *.json file");
  }
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
  const VerdictFiles files = verdict_files(args.inputs);
  CheckRegistry registry;
  register_builtin_checks(registry);
  BaselineLearner learner(registry.figure_catalogue());
  for (const std::string& path : files.paths) learner.add(path, load_verdict_file(path));

  LearnOptions options;
  options.min_nodes = args.min_nodes;
  options.drop = args.drop_percent / 100;
  BaselineLearning learning = learner.learn(options);
  learning.limits.learned_at = utc_iso8601(std::chrono::system_clock::now());

  const std::string summary = baseline_summary(learning);
  std::fwrite(summary.data(), 1, summary.size(), summary_stream);
  if (files.repeated > 0) {
    std::fprintf(summary_stream, "\n%s named more than once: read once.\n",
                 count_of(files.repeated, "verdict file was", "verdict files were").c_str());
  }
  if (!learning.learned_any()) {
    std::fprintf(summary_stream, "\nNothing learned: %s not written.\n",
                 file_to_stdout ? "no thresholds file" : args.out_path.c_str());
    std::fflush(summary_stream);
    return {kExitUnhealthy, false};
  }

  std::string text;
  try {
    text = baseline_thresholds_text(learning.limits);
  } catch (const std::length_error& e) {
    // run and judge would refuse it: nothing is written that cannot be used.
    std::fflush(summary_stream);
    std::fprintf(stderr, "preflight: %s; nothing written\n", e.what());
    return {kExitInternalError, false};
  }
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
