#pragma once
#include "preflight/check.hpp"

namespace preflight {

// RDMA NICs with libibverbs: inventory of every device and port against expectations
// (--expect-rnics, rdma.min_port_gbps), the NIC's PCIe link, an RDMA-write loopback per port,
// every ordered NIC pair through the fabric, and GPUDirect from each NIC's nearest GPU.
// docs/checks/rdma.md.
class RdmaCheck final : public Check {
 public:
  RdmaCheck();
  const CheckInfo& info() const override { return info_; }
  void validate_options(const CheckOptions& options) const override;
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  CheckResult run(CheckContext& ctx) const override;

 private:
  CheckInfo info_;
};

// The value of --expect-rnics; throws InvalidInput for a bad one. nullopt when not given.
std::optional<int> expected_rnics(const CheckOptions& options);

}  // namespace preflight
