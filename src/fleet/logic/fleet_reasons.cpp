#include "fleet/logic/fleet_reasons.hpp"

#include <cstddef>

namespace preflight::fleet_reasons {
namespace {

using State = FleetPlanner::State;

// A reason stays one readable line however many rounds a node went through.
constexpr std::size_t kMaxPieces = 4;
constexpr std::size_t kMaxNamedPartners = 4;

std::string state_note(const Context& ctx, int node) {
  switch (ctx.nodes[static_cast<std::size_t>(node)].state) {
    case State::good:
      return " (healthy)";
    case State::faulty:
    case State::excluded:
      return " (faulty)";
    case State::straggler:
      return " (straggler)";
    case State::suspect:
      break;
  }
  return "";
}

// "node 7 (healthy)", "nodes 3, 4 (faulty) and 5": the other members of a group.
std::string partners(const Context& ctx, const std::vector<int>& members, int self) {
  std::vector<int> others;
  for (int m : members) {
    if (m != self) others.push_back(m);
  }
  std::string text = others.size() == 1 ? "node " : "nodes ";
  const std::size_t named =
      others.size() > kMaxNamedPartners ? kMaxNamedPartners - 1 : others.size();
  for (std::size_t i = 0; i < named; ++i) {
    if (i > 0) text += i + 1 == others.size() ? " and " : ", ";
    text += std::to_string(others[i]) + state_note(ctx, others[i]);
  }
  if (named < others.size()) text += " and " + std::to_string(others.size() - named) + " more";
  return text;
}

// "failed (timeout)", "failed (timeout after 30.0 s)", "slow", "slow (busbw 12 GB/s)".
std::string label(const FleetPlanner::Group& g) {
  if (!is_failure(g.outcome)) return g.detail.empty() ? "slow" : "slow (" + g.detail + ")";
  return "failed (" + (g.detail.empty() ? std::string(to_string(g.outcome)) : g.detail) + ")";
}

// The node's bad groups as one sentence: "failed (timeout) with node 3 in round 1 and with
// node 7 (healthy) in round 2". The label is repeated only where it changes; past kMaxPieces
// groups the middle ones are counted, not listed.
std::string history(const Context& ctx, int node, const std::vector<int>& bad_groups) {
  std::vector<std::string> pieces;
  std::string last_label;
  for (std::size_t i = 0; i < bad_groups.size(); ++i) {
    if (bad_groups.size() > kMaxPieces && i == 1) {
      const std::size_t skipped = bad_groups.size() - kMaxPieces;
      pieces.push_back(std::to_string(skipped) + (skipped == 1 ? " more group" : " more groups"));
      i += skipped - 1;
      continue;
    }
    const FleetPlanner::Group& g = ctx.groups[static_cast<std::size_t>(bad_groups[i])];
    const std::string l = label(g);
    std::string piece = l == last_label ? "" : l + " ";
    piece += "with " + partners(ctx, g.members, node) + " in round " + std::to_string(g.round);
    pieces.push_back(piece);
    last_label = l;
  }
  std::string text;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) text += i + 1 == pieces.size() ? " and " : ", ";
    text += pieces[i];
  }
  return text;
}

bool implicated(const Context& ctx, int node) {
  for (int gi : ctx.nodes[static_cast<std::size_t>(node)].bad_groups) {
    bool others_good = true;
    for (int m : ctx.groups[static_cast<std::size_t>(gi)].members) {
      if (m != node && ctx.nodes[static_cast<std::size_t>(m)].state != State::good) {
        others_good = false;
      }
    }
    if (others_good) return true;
  }
  return false;
}

}  // namespace

std::string convicted(const Context& ctx, int node) {
  const FleetPlanner::Node& x = ctx.nodes[static_cast<std::size_t>(node)];
  std::vector<int> upto;
  for (int gi : x.bad_groups) {
    upto.push_back(gi);
    if (gi == x.convicted_group) break;
  }
  return history(ctx, node, upto);
}

std::string ambiguous(const Context& ctx, int node) {
  std::string text = history(ctx, node, ctx.nodes[static_cast<std::size_t>(node)].bad_groups);
  const std::string bound = std::to_string(ctx.bound) + (ctx.bound == 1 ? " round" : " rounds");
  if (implicated(ctx, node)) {
    text += "; a faulty node or a bad link: ";
    text += ctx.bound_reached ? "the round bound (" + bound + ") left no round to retest it"
                              : "no other healthy partner was left to retest it";
  } else {
    text += "; not separated from its partners: ";
    text += ctx.bound_reached ? "the round bound (" + bound + ") was reached"
                              : "no untried partner was left";
  }
  return text;
}

std::string bad_group(const Context& ctx, const FleetPlanner::Group& group) {
  std::string text = label(group) + " in round " + std::to_string(group.round) +
                     ", but every member passed with other partners:";
  for (std::size_t i = 0; i < group.members.size(); ++i) {
    const int m = group.members[i];
    const int passed = ctx.nodes[static_cast<std::size_t>(m)].passed_group;
    text += i == 0 ? " " : ", ";
    text += "node " + std::to_string(m);
    if (passed >= 0) {
      const FleetPlanner::Group& p = ctx.groups[static_cast<std::size_t>(passed)];
      text += " with " + partners(ctx, p.members, m) + " in round " + std::to_string(p.round);
    }
  }
  return text;
}

}  // namespace preflight::fleet_reasons
