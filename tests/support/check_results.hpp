#pragma once
// What the tests of several checks share, one definition each: thresholds of a known SKU, a
// check's findings and metrics looked up or written out for comparison, options from flag pairs.
// (The unit tests are one unity build in CI, where copies of a helper in several sources clash.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "preflight/check.hpp"
#include "preflight/thresholds.hpp"
#include "preflight/verdict.hpp"
#include "support/builtin_thresholds.hpp"

namespace preflight::test {

// Plan estimates are sums of doubles: compared to this margin, in seconds.
inline constexpr double kEps = 1e-9;

// The built-in figures of a SKU, by id or name, as --sku would give them.
inline Thresholds sku(const char* id) {
  return builtin_thresholds(find_sku(id), "test");
}

inline const Thresholds& h100() {
  static const Thresholds t = builtin_thresholds(find_sku("h100-sxm5-80gb"), "test");
  return t;
}

// "CODE@entity" of each finding, so that a whole list compares at once.
inline std::set<std::string> codes(const std::vector<Finding>& findings) {
  std::set<std::string> out;
  for (const Finding& f : findings) out.insert(f.code + "@" + f.entity);
  return out;
}

inline std::set<std::string> findings(const CheckResult& r) {
  return codes(r.findings);
}

inline bool has_metric(const CheckResult& r, const std::string& key) {
  return std::any_of(r.metrics.begin(), r.metrics.end(),
                     [&](const Metric& m) { return m.key() == key; });
}

inline const CheckResult& check_of(const Verdict& v, const std::string& name) {
  for (const auto& c : v.checks) {
    if (c.name == name) return c;
  }
  FAIL("no check " << name);
  return v.checks.front();
}

// Check options as the command line sets them: ("--gemm-dtypes", "fp16") pairs, in order.
inline CheckOptions options_of(const std::vector<std::pair<std::string, std::string>>& pairs) {
  CheckOptions o;
  for (const auto& [flag, value] : pairs) o.set(flag, value);
  return o;
}

}  // namespace preflight::test
