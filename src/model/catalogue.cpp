#include "preflight/catalogue.hpp"

#include <algorithm>
#include <stdexcept>

namespace preflight {

const FindingSpec* FindingTable::find(std::string_view code) const {
  for (const FindingSpec& spec : codes) {
    if (spec.code == code) return &spec;
  }
  return nullptr;
}

FindingCatalogue::FindingCatalogue(std::vector<const FindingTable*> tables) {
  for (const FindingTable* table : tables) {
    if (table == nullptr) throw std::logic_error("finding catalogue: null table");
    if (std::find(tables_.begin(), tables_.end(), table) != tables_.end()) continue;
    for (const FindingSpec& spec : table->codes) {
      if (const FindingTable* other = table_of(spec.code)) {
        throw std::logic_error("finding code " + std::string(spec.code) + " is declared by " +
                               std::string(other->owner) + " and " + std::string(table->owner));
      }
    }
    tables_.push_back(table);
  }
}

const FindingTable* FindingCatalogue::table_of(std::string_view code) const {
  for (const FindingTable* table : tables_) {
    if (table->find(code) != nullptr) return table;
  }
  return nullptr;
}

const FindingSpec* FindingCatalogue::find(std::string_view code) const {
  const FindingTable* table = table_of(code);
  return table == nullptr ? nullptr : table->find(code);
}

Finding make_finding(const FindingTable& table, std::string_view code, std::string entity,
                     std::string message) {
  const FindingSpec* spec = table.find(code);
  if (spec == nullptr) {
    throw std::logic_error("finding code " + std::string(code) + " is not in the table of " +
                           std::string(table.owner));
  }
  Finding f;
  f.code = std::string(spec->code);
  f.severity = spec->severity;
  f.blame = spec->blame;
  f.action = spec->action;
  f.entity = std::move(entity);
  f.message = std::move(message);
  f.remediation = std::string(spec->remediation);
  return f;
}

}  // namespace preflight
