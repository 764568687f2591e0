// The catalogue, its documentation and the code that emits findings must agree: a finding code
// that is emitted but not catalogued (or not documented) fails here.
#include <dirent.h>
#include <sys/stat.h>
#include <catch2/catch.hpp>

#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

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

// The first argument of every make_finding( call in the sources, as text.
std::vector<std::pair<std::string, std::string>> make_finding_first_args() {
  std::vector<std::string> files;
  collect_sources(std::string(PREFLIGHT_SOURCE_DIR) + "/src", files);
  std::vector<std::pair<std::string, std::string>> args;
  for (const auto& file : files) {
    const std::string text = slurp(file);
    const std::string needle = "make_finding(";
    for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) {
      // Skip the declaration/definition: "Finding make_finding(std::string_view code, ...".
      std::size_t i = pos + needle.size();
      int depth = 0;
      std::string arg;
      for (; i < text.size(); ++i) {
        const char c = text[i];
        if ((c == ',' || c == ')') && depth == 0) break;
        if (c == '(') ++depth;
        if (c == ')') --depth;
        arg += c;
      }
      if (arg.find("std::string_view") != std::string::npos) continue;
      args.emplace_back(file, arg);
    }
  }
  return args;
}

}  // namespace

TEST_CASE("catalogue: codes are unique, well formed and fully described") {
  std::set<std::string> seen;
  for (const auto& spec : finding_catalogue()) {
    const std::string code(spec.code);
    INFO(code);
    CHECK(seen.insert(code).second);
    CHECK(std::regex_match(code, std::regex("[A-Z][A-Z0-9]*(_[A-Z0-9]+)+")));
    CHECK(spec.meaning.size() > 10);
    CHECK(spec.remediation.size() > 5);
  }
  CHECK(seen.size() >= 30);
}

TEST_CASE("catalogue: make_finding fills severity and remediation, and rejects unknown codes") {
  const Finding f = make_finding("MIG_ENABLED", "gpu1", "MIG mode is on");
  CHECK(f.severity == Severity::fail);
  CHECK(f.entity == "gpu1");
  CHECK_FALSE(f.remediation.empty());
  CHECK_THROWS_AS(make_finding("NOT_A_CODE", "node", "x"), std::logic_error);
}

TEST_CASE("catalogue: docs/findings.md documents exactly the catalogue, with the same severities") {
  const std::string doc = slurp(std::string(PREFLIGHT_SOURCE_DIR) + "/docs/findings.md");
  REQUIRE_FALSE(doc.empty());
  std::map<std::string, std::string> documented;
  const std::regex row(R"(^\|\s*`([A-Z0-9_]+)`\s*\|\s*(info|warn|fail)\s*\|)");
  std::istringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) documented[m[1]] = m[2];
  }
  for (const auto& spec : finding_catalogue()) {
    const std::string code(spec.code);
    INFO("catalogue code " << code);
    REQUIRE(documented.count(code) == 1);
    CHECK(documented[code] == std::string(to_string(spec.severity)));
  }
  for (const auto& [code, severity] : documented) {
    INFO("documented code " << code);
    CHECK(find_finding_spec(code) != nullptr);
  }
}

TEST_CASE("catalogue: every code the sources emit is catalogued, and every code is emitted") {
  std::set<std::string> emitted;
  const std::regex literal("\"([A-Z][A-Z0-9_]*)\"");
  for (const auto& [file, arg] : make_finding_first_args()) {
    INFO(file << ": make_finding(" << arg);
    auto begin = std::sregex_iterator(arg.begin(), arg.end(), literal);
    // A code held in a variable could not be checked here: codes are written as literals.
    REQUIRE(begin != std::sregex_iterator());
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      const std::string code = (*it)[1];
      INFO(code);
      CHECK(find_finding_spec(code) != nullptr);
      emitted.insert(code);
    }
  }
  for (const auto& spec : finding_catalogue()) {
    INFO("catalogued but never emitted: " << spec.code);
    CHECK(emitted.count(std::string(spec.code)) == 1);
  }
}

TEST_CASE("catalogue: fault kinds promise only catalogued codes") {
  CheckRegistry registry;
  register_builtin_checks(registry);
  for (const auto& kind : registry.fault_kinds()) {
    for (const auto& code : kind.codes) {
      INFO(kind.kind << " -> " << code);
      CHECK(find_finding_spec(code) != nullptr);
    }
  }
}
