#include "fleet/logic/fleet_setup.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

FaultKindSpec node_kind(std::string kind, FaultValue value, std::string description) {
  FaultKindSpec k;
  k.kind = std::move(kind);
  k.targets = {TargetType::node};
  k.value = value;
  if (value == FaultValue::number) {
    k.min_value = 0.05;
    k.max_value = 0.99;
  }
  k.description = std::move(description);
  return k;
}

FaultKindSpec word_kind(std::string kind, std::string description) {
  FaultKindSpec k = node_kind(std::move(kind), FaultValue::word, std::move(description));
  k.words = {"local", "report"};
  return k;
}

// A launch that eats the time (a resolver outage makes every rank's MPI start-up wait): the
// rank pauses SECONDS before MPI_Init, and MPI_Init holds the others until it arrives.
FaultKindSpec launch_kind() {
  FaultKindSpec k = node_kind("launch-slow", FaultValue::number,
                              "the node pauses SECONDS before MPI starts, so the fleet's launch "
                              "takes that long (a slow name service or launcher)");
  k.min_value = 1;
  k.max_value = 600;
  return k;
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

}  // namespace

std::vector<FaultKindSpec> fleet_fault_kinds() {
  return {
      node_kind("allgather-corrupt", FaultValue::none,
                "the node's contribution to its group's all-gathers is changed before sending"),
      node_kind("allgather-hang", FaultValue::none,
                "the node never takes part in its group's all-gathers (the group times out)"),
      node_kind("allgather-slow", FaultValue::number,
                "the node reports each timed all-gather iteration at 1/FACTOR of its own "
                "unpaced time and then pauses for the difference, so its groups run at FACTOR "
                "of their speed"),
      node_kind("local-fail", FaultValue::none,
                "the node's local checks report a failure, so it is kept out of the rounds"),
      // Hostile and broken peers (docs/fault-injection.md#fleet-kinds): what rank 0 must
      // survive from another rank without crashing, hanging or believing it.
      word_kind("peer-malformed",
                "the node sends rank 0 a malformed message instead of its local report (local: "
                "one claiming another rank's number) or of its round report (report: not JSON)"),
      word_kind("peer-oversized",
                "the node sends rank 0 a message 16 times the protocol's size limit instead of "
                "its local report (local) or of its round report (report)"),
      node_kind("peer-freeze", FaultValue::none,
                "the node stops itself (SIGSTOP) when its first round starts, after its local "
                "report"),
      node_kind("peer-die", FaultValue::none,
                "the node kills itself (SIGKILL) when its first round starts, after its local "
                "report"),
      launch_kind(),
  };
}

std::vector<InjectedFault> parse_fleet_faults(const std::vector<std::string>& specs,
                                              int world_size) {
  std::vector<InjectedFault> out;
  const auto kinds = fleet_fault_kinds();
  for (const auto& spec : specs) {
    InjectedFault f = parse_fault(spec, kinds);
    if (f.from_pass != 1) {
      throw InvalidInput("--inject-fault '" + spec +
                         "': from-pass applies to repeated runs of 'preflight run', not to fleet");
    }
    if (f.target.index < 0 || f.target.index >= world_size) {
      throw InvalidInput("--inject-fault '" + spec + "': node " + std::to_string(f.target.index) +
                         " is not in this fleet of " + std::to_string(world_size) + " ranks (0.." +
                         std::to_string(world_size - 1) + ")");
    }
    // Rank 0 is the one that must survive the others; it sends itself nothing to garble.
    if (f.kind.rfind("peer-", 0) == 0 && f.target.index == 0) {
      throw InvalidInput("--inject-fault '" + spec +
                         "': rank 0 coordinates the fleet; the peer-* drills apply to ranks 1.." +
                         std::to_string(world_size - 1));
    }
    out.push_back(std::move(f));
  }
  return out;
}

NodeFaults faults_for_rank(const std::vector<InjectedFault>& faults, int rank) {
  NodeFaults out;
  for (const auto& f : faults) {
    if (f.target.index != rank) continue;
    out.specs.push_back(f.spec);
    if (f.kind == "allgather-corrupt") out.corrupt = true;
    if (f.kind == "allgather-hang") out.hang = true;
    if (f.kind == "allgather-slow") out.slow_factor = std::min(out.slow_factor, *f.number);
    if (f.kind == "local-fail") out.local_fail = true;
    if (f.kind == "peer-malformed" || f.kind == "peer-oversized") {
      const PeerMessage sent =
          f.kind == "peer-malformed" ? PeerMessage::malformed : PeerMessage::oversized;
      (f.word == "local" ? out.local_message : out.report_message) = sent;
    }
    if (f.kind == "peer-freeze") out.freeze = true;
    if (f.kind == "peer-die") out.die = true;
    if (f.kind == "launch-slow") out.launch_delay_s = std::max(out.launch_delay_s, *f.number);
  }
  return out;
}

std::vector<std::size_t> parse_fleet_sizes(const std::string& text) {
  std::vector<std::size_t> out;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const std::string t = trim(item);
    const auto bad = [&](const std::string& why) {
      return InvalidInput("--sizes: '" + t + "' " + why);
    };
    if (t.empty()) throw InvalidInput("--sizes: empty item in '" + text + "'");
    std::size_t digits = 0;
    while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) ++digits;
    if (digits == 0 || digits > 12) throw bad("is not a size such as 64K, 1M or 1048576");
    double value = std::stod(t.substr(0, digits));
    const std::string unit = t.substr(digits);
    if (unit == "K" || unit == "k") {
      value *= 1024.0;
    } else if (unit == "M" || unit == "m") {
      value *= 1024.0 * 1024.0;
    } else if (unit == "G" || unit == "g") {
      value *= 1024.0 * 1024.0 * 1024.0;
    } else if (!unit.empty()) {
      throw bad("has an unknown unit (use K, M or G)");
    }
    if (value < 8 || value > 4.0 * 1024 * 1024 * 1024) throw bad("is outside 8 bytes .. 4G");
    const auto bytes = static_cast<std::size_t>(value);
    if (bytes % 8 != 0) throw bad("is not a multiple of 8 bytes");
    out.push_back(bytes);
  }
  if (out.empty()) throw InvalidInput("--sizes: no size given");
  if (out.size() > 8) throw InvalidInput("--sizes: at most 8 sizes");
  return out;
}

std::map<std::string, std::string> parse_topology(const std::string& text) {
  std::map<std::string, std::string> out;
  std::stringstream stream(text);
  std::string line;
  int number = 0;
  while (std::getline(stream, line)) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::stringstream words(line);
    std::string host;
    std::string sw;
    std::string extra;
    if (!(words >> host)) continue;
    if (!(words >> sw) || (words >> extra)) {
      throw InvalidInput("--topology: line " + std::to_string(number) +
                         ": expected 'HOST SWITCH', got '" + trim(line) + "'");
    }
    const auto [it, inserted] = out.emplace(host, sw);
    if (!inserted && it->second != sw) {
      throw InvalidInput("--topology: line " + std::to_string(number) + ": host '" + host +
                         "' is already on switch '" + it->second + "'");
    }
  }
  if (out.empty()) throw InvalidInput("--topology: the file names no host");
  return out;
}

std::map<std::string, std::string> read_topology_file(const std::string& path) {
  try {
    return parse_topology(read_bounded_file(path, kMaxTopologyBytes));
  } catch (const InvalidInput& e) {
    // The bounded reader names the file; parse_topology names the flag and the line.
    const std::string what = e.what();
    if (what.rfind("--topology", 0) == 0) throw;
    throw InvalidInput("--topology: " + what);
  }
}

std::vector<std::string> switches_of(const std::vector<std::string>& hosts,
                                     const std::map<std::string, std::string>& topology) {
  std::vector<std::string> out;
  for (const auto& host : hosts) {
    const auto it = topology.find(host);
    // A switch of its own: an unknown host is never taken to share a switch with another.
    out.push_back(it != topology.end() ? it->second : "(unlisted) " + host);
  }
  return out;
}

namespace {

double report_slack_s(double group_s) {
  return 2.0 + 0.1 * group_s;
}
// Local results may reach rank 0 a little after the local deadline.
constexpr double kLocalCollectSlack_s = 5.0;
constexpr double kVerdictMargin_s = 5.0;
// The shortest group timeout a given --timeout may size.
constexpr double kLeastGroup_s = 0.5;

std::string seconds_text(double s) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << s << " s";
  return out.str();
}

}  // namespace

double least_fleet_timeout_s(double local_s, int round_bound,
                             std::optional<double> group_timeout_s) {
  // A given group timeout needs one round to fit (later ones are skipped, their suspects
  // ambiguous); a sized one is divided among all rounds, each at least kLeastGroup_s.
  const double group = std::max(group_timeout_s.value_or(kLeastGroup_s), kLeastGroup_s);
  const int rounds = group_timeout_s ? 1 : std::max(round_bound, 1);
  return std::ceil(local_s + kLocalCollectSlack_s + rounds * (group + report_slack_s(group)) +
                   kVerdictMargin_s);
}

FleetTiming plan_fleet_timing(double local_s, int round_bound, std::optional<double> timeout_s,
                              std::optional<double> group_timeout_s, double default_group_s) {
  FleetTiming t;
  t.round_bound = std::max(round_bound, 1);
  t.local_s = local_s;
  t.local_collect_s = local_s + kLocalCollectSlack_s;
  t.verdict_margin_s = kVerdictMargin_s;
  if (group_timeout_s) {
    t.group_s = *group_timeout_s;
  } else if (timeout_s) {
    // Sized so that every round fits: (timeout - local - margin) / bound = group + slack.
    const double per_round = (*timeout_s - t.local_collect_s - t.verdict_margin_s) / t.round_bound;
    t.group_s = std::floor((per_round - 2.0) / 1.1 * 10.0) / 10.0;
  } else {
    t.group_s = default_group_s;
  }
  t.report_slack_s = report_slack_s(t.group_s);
  const double needed =
      t.local_collect_s + t.round_bound * (t.group_s + t.report_slack_s) + t.verdict_margin_s;
  if (timeout_s) {
    t.total_s = *timeout_s;
    t.timeout_given = true;
    if (t.group_s < kLeastGroup_s ||
        *timeout_s < t.local_collect_s + t.group_s + t.report_slack_s + t.verdict_margin_s) {
      std::ostringstream why;
      why << "--timeout " << *timeout_s << " s cannot hold the local checks (" << local_s
          << " s) and a round of all-gathers; give at least "
          << least_fleet_timeout_s(local_s, t.round_bound, group_timeout_s) << " s";
      // A given group timeout needs only one round to fit; all of them need more.
      if (group_timeout_s) {
        why << ", or " << std::ceil(needed) << " s for all " << t.round_bound << " rounds";
      }
      throw InvalidInput(why.str());
    }
  } else {
    t.total_s = std::ceil(needed);
  }
  return t;
}

LaunchedTiming plan_after_launch(const FleetTiming& planned, double launch_s,
                                 std::optional<double> group_timeout_s, double default_group_s) {
  LaunchedTiming out{planned, {}};
  launch_s = std::max(launch_s, 0.0);
  out.timing.launch_s = launch_s;
  // Without --timeout the plan is its own sum: the launch only adds to the run's duration.
  if (!planned.timeout_given) return out;
  const double left = planned.total_s - launch_s;
  try {
    out.timing = plan_fleet_timing(planned.local_s, planned.round_bound, left, group_timeout_s,
                                   default_group_s);
    out.timing.launch_s = launch_s;
  } catch (const InvalidInput&) {
    std::ostringstream why;
    // Short enough to stay whole as a drain reason (200 characters) after "injected fault: ".
    why << "launch took " << seconds_text(launch_s) << " of --timeout "
        << seconds_text(planned.total_s) << "; the " << seconds_text(std::max(left, 0.0))
        << " left is below the "
        << least_fleet_timeout_s(planned.local_s, planned.round_bound, group_timeout_s)
        << " s the local checks and rounds need; no node judged (slow MPI start-up: launcher or "
           "name resolution)";
    out.launch_problem = why.str();
  }
  return out;
}

}  // namespace preflight
