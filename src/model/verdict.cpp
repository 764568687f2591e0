#include "preflight/verdict.hpp"

#include <algorithm>
#include <cctype>

namespace preflight {

std::string_view to_string(Status status) {
  switch (status) {
    case Status::pass:
      return "pass";
    case Status::warn:
      return "warn";
    case Status::fail:
      return "fail";
    case Status::skip:
      return "skip";
    case Status::error:
      return "error";
  }
  return "error";
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::info:
      return "info";
    case Severity::warn:
      return "warn";
    case Severity::fail:
      return "fail";
  }
  return "fail";
}

std::string_view to_string(Action action) {
  switch (action) {
    case Action::none:
      return "none";
    case Action::restart_job:
      return "restart_job";
    case Action::reset_gpu:
      return "reset_gpu";
    case Action::reboot:
      return "reboot";
    case Action::service:
      return "service";
  }
  return "service";
}

std::optional<Action> parse_action(std::string_view text) {
  for (Action a : kAllActions) {
    if (text == to_string(a)) return a;
  }
  return std::nullopt;
}

Finding& Finding::measured(double measured_value, std::string value_unit,
                           std::optional<double> limit) {
  value = measured_value;
  unit = std::move(value_unit);
  threshold = limit;
  return *this;
}

Status status_from_findings(const std::vector<Finding>& findings) {
  Status status = Status::pass;
  bool any_fail = false;
  bool only_tool_blamed = true;  // every fail finding blames the tool's installation
  for (const auto& f : findings) {
    if (f.severity == Severity::fail) {
      any_fail = true;
      if (f.blame != Blame::tool) only_tool_blamed = false;
    } else if (f.severity == Severity::warn) {
      status = Status::warn;
    }
  }
  if (any_fail) return only_tool_blamed ? Status::error : Status::fail;
  return status;
}

std::string sanitize_reason(std::string_view text) {
  std::string out;
  out.reserve(std::min(text.size(), kMaxReasonLength));
  bool last_space = true;  // also trims leading blanks
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    // Slurm passes the reason through scontrol and shells around it: keep printable ASCII
    // without the characters that quote or escape.
    const bool printable = u >= 0x20 && u < 0x7f && c != '"' && c != '\'' && c != '`' && c != '\\';
    const char keep = printable ? c : ' ';
    if (keep == ' ') {
      if (last_space) continue;
      last_space = true;
    } else {
      last_space = false;
    }
    out.push_back(keep);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > kMaxReasonLength) {
    out.resize(kMaxReasonLength - 3);
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += "...";
  }
  return out;
}

namespace {

struct Cause {
  std::string check;  // empty for run-level findings
  const Finding* finding = nullptr;
  std::string text;  // used when there is no finding (a check with status error)
};

std::string describe(const Cause& cause) {
  std::string s;
  if (!cause.check.empty()) s += cause.check + ": ";
  if (cause.finding == nullptr) return s + cause.text;
  const Finding& f = *cause.finding;
  if (!f.entity.empty() && f.entity != "node") s += f.entity + " ";
  s += f.code;
  if (!f.message.empty()) s += " " + f.message;
  return s;
}

std::string build_reason(const std::vector<Cause>& causes, bool injected,
                         const std::string& pass_prefix) {
  if (causes.empty()) return {};
  std::string reason = injected ? "injected fault: " : "";
  reason += pass_prefix;
  reason += describe(causes.front());
  if (causes.size() > 1) {
    const std::string more = " (+" + std::to_string(causes.size() - 1) + " more)";
    // Keep the count visible even when the first cause is long.
    std::string head = sanitize_reason(reason);
    if (head.size() + more.size() > kMaxReasonLength) {
      head.resize(kMaxReasonLength - more.size() - 3);
      head += "...";
    }
    return sanitize_reason(head + more);
  }
  return sanitize_reason(reason);
}

}  // namespace

Action node_action(const Verdict& verdict) {
  Action heaviest = Action::none;
  const auto weigh = [&heaviest](const std::vector<Finding>& findings) {
    for (const Finding& f : findings) {
      if (f.severity != Severity::info) heaviest = std::max(heaviest, f.action);
    }
  };
  weigh(verdict.findings);
  for (const CheckResult& check : verdict.checks) weigh(check.findings);
  return heaviest;
}

void aggregate(Verdict& verdict, bool strict) {
  std::vector<Cause> fails;
  std::vector<Cause> warns;
  bool only_tool_errors = true;

  for (const auto& f : verdict.findings) {
    if (f.severity == Severity::fail) {
      fails.push_back({"", &f, {}});
      only_tool_errors = false;
    } else if (f.severity == Severity::warn) {
      warns.push_back({"", &f, {}});
    }
  }
  for (const auto& check : verdict.checks) {
    if (check.status == Status::fail) only_tool_errors = false;
    if (check.status == Status::fail || check.status == Status::error) {
      bool any = false;
      for (const auto& f : check.findings) {
        if (f.severity == Severity::fail) {
          fails.push_back({check.name, &f, {}});
          any = true;
        }
      }
      if (!any) fails.push_back({check.name, nullptr, std::string(to_string(check.status))});
    } else if (check.status == Status::warn) {
      for (const auto& f : check.findings) {
        if (f.severity == Severity::warn) warns.push_back({check.name, &f, {}});
      }
    }
  }

  const bool injected = !verdict.injected_faults.empty();
  // Which pass of a burn-in the causes come from: an operator needs "pass 7/24", not pass 1.
  const std::string pass_prefix = verdict.burnin
                                      ? "pass " + std::to_string(verdict.burnin->reported_pass) +
                                            "/" + std::to_string(verdict.burnin->passes_run) + ": "
                                      : std::string();
  if (!fails.empty()) {
    verdict.verdict = Status::fail;
    verdict.exit_code = only_tool_errors ? kExitInternalError : kExitUnhealthy;
    verdict.reason = build_reason(fails, injected, pass_prefix);
  } else if (!warns.empty()) {
    verdict.verdict = Status::warn;
    verdict.exit_code = strict ? kExitUnhealthy : kExitHealthy;
    verdict.reason = build_reason(warns, injected, pass_prefix);
  } else {
    verdict.verdict = Status::pass;
    verdict.exit_code = kExitHealthy;
    verdict.reason.clear();
  }
  verdict.action = node_action(verdict);
}

}  // namespace preflight
