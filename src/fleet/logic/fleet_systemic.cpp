#include "fleet/logic/fleet_systemic.hpp"

#include <algorithm>
#include <map>

#include "fleet/logic/fleet_verdict.hpp"

namespace preflight {

namespace {

void add_once(std::vector<std::string>& causes, std::string cause) {
  if (std::find(causes.begin(), causes.end(), cause) == causes.end()) {
    causes.push_back(std::move(cause));
  }
}

bool failed_outcome(const std::string& outcome) {
  return outcome != "ok" && outcome != "slow" && !outcome.empty();
}

}  // namespace

std::vector<std::string> node_causes(const FleetNode& node, const std::vector<FleetRound>& rounds) {
  std::vector<std::string> causes;
  if (node.verdict == "healthy") return causes;
  const std::string& local = node.local.verdict;
  if (local == "missing") {
    add_once(causes, "no local result");
  } else if (local == "fail" || local == "error") {
    for (const std::string& finding : node.local.findings) {
      add_once(causes, finding.substr(0, finding.find('@')));
    }
    if (causes.empty()) add_once(causes, "local " + local);
  }
  for (const FleetRound& round : rounds) {
    for (const FleetGroupRecord& g : round.groups) {
      if (!failed_outcome(g.outcome)) continue;
      if (std::find(g.ranks.begin(), g.ranks.end(), node.rank) == g.ranks.end()) continue;
      add_once(causes, "all-gather " + g.outcome);
    }
  }
  if (node.verdict == "straggler" || node.verdict == "ambiguous") add_once(causes, node.verdict);
  return causes;
}

std::vector<SystemicCause> systemic_causes(const std::vector<FleetNode>& nodes,
                                           const std::vector<FleetRound>& rounds,
                                           double max_share) {
  std::map<std::string, int> count;
  for (const FleetNode& n : nodes) {
    for (const std::string& cause : node_causes(n, rounds)) ++count[cause];
  }
  std::vector<SystemicCause> out;
  const double fleet = static_cast<double>(std::max<std::size_t>(nodes.size(), 1));
  for (const auto& [cause, n] : count) {
    const double share = n / fleet;
    if (n >= kSystemicMinNodes && share > max_share) out.push_back({cause, n, share});
  }
  std::stable_sort(out.begin(), out.end(), [](const SystemicCause& a, const SystemicCause& b) {
    return a.nodes > b.nodes;
  });
  return out;
}

}  // namespace preflight
