#include "fleet/logic/fleet_pairing.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace preflight::fleet_pairing {
namespace {

using State = FleetPlanner::State;

// How far the pairing of suspects looks for a better partner before it takes the best seen:
// keeps a round O(suspects x window) however the histories look.
constexpr int kPartnerWindow = 64;

// What the evidence says of a suspect, from most to least likely healthy.
enum class Standing {
  cleared,     // every bad group it was in is explained by another member
  open,        // some bad group of its is not explained yet
  implicated,  // went bad in a group whose other members all proved healthy since
};

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Both lists ascending (group indices are appended in round order).
bool share_any(const std::vector<int>& a, const std::vector<int>& b) {
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i == *j) return true;
    if (*i < *j) {
      ++i;
    } else {
      ++j;
    }
  }
  return false;
}

bool implicated_by(const FleetPlanner::Group& g, int node,
                   const std::vector<FleetPlanner::Node>& nodes) {
  for (int m : g.members) {
    if (m != node && nodes[m].state != State::good) return false;
  }
  return true;
}

std::vector<Standing> standings(const std::vector<int>& suspects,
                                const std::vector<FleetPlanner::Node>& nodes,
                                const std::vector<FleetPlanner::Group>& groups) {
  std::vector<char> implicated(nodes.size(), 0);
  for (int s : suspects) {
    for (int gi : nodes[s].bad_groups) {
      if (implicated_by(groups[gi], s, nodes)) implicated[s] = 1;
    }
  }
  std::vector<Standing> out;
  out.reserve(suspects.size());
  for (int s : suspects) {
    if (implicated[s]) {
      out.push_back(Standing::implicated);
      continue;
    }
    bool all_explained = true;
    for (int gi : nodes[s].bad_groups) {
      const FleetPlanner::Group& g = groups[gi];
      const bool self_blamed = contains(g.blamed, s);
      bool explained = false;
      for (int m : g.members) {
        if (m == s) continue;
        const State st = nodes[m].state;
        if (st == State::faulty || st == State::excluded || st == State::straggler ||
            implicated[m] || (!self_blamed && contains(g.blamed, m))) {
          explained = true;
          break;
        }
      }
      if (!explained) {
        all_explained = false;
        break;
      }
    }
    out.push_back(all_explained ? Standing::cleared : Standing::open);
  }
  return out;
}

// Everybody who was in a bad group with the suspect (few: one group per round at most).
std::vector<int> shared_with(int s, const std::vector<FleetPlanner::Node>& nodes,
                             const std::vector<FleetPlanner::Group>& groups) {
  std::vector<int> out;
  for (int gi : nodes[s].bad_groups) {
    for (int m : groups[gi].members) {
      if (m != s) out.push_back(m);
    }
  }
  return out;
}

// Goods by switch, handed out from the switch with the most left (ties: lower switch id), so
// that the suspects of one switch do not use up the goods of another switch unevenly.
class GoodPool {
 public:
  GoodPool(const std::vector<int>& goods, const std::vector<int>& switch_id) {
    for (int g : goods) {
      const int w = switch_id.empty() ? 0 : switch_id[g];
      buckets_[w].push_back(g);
    }
    for (auto& [w, list] : buckets_) {
      left_[w] = static_cast<int>(list.size());
      order_.insert({-left_[w], w});
    }
  }
  bool empty() const { return order_.empty(); }

  // A good of another switch than `avoid_switch` if any, else of the same; never one in `tried`,
  // and one in `shared` (it shared a bad group with the suspect) only when no other is left:
  // a fresh partner tells a bad node from a bad link to that partner.
  int take(int avoid_switch, const std::vector<int>& tried, const std::vector<int>& shared) {
    for (const std::vector<int>* skip : {&shared, &tried}) {
      int fallback_switch = -1;
      for (const auto& [neg_left, w] : order_) {
        if (w == avoid_switch && order_.size() > 1) {
          fallback_switch = w;
          continue;
        }
        const int g = take_from(w, tried, *skip);
        if (g >= 0) return g;
      }
      if (fallback_switch >= 0) {
        const int g = take_from(fallback_switch, tried, *skip);
        if (g >= 0) return g;
      }
    }
    return -1;
  }

 private:
  int take_from(int w, const std::vector<int>& tried, const std::vector<int>& skip) {
    std::vector<int>& list = buckets_[w];
    for (std::size_t i = 0; i < list.size(); ++i) {
      const int g = list[i];
      if (g < 0 || contains(tried, g) || contains(skip, g)) continue;
      list[i] = -1;
      // Drop the used prefix so that the next scan starts at a live entry.
      std::size_t used = 0;
      while (used < list.size() && list[used] < 0) ++used;
      if (used > 64 || used == list.size()) {
        list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(used));
      }
      order_.erase({-left_[w], w});
      if (--left_[w] > 0) order_.insert({-left_[w], w});
      return g;
    }
    return -1;
  }

  std::map<int, std::vector<int>> buckets_;
  std::map<int, int> left_;
  std::set<std::pair<int, int>> order_;  // (-goods left, switch)
};

bool allowed(const std::vector<FleetPlanner::Node>& nodes, int a, int b) {
  return a != b && !contains(nodes[a].tried, b);
}

// The greedy pass can strand the last few suspects with nobody they may still meet (typically
// the two halves of one failed pair). Swapping partners with a formed pair (a, b) + (c, d) ->
// (a, c) + (b, d) brings two of them in; each stranded suspect looks at kPartnerWindow pairs.
void repair(std::vector<int>& unpaired, std::vector<std::pair<int, int>>& formed,
            const std::vector<FleetPlanner::Node>& nodes) {
  for (std::size_t i = 0; i < unpaired.size(); ++i) {
    const int a = unpaired[i];
    if (a < 0) continue;
    bool done = false;
    const std::size_t window = static_cast<std::size_t>(kPartnerWindow);
    for (std::size_t j = i + 1; j < unpaired.size() && j <= i + window && !done; ++j) {
      const int b = unpaired[j];
      if (b < 0) continue;
      if (allowed(nodes, a, b)) {
        formed.push_back({a, b});
        done = true;
      }
      const std::size_t from = formed.size() > window ? formed.size() - window : 0;
      for (std::size_t f = formed.size(); f-- > from && !done;) {
        const auto [c, d] = formed[f];
        if (allowed(nodes, a, c) && allowed(nodes, b, d)) {
          formed[f] = {a, c};
          formed.push_back({b, d});
          done = true;
        } else if (allowed(nodes, a, d) && allowed(nodes, b, c)) {
          formed[f] = {a, d};
          formed.push_back({b, c});
          done = true;
        }
      }
      if (done) unpaired[i] = unpaired[j] = -1;
    }
  }
}

// Pairs the pool (in priority order) with partners it never shared a bad pair with. Among the
// next kPartnerWindow candidates it prefers one that shared no bad group with it at all (the
// culprit of a shared group is likely one of the two), then one on its own switch (a bad
// switch or uplink fails every pair across it, so pairs inside a switch still make progress).
void pair_pool(const std::vector<int>& pool, const std::vector<FleetPlanner::Node>& nodes,
               const std::vector<int>& switch_id, std::vector<std::vector<int>>& out) {
  const int n = static_cast<int>(pool.size());
  std::vector<int> next(n + 1);  // linked list of the unpaired, by position in the pool
  std::vector<int> prev(n + 1);
  for (int i = 0; i <= n; ++i) {
    next[i] = i + 1;
    prev[i] = i - 1;
  }
  auto unlink = [&](int i) {
    if (prev[i] >= 0) next[prev[i]] = next[i];
    if (next[i] <= n) prev[next[i]] = prev[i];
  };
  std::vector<int> unpaired;
  std::vector<std::pair<int, int>> formed;
  int head = 0;
  while (head < n) {
    const int i = head;
    const int a = pool[i];
    head = next[i];
    unlink(i);
    int best = -1;
    int best_score = 1 << 30;
    int scanned = 0;
    for (int j = head; j < n && scanned < kPartnerWindow; j = next[j]) {
      const int b = pool[j];
      if (contains(nodes[a].tried, b)) continue;
      ++scanned;
      int score = share_any(nodes[a].bad_groups, nodes[b].bad_groups) ? 2 : 0;
      if (!switch_id.empty() && switch_id[a] != switch_id[b]) score += 1;
      if (score < best_score) {
        best = j;
        best_score = score;
        if (score == 0) break;
      }
    }
    if (best < 0) {
      unpaired.push_back(a);
      continue;
    }
    if (best == head) head = next[best];
    unlink(best);
    formed.push_back({a, pool[best]});
  }
  repair(unpaired, formed, nodes);
  for (const auto& [a, b] : formed) out.push_back({std::min(a, b), std::max(a, b)});
}

}  // namespace

std::vector<int> switch_ids(const std::vector<std::string>& switch_of) {
  std::vector<int> ids;
  std::map<std::string, int> seen;
  ids.reserve(switch_of.size());
  for (const std::string& s : switch_of) {
    const auto it = seen.emplace(s, static_cast<int>(seen.size())).first;
    ids.push_back(it->second);
  }
  return ids;
}

std::vector<std::vector<int>> first_round(const std::vector<int>& active, int group_size,
                                          const std::vector<int>& switch_id) {
  const int n = static_cast<int>(active.size());
  if (n < 2) return {};
  const int m = std::max(1, n / group_size);
  std::vector<std::vector<int>> groups(m);
  if (switch_id.empty()) {
    // Consecutive indices; the leftovers widen the last groups by one each.
    std::vector<int> size(m, n >= group_size ? group_size : n);
    const int leftovers = n - m * size[0];
    for (int t = 0; t < leftovers; ++t) ++size[m - 1 - (t % m)];
    int p = 0;
    for (int j = 0; j < m; ++j) {
      for (int s = 0; s < size[j]; ++s) groups[j].push_back(active[p++]);
    }
    return groups;
  }
  // Largest switch first, then deal round-robin: the members of one group lie m places apart in
  // this order, so two share a switch only when the switch holds more than m nodes. Dealing
  // from the last group backwards puts the leftovers (positions past m * group_size) on the last
  // groups.
  std::map<int, std::vector<int>> by_switch;
  for (int node : active) by_switch[switch_id[node]].push_back(node);
  std::vector<std::pair<int, int>> order;  // (-size, switch id)
  for (const auto& [w, list] : by_switch) order.push_back({-static_cast<int>(list.size()), w});
  std::sort(order.begin(), order.end());
  int p = 0;
  for (const auto& [neg_size, w] : order) {
    for (int node : by_switch[w]) groups[m - 1 - (p++ % m)].push_back(node);
  }
  for (auto& g : groups) std::sort(g.begin(), g.end());
  std::sort(groups.begin(), groups.end());
  return groups;
}

std::vector<std::vector<int>> later_round(const std::vector<FleetPlanner::Node>& nodes,
                                          const std::vector<FleetPlanner::Group>& groups,
                                          const std::vector<int>& switch_id) {
  std::vector<int> suspects;
  std::vector<int> goods;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (nodes[i].state == State::suspect && nodes[i].tested) suspects.push_back(i);
    if (nodes[i].state == State::good) goods.push_back(i);
  }
  std::vector<std::vector<int>> out;
  if (suspects.empty()) return out;
  const std::vector<Standing> standing = standings(suspects, nodes, groups);

  // Good partners go first to the implicated suspects: one test settles them (most are faulty),
  // and left in the pool they would spoil the pairs of suspects that may be healthy. Then the
  // cleared ones (likely healthy: a pass adds a good node for the next round), then the open.
  std::vector<int> order(suspects.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto key_for_good = [&](int i) {
    const int rank = standing[i] == Standing::implicated ? 0
                     : standing[i] == Standing::cleared  ? 1
                                                         : 2;
    const int s = suspects[i];
    return std::make_tuple(rank, nodes[s].bad_groups.size(), s);
  };
  std::sort(order.begin(), order.end(),
            [&](int x, int y) { return key_for_good(x) < key_for_good(y); });

  GoodPool pool_of_goods(goods, switch_id);
  std::vector<int> rest;
  for (int i : order) {
    const int s = suspects[i];
    const int g = pool_of_goods.empty()
                      ? -1
                      : pool_of_goods.take(switch_id.empty() ? -1 : switch_id[s], nodes[s].tried,
                                           shared_with(s, nodes, groups));
    if (g >= 0) {
      out.push_back({std::min(s, g), std::max(s, g)});
    } else {
      rest.push_back(i);
    }
  }

  // The rest among themselves: the most likely healthy first, so that they meet each other.
  auto key_for_pair = [&](int i) {
    const int rank = static_cast<int>(standing[i]);
    const int s = suspects[i];
    return std::make_tuple(rank, nodes[s].bad_groups.size(), s);
  };
  std::sort(rest.begin(), rest.end(),
            [&](int x, int y) { return key_for_pair(x) < key_for_pair(y); });
  std::vector<int> pool;
  pool.reserve(rest.size());
  for (int i : rest) pool.push_back(suspects[i]);
  pair_pool(pool, nodes, switch_id, out);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace preflight::fleet_pairing
