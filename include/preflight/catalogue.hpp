#pragma once
// The catalogue of finding codes. Every finding the tool emits is made by make_finding from a
// code in this table, so its severity and remediation are the documented ones
// (docs/findings.md, checked by tests/unit/test_catalogue.cpp).
#include <string>
#include <string_view>
#include <vector>

#include "preflight/verdict.hpp"

namespace preflight {

// Whom a finding blames: the node (its hardware, driver, configuration), or the tool's own
// installation on it (the wrong package for the driver, a library it needs missing). A check
// whose failures all blame the tool has status error, so the verdict's exit code is 3, not 1:
// an admin fixes the package, not the node (docs/verdict.md).
enum class Blame { node, tool };

struct FindingSpec {
  std::string_view code;
  Severity severity;
  std::string_view meaning;
  std::string_view remediation;
  Blame blame = Blame::node;
};

const std::vector<FindingSpec>& finding_catalogue();
const FindingSpec* find_finding_spec(std::string_view code);

// Throws std::logic_error for a code missing from the catalogue (a bug, caught by the tests).
Finding make_finding(std::string_view code, std::string entity, std::string message);

}  // namespace preflight
