// The voting and speed arithmetic of the gemm judgement (which GPUs, or which repeats, agree on a
// product's digest, and how far a GPU lags the node) and the cross-GPU consensus detector built
// on the vote. Kept apart from judge_gemm so each rule can be tested on its own
// (tests/checks/gemm/test_gemm_judge.cpp).
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "checks/common/entities.hpp"
#include "checks/gemm/gemm_findings.hpp"
#include "checks/gemm/gemm_judge.hpp"
#include "checks/gemm/gemm_judge_support.hpp"
#include "model/text_format.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

ConsensusOutcome vote(const std::vector<ConsensusVote>& votes) {
  ConsensusOutcome out;
  if (votes.empty()) return out;
  if (votes.size() == 1) {
    out.kind = ConsensusOutcome::Kind::single;
    out.majority_digest = votes.front().digest;
    out.majority = {votes.front().gpu_index};
    return out;
  }

  std::map<std::uint64_t, std::vector<int>> groups;
  for (const ConsensusVote& v : votes) groups[v.digest].push_back(v.gpu_index);
  std::size_t largest = 0;
  for (auto& [digest, members] : groups) {
    std::sort(members.begin(), members.end());
    largest = std::max(largest, members.size());
  }

  std::vector<std::pair<std::uint64_t, std::vector<int>>> top;
  std::vector<int> rest;
  for (const auto& [digest, members] : groups) {
    if (members.size() == largest) {
      top.emplace_back(digest, members);
    } else {
      rest.insert(rest.end(), members.begin(), members.end());
    }
  }
  std::sort(rest.begin(), rest.end());

  if (top.size() == 1) {
    out.kind =
        groups.size() == 1 ? ConsensusOutcome::Kind::unanimous : ConsensusOutcome::Kind::majority;
    out.majority_digest = top.front().first;
    out.majority = top.front().second;
    out.minority = std::move(rest);
    return out;
  }

  // No strict plurality: no group can be called right, so none is silently preferred.
  out.kind = ConsensusOutcome::Kind::tie;
  std::sort(top.begin(), top.end(),
            [](const auto& a, const auto& b) { return a.second.front() < b.second.front(); });
  for (auto& [digest, members] : top) out.tied.push_back(std::move(members));
  out.minority = std::move(rest);
  return out;
}

double percent_below(double value, double reference) {
  if (reference <= 0.0 || value >= reference) return 0.0;
  return 100.0 * (reference - value) / reference;
}

StragglerClass classify_straggler(double percent_slower, double warn_pct, double fail_pct) {
  if (fail_pct > 0.0 && percent_slower >= fail_pct) return StragglerClass::fail;
  if (warn_pct > 0.0 && percent_slower >= warn_pct) return StragglerClass::warn;
  return StragglerClass::none;
}

namespace {

struct ConsensusTally {
  std::size_t minority = 0;
  std::optional<std::pair<int, int>> first_minority;
  std::size_t disagreeing_peers = 0;  // at the first minority product
  bool minority_injected = true;
  std::size_t tied = 0;
  std::optional<std::pair<int, int>> first_tie;
  std::string split;  // of the first tie: "1-1: gpu0 | gpu1"
  bool tie_injected = true;
};

std::string describe_split(const ConsensusOutcome& result) {
  std::string sizes;
  std::string sides;
  for (const auto& side : result.tied) {
    sizes += (sizes.empty() ? "" : "-") + std::to_string(side.size());
    std::string names;
    for (int g : side) names += (names.empty() ? "" : ", ") + gpu_entity(g);
    sides += (sides.empty() ? "" : " | ") + names;
  }
  std::string text = sizes + ": " + sides;
  if (!result.minority.empty()) {
    std::string others;
    for (int g : result.minority) others += (others.empty() ? "" : ", ") + gpu_entity(g);
    text += " (" + others + " differing from both)";
  }
  return text;
}

void judge_consensus_group(const std::vector<const GemmGpuOutcome*>& members,
                           ConsensusFindings& out) {
  // Products are compared only where every member computed them: GPUs run for a fixed time,
  // so faster ones issue more products, and comparing those among fewer GPUs would turn a
  // fault on one of them into an unresolvable tie.
  using ProductKey = std::pair<int, int>;
  std::vector<std::map<ProductKey, const GemmProductRecord*>> by_key(members.size());
  for (std::size_t m = 0; m < members.size(); ++m) {
    for (const GemmProductRecord& p : members[m]->run->products) {
      by_key[m].emplace(ProductKey{p.round, p.repeat}, &p);
    }
  }
  std::map<int, ConsensusTally> tallies;
  std::size_t compared = 0;
  for (const GemmProductRecord& p : members.front()->run->products) {
    const ProductKey key{p.round, p.repeat};
    std::vector<ConsensusVote> votes;
    std::map<int, std::uint64_t> digest_of;
    bool any_injected = false;
    for (std::size_t m = 0; m < members.size(); ++m) {
      const auto it = by_key[m].find(key);
      if (it == by_key[m].end()) break;
      votes.push_back({members[m]->gpu_index, it->second->digest});
      digest_of[members[m]->gpu_index] = it->second->digest;
      any_injected = any_injected || it->second->injected;
    }
    if (votes.size() != members.size() || by_key.front().at(key) != &p) continue;
    ++compared;
    const ConsensusOutcome result = vote(votes);
    for (int g : result.minority) {
      ConsensusTally& t = tallies[g];
      if (t.minority++ == 0) {
        t.first_minority = key;
        t.disagreeing_peers = static_cast<std::size_t>(
            std::count_if(votes.begin(), votes.end(),
                          [&](const ConsensusVote& v) { return v.digest != digest_of[g]; }));
      }
      t.minority_injected = t.minority_injected && any_injected;
    }
    if (result.kind != ConsensusOutcome::Kind::tie) continue;
    for (const auto& side : result.tied) {
      for (int g : side) {
        ConsensusTally& t = tallies[g];
        if (t.tied++ == 0) {
          t.first_tie = key;
          t.split = describe_split(result);
        }
        t.tie_injected = t.tie_injected && any_injected;
      }
    }
  }

  const GemmGpuOutcome& head = *members.front();
  const std::string dt(to_string(head.dtype));
  const std::string compared_text = " of " + count_of(compared, "product", "products");
  for (const GemmGpuOutcome* o : members) {
    const auto it = tallies.find(o->gpu_index);
    if (it == tallies.end()) continue;
    const ConsensusTally& t = it->second;
    if (t.minority > 0) {
      Finding f = make_finding(gemm_findings(), "GEMM_CONSENSUS_MINORITY", gpu_entity(o->gpu_index),
                               dt + ": disagrees with " + std::to_string(t.disagreeing_peers) +
                                   " other " + model_phrase(head.model) + "GPUs in " +
                                   std::to_string(t.minority) + compared_text + "; first " +
                                   product_name(t.first_minority->first, t.first_minority->second));
      f.measured(static_cast<double>(t.minority), "products");
      mark_if_injected(f, t.minority_injected);
      out.push_back({o->gpu_index, o->dtype, std::move(f)});
    }
    if (t.tied > 0) {
      Finding f = make_finding(gemm_findings(), "GEMM_CONSENSUS_TIE", gpu_entity(o->gpu_index),
                               dt + ": products split " + t.split +
                                   "; no majority to tell which is wrong (" +
                                   std::to_string(t.tied) + compared_text + "; first " +
                                   product_name(t.first_tie->first, t.first_tie->second) + ")");
      f.measured(static_cast<double>(t.tied), "products");
      mark_if_injected(f, t.tie_injected);
      out.push_back({o->gpu_index, o->dtype, std::move(f)});
    }
  }
}

}  // namespace

ConsensusFindings judge_gemm_consensus(const std::vector<GemmGpuOutcome>& outcomes) {
  ConsensusFindings out;
  // cuBLAS picks its kernels by model and SM count, and the digest depends on the kernel's
  // summation order, so only GPUs that agree on all of these can be held to the same bits.
  using Key = std::tuple<std::string, int, int, int, int, int>;
  std::vector<std::pair<Key, std::vector<const GemmGpuOutcome*>>> groups;
  for (const GemmGpuOutcome& o : outcomes) {
    if (!o.not_tested.empty() || !o.run || o.run->products.empty()) continue;
    const Key key{o.model,        static_cast<int>(o.dtype), o.run->m, o.run->n, o.run->k,
                  o.run->sm_count};
    add_to_group(groups, key, &o);
  }
  // A group of one has no peer to vote with; checksum and repeatability cover it.
  for (const auto& [key, members] : groups) {
    if (members.size() >= 2) judge_consensus_group(members, out);
  }
  return out;
}

}  // namespace preflight
