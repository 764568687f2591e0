#pragma once
// Finding codes. Every finding the tool emits is made by make_finding from a code in a table, so
// its severity, blame and remediation are the documented ones. Each part of the tool declares
// its own table: a check in its folder (src/checks/<check>/<check>_findings.cpp), codes several
// checks emit in src/checks/common/, the runner in src/run/runner_findings.cpp. A check lists
// the tables it emits from in CheckInfo::findings; CheckRegistry::finding_catalogue() assembles
// them. Each table's page lists the same codes (docs/findings.md, "Codes by check";
// tests/unit/test_catalogue.cpp keeps them in step).
#include <string>
#include <string_view>
#include <vector>

#include "preflight/verdict.hpp"

namespace preflight {

struct FindingSpec {
  std::string_view code;
  Severity severity;
  Action action;  // the recommended action, required for every code
  std::string_view meaning;
  std::string_view remediation;
  Blame blame = Blame::node;
};

// The codes of one part of the tool and the page that documents them.
struct FindingTable {
  // Whose codes: the check's name ("gemm"), or what several checks share ("bandwidth",
  // "shared"), or "runner". The table's function is named after it: gemm_findings().
  std::string_view owner;
  std::string_view doc;  // "docs/checks/gemm.md": its "Finding codes" table lists them
  std::vector<FindingSpec> codes;

  const FindingSpec* find(std::string_view code) const;
};

// Every code of the binary: the runner's table and those of the registered checks.
class FindingCatalogue {
 public:
  FindingCatalogue() = default;
  // Each table once (a table several checks list is taken once). Throws std::logic_error for a
  // code in two tables.
  explicit FindingCatalogue(std::vector<const FindingTable*> tables);

  const std::vector<const FindingTable*>& tables() const { return tables_; }
  const FindingSpec* find(std::string_view code) const;
  // The table that holds `code`; nullptr when none does.
  const FindingTable* table_of(std::string_view code) const;

 private:
  std::vector<const FindingTable*> tables_;
};

// A finding with the code's severity, blame and remediation from `table`. Throws
// std::logic_error for a code missing from the table (a bug, caught by the tests).
Finding make_finding(const FindingTable& table, std::string_view code, std::string entity,
                     std::string message);

}  // namespace preflight
