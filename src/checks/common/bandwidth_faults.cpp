// The bandwidth checks' fault kinds and shared failure findings (bandwidth_common.hpp).
#include <cstdio>

#include "checks/common/bandwidth_common.hpp"
#include "checks/common/fault_kinds.hpp"
#include "checks/common/findings.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

std::vector<FaultKindSpec> pcie_fault_kinds() {
  return {
      slow_kind("pcie-slow", TargetType::gpu,
                "the GPU's host<->device copies deliver FACTOR of their bandwidth (the copy "
                "stream is held idle between copies), e.g. 0.5",
                {"PCIE_BANDWIDTH_LOW", "PCIE_BANDWIDTH_MARGINAL", "PCIE_SHARED_BANDWIDTH_LOW"})};
}

std::vector<FaultKindSpec> nvlink_fault_kinds() {
  return {slow_kind("nvlink-slow", TargetType::pair,
                    "copies between the two GPUs, both directions, deliver FACTOR of their "
                    "bandwidth, e.g. 0.5",
                    {"NVLINK_BANDWIDTH_LOW", "NVLINK_BANDWIDTH_MARGINAL"})};
}

std::vector<FaultKindSpec> hbm_fault_kinds() {
  return {fault_kind(
      "hbm-corrupt", TargetType::gpu,
      "one word of GPU memory is changed between the pattern test's write and its verification",
      {"HBM_PATTERN_MISMATCH"})};
}

double pcie_slow_factor(const FaultPlan& faults, int gpu_index) {
  const InjectedFault* f = faults.for_gpu("pcie-slow", gpu_index);
  return f != nullptr && f->number ? *f->number : 1.0;
}

double nvlink_slow_factor(const FaultPlan& faults, int gpu_a, int gpu_b) {
  double factor = 1.0;
  for (const InjectedFault* f : faults.of_kind("nvlink-slow")) {
    const auto& t = f->target;
    const bool match =
        (t.index == gpu_a && t.index2 == gpu_b) || (t.index == gpu_b && t.index2 == gpu_a);
    if (match && f->number) factor = *f->number;
  }
  return factor;
}

std::optional<std::string> no_cuda_gpu_reason(const CheckContext& ctx) {
  if (ctx.engines.bandwidth == nullptr) {
    return std::string("this binary has no copy engine (built without CUDA)");
  }
  for (const auto& g : ctx.node->gpus) {
    if (g.cuda_ordinal >= 0) return std::nullopt;
  }
  return std::string("CUDA can use none of the node's GPUs (see inventory)");
}

void report_untested_gpus(const NodeReading& node, std::vector<Finding>& findings) {
  for (const auto& g : node.gpus) {
    if (g.cuda_ordinal >= 0) continue;
    findings.push_back(make_finding(bandwidth_findings(), "BANDWIDTH_GPU_NOT_TESTED",
                                    gpu_entity(g.index),
                                    "not measured: CUDA does not see this GPU (see inventory)"));
  }
}

bool judge_measurement_failure(const std::optional<MeasurementResult>& result,
                               const std::string& entity, const std::string& what,
                               std::vector<Finding>& findings) {
  if (!result) {
    findings.push_back(make_finding(
        bandwidth_findings(), "BANDWIDTH_TIMEOUT", entity,
        what + ": the driver did not return before the deadline (allocation or a copy hung)"));
    return true;
  }
  if (result->timed_out) {
    findings.push_back(make_finding(bandwidth_findings(), "BANDWIDTH_TIMEOUT", entity,
                                    what + ": queued copies did not complete before the deadline"));
    return true;
  }
  if (!result->error.empty()) {
    findings.push_back(make_finding(bandwidth_findings(), "BANDWIDTH_CUDA_ERROR", entity,
                                    what + ": " + result->error));
  }
  std::uint64_t bad = 0;
  for (const auto& s : result->streams) bad += s.bad_words;
  if (bad > 0) {
    findings.push_back(
        make_finding(bandwidth_findings(), "BANDWIDTH_DATA_MISMATCH", entity,
                     what + ": " + std::to_string(bad) +
                         " 32-bit words arrived changed after the copies (verified on arrival)")
            .measured(static_cast<double>(bad), "words"));
  }
  return false;
}

}  // namespace preflight
