#pragma once
// A check is a class registered in one CheckRegistry. It says whether it can run here
// (skip_reason) and then runs, producing data (CheckResult); reporters render it. The CLI and
// the runner know no check by name.
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/faults.hpp"
#include "preflight/gpu_backend.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

enum class Profile { quick = 0, standard = 1, burnin = 2 };
inline constexpr std::array<Profile, 3> kAllProfiles = {Profile::quick, Profile::standard,
                                                        Profile::burnin};
std::string_view to_string(Profile profile);
std::optional<Profile> parse_profile(std::string_view text);
std::string_view describe(Profile profile);

struct CheckInfo {
  std::string name;
  std::string description;  // one line: what it runs
  bool needs_gpu = true;    // skipped when the node has no GPU
  bool required = false;    // part of every run, whatever --checks says (inventory)
  // Time budget per profile; nullopt: the check is not part of that profile (it still runs
  // with --checks, under its standard budget).
  std::array<std::optional<std::chrono::seconds>, 3> budget;
  std::vector<FaultKindSpec> fault_kinds;

  std::optional<std::chrono::seconds> budget_for(Profile p) const {
    return budget[static_cast<std::size_t>(p)];
  }
};

// What the node is expected to have (from the command line).
struct NodeExpectations {
  std::optional<int> gpus;  // --expect-gpus; nullopt: at least one
};

// Everything a check may read while it runs. The runner owns it; a check that overran its
// deadline and was abandoned still holds a valid reference (the runner never frees it).
struct CheckContext {
  Profile profile = Profile::quick;
  NodeExpectations expect;
  const Thresholds* thresholds = nullptr;
  const FaultPlan* faults = nullptr;
  const NodeReading* node = nullptr;  // from discovery
  GpuBackend* gpu = nullptr;
  SteadyClock::time_point deadline;
  std::shared_ptr<std::atomic<bool>> cancel;  // set when the deadline passed or on a signal

  bool cancelled() const { return cancel && cancel->load(); }
  double seconds_left() const {
    return std::chrono::duration<double>(deadline - SteadyClock::now()).count();
  }
};

class Check {
 public:
  virtual ~Check() = default;
  virtual const CheckInfo& info() const = 0;
  // Why this check cannot run on this node; nullopt when it can. The runner already skips
  // checks with needs_gpu on a node without GPUs.
  virtual std::optional<std::string> skip_reason(const CheckContext& ctx) const {
    (void)ctx;
    return std::nullopt;
  }
  // Runs the check. May throw: the runner records the check as status error.
  virtual CheckResult run(CheckContext& ctx) = 0;
};

class CheckRegistry {
 public:
  void add(std::unique_ptr<Check> check);  // throws std::logic_error on a duplicate name
  const Check* find(std::string_view name) const;
  std::vector<const Check*> all() const;  // in registration order
  std::vector<std::string> names() const;
  // The fault kinds of the runner plus those of every registered check.
  std::vector<FaultKindSpec> fault_kinds() const;

 private:
  std::vector<std::unique_ptr<Check>> checks_;
};

// Fault kinds the runner itself implements (hang@check=NAME).
std::vector<FaultKindSpec> runner_fault_kinds();

// Registers every check built into this binary (src/checks/builtin_checks.cpp).
void register_builtin_checks(CheckRegistry& registry);

}  // namespace preflight
