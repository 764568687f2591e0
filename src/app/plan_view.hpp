#pragma once
// What `preflight plan`, `run` and `list` share: the node a plan is made for, and the
// plan as a table or JSON (docs/plan.md).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/check.hpp"
#include "run/planner.hpp"

namespace preflight {

// A node described on the command line: --node gpus=N,sku=SKU,nics=M. Every key optional (gpus 8,
// nics 0, sku generic); InvalidInput naming the key for anything else.
struct DescribedNode {
  NodeShape shape;
  const SkuSpec* sku = nullptr;  // nullptr: generic figures
};
DescribedNode parse_node_description(const std::string& text);

// The node `preflight list` plans for: 8 x H100 SXM5 80GB with 8 compute NICs, the DGX H100.
DescribedNode default_node();

// The plan as JSON (docs/plan.md) and as a table for people.
nlohmann::ordered_json plan_to_json(const RunPlan& plan, std::string_view profile,
                                    const std::string& node);
std::string plan_to_text(const RunPlan& plan, std::string_view profile, const std::string& node);

// The plan a run makes before discovery: the profile's default deadline for the node it assumes
// (expect_gpus, else 8 GPUs; the RDMA devices counted), or the floor check of a given --timeout
// (expect_gpus, else no GPU: a node is never refused on a guess; the runner holds the node it
// finds to its floor after discovery). Throws InvalidInput naming the floor.
RunPlan plan_before_discovery(std::shared_ptr<const ThresholdSpecs> specs,
                              const std::vector<PlannedCheck>& checks, Profile profile,
                              const CheckOptions& options, std::optional<int> expect_gpus, int nics,
                              std::optional<int> timeout_s);

}  // namespace preflight
