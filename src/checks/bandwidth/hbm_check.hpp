#pragma once
#include "preflight/check.hpp"

namespace preflight {

// GPU memory: device-local copy bandwidth against the SKU's memory bandwidth, and a pattern test
// (zeros, ones, checkerboard, address-in-address, its inverse, random) over a slice of memory
// (quick) or most of the free memory (standard, burnin) that reports every bad address range.
// docs/checks/bandwidth.md.
class HbmCheck final : public Check {
 public:
  HbmCheck();
  const CheckInfo& info() const override { return info_; }
  std::optional<std::string> skip_reason(const CheckContext& ctx) const override;
  CheckResult run(CheckContext& ctx) const override;

 private:
  CheckInfo info_;
};

}  // namespace preflight
