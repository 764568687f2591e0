// The finding tables, their documentation and the code that emits findings must agree: a code
// that is emitted but not declared by the table the call names, declared twice, or not
// documented on its table's page fails here.
#include <dirent.h>
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "checks/common/findings.hpp"
#include "checks/gemm/gemm_findings.hpp"
#include "checks/inventory/inventory_findings.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"

using namespace preflight;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void collect_sources(const std::string& dir, std::vector<std::string>& out) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      collect_sources(path, out);
    } else if (std::regex_search(name, std::regex(R"(\.(cpp|hpp|cu|cuh)$)"))) {
      out.push_back(path);
    }
  }
  closedir(d);
}

// Every make_finding( call in the sources: its file and its first two arguments, as text.
struct FindingCall {
  std::string file;   // relative to the source tree: "src/checks/gemm/gemm_judge.cpp"
  std::string table;  // "gemm_findings()"
  std::string code;   // the second argument: a literal, or a choice between literals
};

std::vector<std::string> call_arguments(const std::string& text, std::size_t i, int count) {
  std::vector<std::string> args(1);
  int depth = 0;
  for (; i < text.size() && static_cast<int>(args.size()) <= count; ++i) {
    const char c = text[i];
    if (c == '"') {  // a literal may hold commas and parentheses
      const std::size_t end = text.find('"', i + 1);
      args.back() += text.substr(i, end - i + 1);
      i = end;
      continue;
    }
    if (depth == 0 && (c == ',' || c == ')')) {
      if (c == ')') break;
      args.emplace_back();
      continue;
    }
    if (c == '(') ++depth;
    if (c == ')') --depth;
    args.back() += c;
  }
  for (auto& a : args) a = std::regex_replace(a, std::regex(R"(^\s+|\s+$)"), "");
  args.resize(count);
  return args;
}

std::vector<FindingCall> make_finding_calls() {
  const std::string root = PREFLIGHT_SOURCE_DIR;
  std::vector<std::string> files;
  collect_sources(root + "/src", files);
  std::vector<FindingCall> calls;
  for (const auto& file : files) {
    const std::string text = slurp(file);
    const std::string needle = "make_finding(";
    for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
      const auto args = call_arguments(text, pos + needle.size(), 2);
      // The declaration and definition: "Finding make_finding(const FindingTable& table, ...".
      if (args[0].find("FindingTable") != std::string::npos) continue;
      calls.push_back({file.substr(root.size() + 1), args[0], args[1]});
    }
  }
  return calls;
}

std::vector<std::string> codes_in(const std::string& text) {
  std::vector<std::string> codes;
  const std::regex literal("\"([A-Z][A-Z0-9_]*)\"");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), literal);
       it != std::sregex_iterator(); ++it) {
    codes.push_back((*it)[1]);
  }
  return codes;
}

// The header every "Finding codes" table has: the action is its third column.
constexpr const char* kCodesHeader = "| Code | Severity | Action | Meaning | Remediation |";

// The table rows of a docs page: code -> "severity action", in the form
// "| `CODE` | fail | reset_gpu | ...". A row without the Action column reads as its meaning's
// first word, so it differs from the table's action.
std::map<std::string, std::string> documented_codes(const std::string& page) {
  std::map<std::string, std::string> documented;
  const std::regex row(R"(^\|\s*`([A-Z0-9_]+)`\s*\|\s*(info|warn|fail)\s*\|\s*([^|\s]*))");
  std::istringstream lines(slurp(std::string(PREFLIGHT_SOURCE_DIR) + "/" + page));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) {
      INFO(page << ": " << m[1].str() << " documented twice");
      CHECK(documented.emplace(m[1], m[2].str() + " " + m[3].str()).second);
    }
  }
  return documented;
}

std::string severity_and_action(const FindingSpec& spec) {
  return std::string(to_string(spec.severity)) + " " + std::string(to_string(spec.action));
}

FindingCatalogue builtin_catalogue() {
  CheckRegistry registry;
  register_builtin_checks(registry);
  return registry.finding_catalogue();
}

}  // namespace

TEST_CASE("catalogue: codes are unique, well formed and fully described") {
  std::set<std::string> seen;
  const FindingCatalogue catalogue = builtin_catalogue();
  for (const FindingTable* table : catalogue.tables()) {
    for (const auto& spec : table->codes) {
      const std::string code(spec.code);
      INFO(table->owner << ": " << code);
      CHECK(seen.insert(code).second);
      CHECK(std::regex_match(code, std::regex("[A-Z][A-Z0-9]*(_[A-Z0-9]+)+")));
      CHECK(spec.meaning.size() > 10);
      CHECK(spec.remediation.size() > 5);
    }
  }
  CHECK(seen.size() >= 30);
}

TEST_CASE("catalogue: a code declared by two tables is refused when the check registers") {
  static const FindingTable stolen{"thief",
                                   "docs/findings.md",
                                   {{"MIG_ENABLED", Severity::warn, Action::none,
                                     "declared again here", "none, this is a test"}}};
  class Thief final : public Check {
   public:
    Thief() {
      info_.name = "thief";
      info_.findings = {&stolen};
    }
    const CheckInfo& info() const override { return info_; }
    CheckResult run(CheckContext&) const override { return {}; }

   private:
    CheckInfo info_;
  };
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto before = registry.names().size();
  CHECK_THROWS_AS(registry.add(std::make_unique<Thief>()), std::logic_error);
  CHECK(registry.names().size() == before);
}

TEST_CASE("catalogue: make_finding fills severity, blame and remediation from the table it names") {
  const Finding f = make_finding(inventory_findings(), "MIG_ENABLED", "gpu1", "MIG mode is on");
  CHECK(f.severity == Severity::fail);
  CHECK(f.blame == Blame::node);
  CHECK(f.entity == "gpu1");
  CHECK_FALSE(f.remediation.empty());
  CHECK(make_finding(shared_findings(), "TOOL_LIBRARY_MISSING", "node", "x").blame == Blame::tool);
  CHECK_THROWS_AS(make_finding(inventory_findings(), "NOT_A_CODE", "node", "x"), std::logic_error);
  // A code of another table is a bug too: each part of the tool emits its own codes.
  CHECK_THROWS_AS(make_finding(gemm_findings(), "MIG_ENABLED", "gpu1", "x"), std::logic_error);
}

TEST_CASE("catalogue: each check's own codes are its first table, documented on its page") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  for (const Check* check : registry.all()) {
    const CheckInfo& info = check->info();
    INFO(info.name);
    REQUIRE_FALSE(info.findings.empty());
    CHECK(info.findings.front()->owner == info.name);
    CHECK(info.findings.front()->doc == "docs/checks/" + info.name + ".md");
  }
}

TEST_CASE("catalogue: each page lists exactly the codes of the tables it documents") {
  const FindingCatalogue catalogue = builtin_catalogue();
  // page -> code -> "severity action"
  std::map<std::string, std::map<std::string, std::string>> expected;
  for (const FindingTable* table : catalogue.tables()) {
    auto& page = expected[std::string(table->doc)];
    for (const auto& spec : table->codes) page[std::string(spec.code)] = severity_and_action(spec);
  }
  // Every page of docs/: a code's row appears once, on the page of its table.
  std::vector<std::string> pages;
  const std::string root = PREFLIGHT_SOURCE_DIR;
  for (const std::string dir : {"docs", "docs/checks"}) {
    DIR* d = opendir((root + "/" + dir).c_str());
    REQUIRE(d != nullptr);
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 3 && name.substr(name.size() - 3) == ".md")
        pages.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  for (const auto& [page, codes] : expected) {
    INFO(page);
    CHECK(std::find(pages.begin(), pages.end(), page) != pages.end());
    // Every table of codes on it has the Action column (docs/findings.md, "Recommended action").
    std::istringstream lines(slurp(root + "/" + page));
    std::size_t tables = 0;
    bool all_with_action = true;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("| Code | Severity |", 0) != 0) continue;
      ++tables;
      all_with_action = all_with_action && line == kCodesHeader;
    }
    CHECK(tables > 0);
    CHECK(all_with_action);
  }
  for (const auto& page : pages) {
    INFO(page);
    const auto it = expected.find(page);
    const std::map<std::string, std::string> none;
    const std::map<std::string, std::string>& want = it == expected.end() ? none : it->second;
    const std::map<std::string, std::string> documented = documented_codes(page);
    // Row by row, so that a failure names the code and both sides.
    for (const auto& [code, row] : want) {
      const auto at = documented.find(code);
      INFO(code << ": the table says \"" << row << "\", the page \""
                << (at == documented.end() ? std::string("nothing") : at->second) << "\"");
      CHECK((at != documented.end() && at->second == row));
    }
    for (const auto& [code, row] : documented) {
      INFO(code << " is on the page but in none of the tables documented there");
      CHECK(want.count(code) == 1);
    }
  }
}

TEST_CASE(
    "catalogue: every code in the catalogue has a recommended action, and a fail that blames the "
    "node asks for more than none") {
  // The fail codes that blame the node and still ask for nothing of it: the run was cut short or
  // the tool failed (their cause, a hung GPU, has a finding of its own), a drill tested nothing,
  // or a setting is wrong that no reset, reboot or repair changes. Adding one here is a decision,
  // not a default: docs/findings.md, "Recommended action".
  const std::set<std::string> fail_without_action = {"CHECK_INTERRUPTED",    "CHECK_ERROR",
                                                     "RUN_INCOMPLETE",       "RUN_INTERRUPTED",
                                                     "FAULT_TARGET_MISSING", "RDMA_NO_GID"};
  const auto mentions = [](std::string_view text, const char* word) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower.find(word) != std::string::npos;
  };
  std::set<std::string> found_without_action;
  const FindingCatalogue catalogue = builtin_catalogue();
  for (const FindingTable* table : catalogue.tables()) {
    for (const FindingSpec& spec : table->codes) {
      const std::string code(spec.code);
      INFO(table->owner << ": " << code << " asks for " << to_string(spec.action));
      // One of the five, spelled as the verdict writes it.
      const std::optional<Action> parsed = parse_action(to_string(spec.action));
      REQUIRE(parsed.has_value());
      CHECK(*parsed == spec.action);
      if (spec.blame == Blame::tool) {
        // Fix the package, not the node.
        CHECK(spec.action == Action::none);
      } else if (spec.severity == Severity::fail) {
        if (spec.action == Action::none) found_without_action.insert(code);
      } else {
        // A node that stays in service (info, warn) is not reset, rebooted or repaired.
        CHECK(spec.action <= Action::restart_job);
      }
      // A hang is cleared by a reset or a reboot, never by nothing nor only by a person.
      if (code.size() > 8 && code.substr(code.size() - 8) == "_TIMEOUT") {
        CHECK((spec.action == Action::reset_gpu || spec.action == Action::reboot));
      }
      // What pends until a reset asks for one.
      if (code.find("_PENDING") != std::string::npos) CHECK(spec.action == Action::reset_gpu);
      // The remediation says the same as the action.
      if (spec.action == Action::reset_gpu) CHECK(mentions(spec.remediation, "reset"));
      if (spec.action == Action::reboot) CHECK(mentions(spec.remediation, "reboot"));
    }
  }
  CHECK(found_without_action == fail_without_action);
}

TEST_CASE("catalogue: docs/findings.md's index lists every code documented on another page") {
  const std::string doc = slurp(std::string(PREFLIGHT_SOURCE_DIR) + "/docs/findings.md");
  const FindingCatalogue catalogue = builtin_catalogue();
  for (const FindingTable* table : catalogue.tables()) {
    if (table->doc == "docs/findings.md") continue;
    INFO(table->owner);
    // "- [gemm](checks/gemm.md#finding-codes): `GEMM_NAN_INF`, ...": the codes in table order.
    const std::string link = "](" + std::string(table->doc.substr(5)) + "#finding-codes): ";
    const auto at = doc.find(link);
    REQUIRE(at != std::string::npos);
    const auto start = at + link.size();
    const std::string line = doc.substr(start, doc.find('\n', start) - start);
    std::vector<std::string> listed;
    const std::regex quoted("`([A-Z0-9_]+)`");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), quoted);
         it != std::sregex_iterator(); ++it) {
      listed.push_back((*it)[1]);
    }
    std::vector<std::string> declared;
    for (const auto& spec : table->codes) declared.emplace_back(spec.code);
    CHECK(listed == declared);
  }
}

TEST_CASE("catalogue: every code is emitted from its owner's folder, through the table it is in") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const FindingCatalogue catalogue = registry.finding_catalogue();
  std::set<std::string> emitted;
  for (const FindingCall& call : make_finding_calls()) {
    INFO(call.file << ": make_finding(" << call.table << ", " << call.code);
    const std::smatch m = [&] {
      std::smatch match;
      std::regex_match(call.table, match, std::regex(R"(([a-z]+)_findings\(\))"));
      return match;
    }();
    // The table is named by its function, so the code's owner can be read from the call.
    REQUIRE_FALSE(m.empty());
    const std::string owner = m[1];
    const FindingTable* table = nullptr;
    for (const FindingTable* t : catalogue.tables()) {
      if (t->owner == owner) table = t;
    }
    REQUIRE(table != nullptr);
    // Codes are literals, so that this test can check them.
    const auto codes = codes_in(call.code);
    REQUIRE_FALSE(codes.empty());
    for (const auto& code : codes) {
      INFO(code);
      CHECK(table->find(code) != nullptr);
      emitted.insert(code);
    }
    // Who may emit from which table: the runner its own; the learned limits theirs; a check its
    // own and the shared tables it lists; checks/common/ only shared tables.
    std::smatch folder;
    if (call.file.rfind("src/run/", 0) == 0) {
      CHECK(owner == "runner");
    } else if (call.file.rfind("src/learned/", 0) == 0) {
      CHECK(owner == "learned");
    } else if (std::regex_search(call.file, folder, std::regex("^src/checks/([a-z]+)/"))) {
      const std::string name = folder[1];
      if (name == "common") {
        CHECK(registry.find(owner) == nullptr);
        CHECK(owner != "runner");
      } else {
        const Check* check = registry.find(name);
        REQUIRE(check != nullptr);
        const auto& listed = check->info().findings;
        CHECK(std::find(listed.begin(), listed.end(), table) != listed.end());
      }
    } else {
      FAIL("make_finding outside src/run, src/learned and src/checks");
    }
  }
  for (const FindingTable* table : catalogue.tables()) {
    for (const auto& spec : table->codes) {
      INFO("catalogued but never emitted: " << spec.code);
      CHECK(emitted.count(std::string(spec.code)) == 1);
    }
  }
}

TEST_CASE("catalogue: fault kinds promise only catalogued codes") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const FindingCatalogue catalogue = registry.finding_catalogue();
  for (const auto& kind : registry.fault_kinds()) {
    for (const auto& code : kind.codes) {
      INFO(kind.kind << " -> " << code);
      CHECK(catalogue.find(code) != nullptr);
    }
  }
}
