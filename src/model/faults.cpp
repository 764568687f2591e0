#include "preflight/faults.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "preflight/errors.hpp"

namespace preflight {

std::string_view to_string(TargetType type) {
  switch (type) {
    case TargetType::gpu:
      return "gpu";
    case TargetType::nic:
      return "nic";
    case TargetType::node:
      return "node";
    case TargetType::pair:
      return "pair";
    case TargetType::check:
      return "check";
  }
  return "node";
}

std::string FaultTarget::entity() const {
  switch (type) {
    case TargetType::gpu:
      return "gpu" + std::to_string(index);
    case TargetType::nic:
      return name;
    case TargetType::node:
      return "node" + std::to_string(index);
    case TargetType::pair:
      return "gpu" + std::to_string(index) + "-gpu" + std::to_string(index2);
    case TargetType::check:
      return name;
  }
  return "node";
}

namespace {

[[noreturn]] void bad(std::string_view spec, const std::string& problem) {
  throw InvalidInput("--inject-fault '" + std::string(spec) + "': " + problem);
}

bool all_of(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

bool is_kind_char(char c) {
  return std::islower(static_cast<unsigned char>(c)) ||
         std::isdigit(static_cast<unsigned char>(c)) || c == '-';
}
bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}
bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

int parse_index(std::string_view spec, std::string_view text, std::string_view what) {
  if (!all_of(text, is_digit) || text.size() > 6) {
    bad(spec, std::string(what) + " must be a non-negative whole number, got '" +
                  std::string(text) + "'");
  }
  return std::atoi(std::string(text).c_str());
}

std::optional<TargetType> target_type_from(std::string_view name) {
  for (auto t :
       {TargetType::gpu, TargetType::nic, TargetType::node, TargetType::pair, TargetType::check}) {
    if (to_string(t) == name) return t;
  }
  return std::nullopt;
}

FaultTarget parse_target(std::string_view spec, std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos) {
    bad(spec, "target '" + std::string(text) +
                  "' must be TYPE=VALUE (gpu=I, nic=NAME, node=R, pair=I-J, check=NAME)");
  }
  const auto type_name = text.substr(0, eq);
  const auto value = text.substr(eq + 1);
  const auto type = target_type_from(type_name);
  if (!type) {
    bad(spec, "unknown target type '" + std::string(type_name) +
                  "' (known: gpu, nic, node, pair, check)");
  }
  FaultTarget target;
  target.type = *type;
  switch (*type) {
    case TargetType::gpu:
      target.index = parse_index(spec, value, "gpu index");
      break;
    case TargetType::node:
      target.index = parse_index(spec, value, "node rank");
      break;
    case TargetType::pair: {
      const auto dash = value.find('-');
      if (dash == std::string_view::npos) bad(spec, "pair target must be pair=I-J");
      target.index = parse_index(spec, value.substr(0, dash), "pair index");
      target.index2 = parse_index(spec, value.substr(dash + 1), "pair index");
      if (target.index == target.index2) bad(spec, "a pair needs two different GPUs");
      break;
    }
    case TargetType::nic:
    case TargetType::check:
      if (!all_of(value, is_name_char) || value.size() > 64) {
        bad(spec, std::string(type_name) + " name '" + std::string(value) +
                      "' must be 1-64 letters, digits, '_', '-' or '.'");
      }
      target.name = std::string(value);
      break;
  }
  return target;
}

std::string join_kinds(const std::vector<FaultKindSpec>& kinds) {
  std::string out;
  for (const auto& k : kinds) {
    if (!out.empty()) out += ", ";
    out += k.kind;
  }
  return out;
}

std::string join_targets(const std::vector<TargetType>& targets) {
  std::string out;
  for (auto t : targets) {
    if (!out.empty()) out += " or ";
    out += to_string(t);
  }
  return out;
}

std::string six_digit_number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

void parse_value(std::string_view spec, const FaultKindSpec& kind, std::string_view value,
                 bool has_value, InjectedFault& fault) {
  switch (kind.value) {
    case FaultValue::none:
      if (has_value) bad(spec, "kind '" + kind.kind + "' takes no value");
      return;
    case FaultValue::optional_number:
      if (!has_value) return;
      [[fallthrough]];
    case FaultValue::number: {
      if (!has_value || value.empty()) bad(spec, "kind '" + kind.kind + "' needs a value");
      const std::string text(value);
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (end != text.c_str() + text.size() || !std::isfinite(v)) {
        bad(spec, "value '" + text + "' is not a number");
      }
      if (v < kind.min_value || v > kind.max_value) {
        bad(spec, "value " + text + " is outside " + six_digit_number(kind.min_value) + ".." +
                      six_digit_number(kind.max_value));
      }
      if (kind.integer && v != std::floor(v)) bad(spec, "value " + text + " is not a whole number");
      fault.number = v;
      return;
    }
    case FaultValue::word: {
      if (!has_value || value.empty()) bad(spec, "kind '" + kind.kind + "' needs a value");
      for (const auto& w : kind.words) {
        if (w == value) {
          fault.word = w;
          return;
        }
      }
      std::string known;
      for (const auto& w : kind.words) known += (known.empty() ? "" : ", ") + w;
      bad(spec, "value '" + std::string(value) + "' is not one of: " + known);
    }
  }
}

}  // namespace

InjectedFault parse_fault(std::string_view spec, const std::vector<FaultKindSpec>& kinds) {
  if (spec.empty()) bad(spec, "empty fault spec; expected KIND[:VALUE]@TARGET");
  if (spec.size() > 200) bad(spec.substr(0, 40), "fault spec is longer than 200 characters");
  const auto at = spec.find('@');
  if (at == std::string_view::npos || spec.find('@', at + 1) != std::string_view::npos) {
    bad(spec, "expected KIND[:VALUE]@TARGET with exactly one '@'");
  }
  const auto head = spec.substr(0, at);
  const auto colon = head.find(':');
  const auto kind_name = head.substr(0, colon);
  const bool has_value = colon != std::string_view::npos;
  const auto value = has_value ? head.substr(colon + 1) : std::string_view{};

  if (!all_of(kind_name, is_kind_char))
    bad(spec, "malformed kind '" + std::string(kind_name) + "'");
  const FaultKindSpec* kind = nullptr;
  for (const auto& k : kinds) {
    if (k.kind == kind_name) kind = &k;
  }
  if (kind == nullptr) {
    bad(spec, "unknown kind '" + std::string(kind_name) + "' (known: " + join_kinds(kinds) + ")");
  }

  InjectedFault fault;
  fault.spec = std::string(spec);
  fault.kind = kind->kind;
  parse_value(spec, *kind, value, has_value, fault);
  std::string_view target_text = spec.substr(at + 1);
  if (const auto comma = target_text.find(','); comma != std::string_view::npos) {
    const std::string_view option = target_text.substr(comma + 1);
    constexpr std::string_view kFromPass = "from-pass=";
    if (option.substr(0, kFromPass.size()) != kFromPass) {
      bad(spec, "unknown qualifier '" + std::string(option) + "' (known: from-pass=N)");
    }
    const std::string number(option.substr(kFromPass.size()));
    const bool digits = !number.empty() && number.size() <= 7 &&
                        number.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(number) < 1) {
      bad(spec, "from-pass must be a pass number from 1, got '" + number + "'");
    }
    fault.from_pass = std::stoi(number);
    target_text = target_text.substr(0, comma);
  }
  fault.target = parse_target(spec, target_text);
  bool allowed = false;
  for (auto t : kind->targets) allowed = allowed || t == fault.target.type;
  if (!allowed) {
    bad(spec, "kind '" + kind->kind + "' takes a " + join_targets(kind->targets) + " target, not " +
                  std::string(to_string(fault.target.type)));
  }
  return fault;
}

std::vector<const InjectedFault*> FaultPlan::of_kind(std::string_view kind) const {
  std::vector<const InjectedFault*> out;
  for (const auto& f : faults_) {
    if (f.kind == kind) out.push_back(&f);
  }
  return out;
}

const InjectedFault* FaultPlan::for_gpu(std::string_view kind, int gpu_index) const {
  const InjectedFault* found = nullptr;
  for (const auto& f : faults_) {
    if (f.kind == kind && f.target.type == TargetType::gpu && f.target.index == gpu_index) {
      found = &f;
    }
  }
  return found;
}

FaultPlan FaultPlan::in_pass(int pass) const {
  std::vector<InjectedFault> active;
  for (const auto& f : faults_) {
    if (f.from_pass <= pass) active.push_back(f);
  }
  return FaultPlan(std::move(active));
}

const InjectedFault* FaultPlan::for_check(std::string_view kind, std::string_view check) const {
  const InjectedFault* found = nullptr;
  for (const auto& f : faults_) {
    if (f.kind == kind && f.target.type == TargetType::check && f.target.name == check) {
      found = &f;
    }
  }
  return found;
}

}  // namespace preflight
