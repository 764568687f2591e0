#pragma once
// The catalogue of finding codes. Every finding the tool emits is made by make_finding from a
// code in this table, so its severity and remediation are the documented ones
// (docs/findings.md, checked by tests/unit/test_catalogue.cpp).
#include <string>
#include <string_view>
#include <vector>

#include "preflight/verdict.hpp"

namespace preflight {

struct FindingSpec {
  std::string_view code;
  Severity severity;
  std::string_view meaning;
  std::string_view remediation;
};

const std::vector<FindingSpec>& finding_catalogue();
const FindingSpec* find_finding_spec(std::string_view code);

// Throws std::logic_error for a code missing from the catalogue (a bug, caught by the tests).
Finding make_finding(std::string_view code, std::string entity, std::string message);

}  // namespace preflight
