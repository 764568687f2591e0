#include "preflight/catalogue.hpp"

#include <stdexcept>

namespace preflight {

// Defined in catalogue_entries.cpp: the table itself, kept apart from the lookup code.
const std::vector<FindingSpec>& finding_catalogue_entries();

const std::vector<FindingSpec>& finding_catalogue() {
  return finding_catalogue_entries();
}

const FindingSpec* find_finding_spec(std::string_view code) {
  for (const auto& spec : finding_catalogue()) {
    if (spec.code == code) return &spec;
  }
  return nullptr;
}

Finding make_finding(std::string_view code, std::string entity, std::string message) {
  const FindingSpec* spec = find_finding_spec(code);
  if (spec == nullptr) {
    throw std::logic_error("finding code " + std::string(code) + " is not in the catalogue");
  }
  Finding f;
  f.code = std::string(spec->code);
  f.severity = spec->severity;
  f.entity = std::move(entity);
  f.message = std::move(message);
  f.remediation = std::string(spec->remediation);
  return f;
}

}  // namespace preflight
