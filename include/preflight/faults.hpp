#pragma once
// Fault injection: --inject-fault KIND[:VALUE]@TARGET. Each check declares the kinds it
// understands (with the finding codes each one must produce); the runner adds its own
// (hang@check=NAME). Parsing checks the spec against those declarations, so an unknown kind,
// a target type the kind does not take or a value out of range is bad input (exit 2).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight {

enum class TargetType { gpu, nic, node, pair, check };
std::string_view to_string(TargetType type);

struct FaultTarget {
  TargetType type = TargetType::node;
  int index = -1;    // gpu=I, node=R, pair=I-J (first)
  int index2 = -1;   // pair=I-J (second)
  std::string name;  // nic=NAME, check=NAME

  // The entity name findings use for this target: gpu3, mlx5_0, node2, gpu0-gpu1, or the
  // check name.
  std::string entity() const;
};

enum class FaultValue { none, optional_number, number, word };

struct FaultKindSpec {
  std::string kind;                 // e.g. "mig-on", "hang"
  std::vector<TargetType> targets;  // target types the kind accepts
  FaultValue value = FaultValue::none;
  double min_value = 0.0;  // range for number values
  double max_value = 0.0;
  bool integer = false;            // number values must be whole
  std::vector<std::string> words;  // allowed values for FaultValue::word
  std::string description;         // one line for `preflight list`
  std::vector<std::string> codes;  // finding codes this fault must produce
};

struct InjectedFault {
  std::string spec;  // as given on the command line
  std::string kind;
  std::optional<double> number;
  std::string word;
  FaultTarget target;
  // `,from-pass=N` after the target: in a repeated run the fault appears in pass N and stays,
  // as a GPU that degrades under a long burn-in would.
  int from_pass = 1;
};

// KIND[:VALUE]@TARGET[,from-pass=N]. Throws InvalidInput with a message naming the spec and what
// is wrong.
InjectedFault parse_fault(std::string_view spec, const std::vector<FaultKindSpec>& kinds);

class FaultPlan {
 public:
  FaultPlan() = default;
  explicit FaultPlan(std::vector<InjectedFault> faults) : faults_(std::move(faults)) {}

  bool empty() const { return faults_.empty(); }
  const std::vector<InjectedFault>& all() const { return faults_; }

  // Faults of this kind, in command-line order.
  std::vector<const InjectedFault*> of_kind(std::string_view kind) const;
  // The fault of this kind aimed at this GPU, if any (the last one wins).
  const InjectedFault* for_gpu(std::string_view kind, int gpu_index) const;
  const InjectedFault* for_check(std::string_view kind, std::string_view check) const;
  // The faults active in pass `pass` (from 1) of a repeated run.
  FaultPlan in_pass(int pass) const;

 private:
  std::vector<InjectedFault> faults_;
};

}  // namespace preflight
