#pragma once
#include "preflight/check.hpp"

namespace preflight {

// GPU peer copies over every ordered GPU pair: peer access, unidirectional and bidirectional
// bandwidth, as N x N matrices in the verdict, held to what the SKU's NVLinks carry.
// docs/checks/bandwidth.md.
class NvlinkCheck final : public Check {
 public:
  NvlinkCheck();
  const CheckInfo& info() const override { return info_; }
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  CheckResult run(CheckContext& ctx) const override;

 private:
  CheckInfo info_;
};

}  // namespace preflight
