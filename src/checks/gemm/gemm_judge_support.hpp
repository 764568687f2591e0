#pragma once
// What the gemm judgement's two files (gemm_judge.cpp, gemm_consensus.cpp) share: the grouping
// of the GPUs that are held to each other, the names of products and models in messages, and
// the drill mark.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "model/text_format.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

// Adds `member` to the group whose key equals `key`, or starts that group at the end: groups
// stay in the order in which their keys first appear, and so do the findings made from them.
template <class Key, class Member>
void add_to_group(std::vector<std::pair<Key, std::vector<Member>>>& groups, const Key& key,
                  Member member) {
  auto it =
      std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
  if (it == groups.end()) {
    groups.emplace_back(key, std::vector<Member>{member});
  } else {
    it->second.push_back(member);
  }
}

// "round 3 repeat 1"
inline std::string product_name(int round, int repeat) {
  return "round " + std::to_string(round) + " repeat " + std::to_string(repeat);
}

// A TFLOP/s figure in messages: "712.4".
inline std::string tflops_text(double value) {
  return formatted("%.1f", value);
}

// The model and a space, as in "3 other <model> GPUs"; nothing for an unknown model.
inline std::string model_phrase(const std::string& model) {
  return model.empty() ? "" : model + " ";
}

// A finding is marked injected when every product behind it was touched by --inject-fault (on
// some member, for consensus), so a drill that implicates a healthy peer (the other side of a
// tie) still reads as a drill.
inline void mark_if_injected(Finding& f, bool all_injected) {
  if (all_injected) f.injected = true;
}

}  // namespace preflight
