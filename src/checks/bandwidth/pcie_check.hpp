#pragma once
#include "preflight/check.hpp"

namespace preflight {

// Host<->device copy bandwidth of every GPU over its PCIe link (host-to-device,
// device-to-host, bidirectional), one GPU at a time, then every GPU at once to find switches or
// root ports that cannot carry all their GPUs. Each figure is held to what the GPU's link
// should carry (generation and width from the SKU table or the device). docs/checks/bandwidth.md.
class PcieCheck final : public Check {
 public:
  PcieCheck();
  const CheckInfo& info() const override { return info_; }
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  CheckResult run(CheckContext& ctx) const override;

 private:
  CheckInfo info_;
};

}  // namespace preflight
