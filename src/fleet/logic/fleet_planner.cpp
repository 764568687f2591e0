// The fleet planner's state machine: rounds, outcomes, conclusions (docs/fleet-planner.md). The
// grouping itself is in fleet_pairing.cpp, the reason texts in fleet_reasons.cpp.
#include "fleet/logic/fleet_planner.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <utility>

#include "fleet/logic/fleet_pairing.hpp"
#include "fleet/logic/fleet_reasons.hpp"
#include "preflight/errors.hpp"

namespace preflight {
namespace {

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

std::string_view to_string(GroupOutcome o) {
  switch (o) {
    case GroupOutcome::ok:
      return "ok";
    case GroupOutcome::fail:
      return "fail";
    case GroupOutcome::corrupt:
      return "corrupt";
    case GroupOutcome::timeout:
      return "timeout";
    case GroupOutcome::slow:
      return "slow";
  }
  return "unknown";
}

std::string_view to_string(NodeConclusion c) {
  switch (c) {
    case NodeConclusion::healthy:
      return "healthy";
    case NodeConclusion::faulty:
      return "faulty";
    case NodeConclusion::straggler:
      return "straggler";
    case NodeConclusion::ambiguous:
      return "ambiguous";
  }
  return "unknown";
}

int fleet_round_bound(int nodes, int group_size) {
  if (nodes < 2) return 0;
  int log2n = 0;
  while ((1LL << log2n) < nodes) ++log2n;
  // Round 1, two rounds to find a first proven pair when round 1 proved nobody, log2(nodes)
  // rounds for the proven set to grow over the suspects, one more when round 1 used larger
  // groups (docs/fleet-planner.md#the-round-bound).
  return 3 + log2n + (group_size > 2 ? 1 : 0);
}

FleetPlanner::FleetPlanner(int nodes, FleetPlannerOptions options)
    : n_(nodes), options_(std::move(options)) {
  if (nodes < 0) throw InvalidInput("fleet planner: node count " + std::to_string(nodes) + " < 0");
  if (options_.group_size < 2) {
    throw InvalidInput("fleet planner: group size " + std::to_string(options_.group_size) +
                       " is below 2 (a group needs a partner)");
  }
  if (!options_.switch_of.empty() && static_cast<int>(options_.switch_of.size()) != nodes) {
    throw InvalidInput("fleet planner: " + std::to_string(options_.switch_of.size()) +
                       " switch names for " + std::to_string(nodes) + " nodes");
  }
  if (options_.max_rounds < 0) {
    throw InvalidInput("fleet planner: max rounds " + std::to_string(options_.max_rounds) + " < 0");
  }
  bound_ =
      options_.max_rounds > 0 ? options_.max_rounds : fleet_round_bound(nodes, options_.group_size);
  nodes_.resize(static_cast<std::size_t>(nodes));
  switch_id_ = fleet_pairing::switch_ids(options_.switch_of);
}

void FleetPlanner::exclude(int node, std::string reason) {
  if (node < 0 || node >= n_) {
    throw std::out_of_range("fleet planner: node " + std::to_string(node) + " outside [0, " +
                            std::to_string(n_) + ")");
  }
  Node& x = nodes_[static_cast<std::size_t>(node)];
  if (x.state == State::excluded) return;  // the first reason stands
  // A node that stops answering is excluded after the round it went silent in was recorded.
  // Its silence, not its partner, explains that round's failure: a suspect convicted there with
  // it as the healthy partner is a suspect again.
  if (x.state == State::good) {
    for (std::size_t gi = last_round_first_group_; gi < groups_.size(); ++gi) {
      const Group& g = groups_[gi];
      if (g.outcome == GroupOutcome::ok || !contains(g.members, node)) continue;
      for (int m : g.members) {
        Node& other = nodes_[static_cast<std::size_t>(m)];
        if (other.convicted_group == static_cast<int>(gi)) {
          other.state = State::suspect;
          other.convicted_group = -1;
        }
      }
    }
  }
  x.state = State::excluded;
  x.reason = std::move(reason);
}

std::optional<RoundPlan> FleetPlanner::next_round() {
  if (pending_) {
    throw std::logic_error("fleet planner: round " + std::to_string(pending_->index) +
                           " was planned but not recorded");
  }
  std::vector<std::vector<int>> plan;
  if (rounds_used_ == 0) {
    std::vector<int> active;
    for (int i = 0; i < n_; ++i) {
      if (nodes_[static_cast<std::size_t>(i)].state != State::excluded) active.push_back(i);
    }
    if (bound_ == 0) return std::nullopt;
    plan = fleet_pairing::first_round(active, options_.group_size, switch_id_);
  } else {
    const bool suspects_left = std::any_of(nodes_.begin(), nodes_.end(), [](const Node& x) {
      return x.state == State::suspect && x.tested;
    });
    if (!suspects_left) return std::nullopt;
    if (rounds_used_ >= bound_) {
      bound_reached_ = true;
      return std::nullopt;
    }
    plan = fleet_pairing::later_round(nodes_, groups_, switch_id_);
  }
  if (plan.empty()) return std::nullopt;
  RoundPlan round;
  round.index = rounds_used_ + 1;
  round.groups.reserve(plan.size());
  for (auto& members : plan) round.groups.push_back(GroupPlan{std::move(members), false});
  if (rounds_used_ > 0 && options_.reference_groups) add_reference_groups(round);
  pending_ = round;
  return round;
}

// The proven nodes idle in this round, in pairs (ascending, the odd one out stays idle); then
// every group by first member, as later_round() orders them.
void FleetPlanner::add_reference_groups(RoundPlan& round) const {
  std::vector<char> busy(static_cast<std::size_t>(n_), 0);
  for (const GroupPlan& g : round.groups) {
    for (int m : g.members) busy[static_cast<std::size_t>(m)] = 1;
  }
  std::vector<int> idle;
  for (int i = 0; i < n_; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (!busy[u] && nodes_[u].state == State::good) idle.push_back(i);
  }
  for (std::size_t i = 0; i + 1 < idle.size(); i += 2) {
    round.groups.push_back(GroupPlan{{idle[i], idle[i + 1]}, true});
  }
  std::sort(round.groups.begin(), round.groups.end(),
            [](const GroupPlan& a, const GroupPlan& b) { return a.members < b.members; });
}

void FleetPlanner::record(const std::vector<GroupReport>& reports) {
  if (!pending_) throw std::logic_error("fleet planner: record() without a planned round");
  const RoundPlan& plan = *pending_;
  if (reports.size() != plan.groups.size()) {
    throw std::logic_error("fleet planner: " + std::to_string(reports.size()) +
                           " reports for the " + std::to_string(plan.groups.size()) +
                           " groups of round " + std::to_string(plan.index));
  }
  // Members of a round are disjoint, so a group is known by its first member.
  std::map<int, std::size_t> by_first;
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    by_first.emplace(plan.groups[i].members.front(), i);
  }
  std::vector<const GroupReport*> matched(plan.groups.size(), nullptr);
  for (const GroupReport& r : reports) {
    std::vector<int> members = r.members;
    std::sort(members.begin(), members.end());
    const auto it = members.empty() ? by_first.end() : by_first.find(members.front());
    if (it == by_first.end() || plan.groups[it->second].members != members ||
        matched[it->second] != nullptr) {
      throw std::logic_error("fleet planner: a report of round " + std::to_string(plan.index) +
                             " names a group that was not planned (or twice)");
    }
    matched[it->second] = &r;
  }
  last_round_first_group_ = groups_.size();
  for (std::size_t i = 0; i < plan.groups.size(); ++i) {
    Group g;
    g.round = plan.index;
    g.members = plan.groups[i].members;
    g.outcome = matched[i]->outcome;
    for (int b : matched[i]->blamed) {
      if (contains(g.members, b) && !contains(g.blamed, b)) g.blamed.push_back(b);
    }
    g.detail = matched[i]->detail;
    g.speed = matched[i]->speed;
    g.groups_compared = matched[i]->groups_compared;
    groups_.push_back(std::move(g));
  }
  // The groups of a round ran at the same time and share no node, so each one is judged by the
  // states from before the round whatever the order.
  for (std::size_t gi = last_round_first_group_; gi < groups_.size(); ++gi) apply(gi);
  convict_by_two_partners();
  ++rounds_used_;
  pending_.reset();
}

void FleetPlanner::apply(std::size_t gi) {
  const Group& g = groups_[gi];
  std::vector<int> suspects;
  int goods = 0;
  bool excluded_member = false;
  for (int m : g.members) {
    Node& x = nodes_[static_cast<std::size_t>(m)];
    x.tested = true;
    if (x.state == State::good) ++goods;
    if (x.state == State::suspect) suspects.push_back(m);
    if (x.state == State::excluded) excluded_member = true;
  }
  if (g.outcome == GroupOutcome::ok) {
    for (int m : suspects) {
      nodes_[static_cast<std::size_t>(m)].state = State::good;
      nodes_[static_cast<std::size_t>(m)].passed_group = static_cast<int>(gi);
    }
    return;
  }
  // Failed or slow. With every other member proven (passed fast with someone), the one suspect
  // left is the cause: faulty for a failure, a straggler for a slow group. Except when every
  // earlier bad group of the suspect of the same kind also held one of these proven partners:
  // one bad link to that partner would explain them all, so it waits for another partner
  // (convict_by_two_partners() then decides). A slow group is one measurement of a figure
  // that fluctuates (a busy host, a congested link): it only makes its suspect one measured
  // again, and convict_by_two_partners() alone names stragglers.
  bool convicts = suspects.size() == 1 && goods > 0 && !excluded_member;
  if (convicts) {
    const Node& x = nodes_[static_cast<std::size_t>(suspects.front())];
    bool earlier_same_kind = false;
    bool all_share = true;
    for (int earlier : x.bad_groups) {
      const Group& e = groups_[static_cast<std::size_t>(earlier)];
      if (is_failure(e.outcome) != is_failure(g.outcome)) continue;
      earlier_same_kind = true;
      const bool shares = std::any_of(g.members.begin(), g.members.end(), [&](int m) {
        return m != suspects.front() && contains(e.members, m);
      });
      if (!shares) all_share = false;
    }
    if (earlier_same_kind && all_share) convicts = false;
    // A straggler needs two slow groups with proven partners that share nothing
    // (convict_by_two_partners()): a slow group with a suspect partner says little, and on a
    // noisy fabric one slow retest is one more fluctuation (issue 32: under load the healthy
    // partner of a slow node was slow again with a proven partner, 4 runs of 26).
    if (g.outcome == GroupOutcome::slow) convicts = false;
  }
  for (int m : suspects) {
    Node& x = nodes_[static_cast<std::size_t>(m)];
    x.bad_groups.push_back(static_cast<int>(gi));
    if (g.members.size() == 2) x.tried.push_back(g.members[0] == m ? g.members[1] : g.members[0]);
    if (convicts) {
      x.state = g.outcome == GroupOutcome::slow ? State::straggler : State::faulty;
      x.convicted_group = static_cast<int>(gi);
    }
  }
}

// A suspect that failed in two groups whose other members all proved healthy, and the two groups
// share no partner, would need two separate bad links to be innocent: it is faulty. (One shared
// partner could be one bad link, so that does not count.) This settles, for instance, the node
// of three whose both partners passed together. Slow groups count the same way towards a
// straggler: slow with two proven partners that have nothing else in common.
void FleetPlanner::convict_by_two_partners() {
  for (Node& x : nodes_) {
    if (x.state != State::suspect) continue;
    const int self = static_cast<int>(&x - nodes_.data());
    std::vector<int> failed;  // groups that implicate it, by kind
    std::vector<int> slow;
    for (int gi : x.bad_groups) {
      const Group& g = groups_[static_cast<std::size_t>(gi)];
      const bool others_good = std::all_of(g.members.begin(), g.members.end(), [&](int m) {
        return m == self || nodes_[static_cast<std::size_t>(m)].state == State::good;
      });
      if (!others_good) continue;
      // Slowness is a noisy measurement: a slow group counts against a node only when its
      // other members were proven before it ran. A partner proven only afterwards, by one
      // retest of its own, may be the slow one that got a lucky retest, and the shared group
      // would then convict its healthy partner (issue 32: measured once in 10 runs under load).
      const bool proven_before = std::all_of(g.members.begin(), g.members.end(), [&](int m) {
        const int passed = nodes_[static_cast<std::size_t>(m)].passed_group;
        return m == self || (passed >= 0 && passed < gi);
      });
      if (!is_failure(g.outcome) && !proven_before) continue;
      std::vector<int>& same_kind = is_failure(g.outcome) ? failed : slow;
      for (int earlier : same_kind) {
        const auto& e = groups_[static_cast<std::size_t>(earlier)].members;
        const bool share = std::any_of(g.members.begin(), g.members.end(),
                                       [&](int m) { return m != self && contains(e, m); });
        if (!share) {
          x.state = is_failure(g.outcome) ? State::faulty : State::straggler;
          x.convicted_group = gi;
          break;
        }
      }
      // A failure outweighs slowness: keep looking for one after a straggler verdict.
      if (x.state == State::faulty) break;
      same_kind.push_back(gi);
    }
  }
}

FleetConclusion FleetPlanner::conclude() const {
  FleetConclusion c;
  c.rounds_used = rounds_used_;
  c.bound_reached = bound_reached_;
  c.nodes.resize(nodes_.size(), NodeConclusion::healthy);
  c.reasons.resize(nodes_.size());
  c.speed = speeds();
  const fleet_reasons::Context ctx{nodes_, groups_, rounds_used_, bound_, bound_reached_};
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& x = nodes_[i];
    const int node = static_cast<int>(i);
    switch (x.state) {
      case State::good:
        break;
      case State::excluded:
        c.nodes[i] = NodeConclusion::faulty;
        c.reasons[i] = x.reason;
        break;
      case State::faulty:
        c.nodes[i] = NodeConclusion::faulty;
        c.reasons[i] = fleet_reasons::convicted(ctx, node);
        break;
      case State::straggler:
        c.nodes[i] = NodeConclusion::straggler;
        c.reasons[i] = fleet_reasons::convicted(ctx, node);
        break;
      case State::suspect:
        if (x.tested) {
          c.nodes[i] = NodeConclusion::ambiguous;
          c.reasons[i] = fleet_reasons::ambiguous(ctx, node);
        } else {
          c.reasons[i] = "no partner: the network was not tested";
        }
        break;
    }
  }
  for (std::size_t gi = 0; gi < groups_.size(); ++gi) {
    const Group& g = groups_[gi];
    if (!is_failure(g.outcome)) continue;
    const bool all_good = std::all_of(g.members.begin(), g.members.end(), [&](int m) {
      return nodes_[static_cast<std::size_t>(m)].state == State::good;
    });
    if (!all_good) continue;
    c.bad_pairs.push_back(BadGroup{g.members, g.outcome, fleet_reasons::bad_group(ctx, g)});
  }
  // A bad group that holds a smaller bad group is explained by it (the triple {0,1,2} failed
  // because the link 0-1 is bad): only the smallest are reported.
  auto holds = [](const BadGroup& big, const BadGroup& small) {
    return big.members.size() > small.members.size() &&
           std::includes(big.members.begin(), big.members.end(), small.members.begin(),
                         small.members.end());
  };
  std::vector<BadGroup> minimal;
  for (const BadGroup& b : c.bad_pairs) {
    const bool explained = std::any_of(c.bad_pairs.begin(), c.bad_pairs.end(),
                                       [&](const BadGroup& other) { return holds(b, other); });
    if (!explained) minimal.push_back(b);
  }
  c.bad_pairs = std::move(minimal);
  return c;
}

std::vector<NodeSpeed> FleetPlanner::speeds() const {
  std::vector<NodeSpeed> out(nodes_.size());
  // The best evidence of each node: a group judged normal, else one that finished unjudged or
  // slow (a slow group that did not convict says no more of the node than an unjudged one);
  // among equals, the one resting on the most comparable groups.
  auto weight = [](SpeedJudgement j) {
    switch (j) {
      case SpeedJudgement::normal:
        return 2;
      case SpeedJudgement::unjudged:
      case SpeedJudgement::slow:
        return 1;
      case SpeedJudgement::not_measured:
        break;
    }
    return 0;
  };
  std::vector<int> best(nodes_.size(), 0);
  for (const Group& g : groups_) {
    const int w = weight(g.speed);
    if (w == 0) continue;
    for (int m : g.members) {
      NodeSpeed& o = out[static_cast<std::size_t>(m)];
      int& b = best[static_cast<std::size_t>(m)];
      if (w < b || (w == b && g.groups_compared <= o.groups_compared)) continue;
      b = w;
      o.judgement = w == 2 ? SpeedJudgement::normal : SpeedJudgement::unjudged;
      o.groups_compared = g.groups_compared;
    }
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& x = nodes_[i];
    if (x.state != State::straggler || x.convicted_group < 0) continue;
    out[i].judgement = SpeedJudgement::slow;
    out[i].groups_compared = groups_[static_cast<std::size_t>(x.convicted_group)].groups_compared;
  }
  return out;
}

}  // namespace preflight
