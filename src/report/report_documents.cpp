#include "report/report_documents.hpp"

#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "preflight/errors.hpp"
#include "preflight/verdict.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

std::string read_all(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput("report: " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InvalidInput("report: " + path + ": read error");
  return text.str();
}

// One value per line: a tab or newline inside a value would split it for `read`/awk.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return text;
}

std::string text_of(const Json& doc, const char* key) {
  const auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

bool has_entries(const Json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_array() && !it->empty();
}

std::size_t count_of(const Json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_array() ? it->size() : 0;
}

}  // namespace

ReportDocument load_report_document(const std::string& path) {
  ReportDocument d;
  d.path = path;
  const std::string text = read_all(path);
  try {
    d.doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw InvalidInput("report: " + path + ": not JSON (" + e.what() + ")");
  }
  if (!d.doc.is_object()) throw InvalidInput("report: " + path + ": not a JSON object");
  const std::string schema = text_of(d.doc, "schema");
  if (schema == kVerdictSchema) {
    d.kind = DocumentKind::node_verdict;
  } else if (schema == kFleetSchema) {
    d.kind = DocumentKind::fleet_verdict;
  } else {
    throw InvalidInput("report: " + path + ": unknown schema '" + one_line(schema) +
                       "' (known: " + std::string(kVerdictSchema) + ", " + kFleetSchema + ")");
  }
  return d;
}

std::string report_fields_tsv(const ReportDocument& document) {
  const Json& doc = document.doc;
  std::string out;
  const auto field = [&out](const std::string& key, const std::string& value) {
    out += key + '\t' + one_line(value) + '\n';
  };
  field("file", document.path);
  field("schema", text_of(doc, "schema"));
  const bool fleet = document.kind == DocumentKind::fleet_verdict;
  field("kind", fleet ? "fleet" : "node");
  if (!fleet) field("host", text_of(doc, "host"));
  field("started_at", text_of(doc, "started_at"));
  field("duration_s", text_of(doc, "duration_s"));
  field("profile", text_of(doc, fleet ? "local_profile" : "profile"));
  field("verdict", text_of(doc, "verdict"));
  field("exit_code", text_of(doc, "exit_code"));
  field("reason", text_of(doc, "reason"));
  field("injected", has_entries(doc, "injected_faults") ? "1" : "0");
  if (fleet) {
    std::size_t healthy = 0;
    if (const auto nodes = doc.find("nodes"); nodes != doc.end() && nodes->is_array()) {
      for (const Json& n : *nodes) {
        if (n.is_object() && text_of(n, "verdict") == "healthy") ++healthy;
      }
    }
    field("transport", text_of(doc, "transport"));
    field("nodes", std::to_string(count_of(doc, "nodes")));
    field("healthy", std::to_string(healthy));
    field("faulty", std::to_string(count_of(doc, "faulty")));
    field("stragglers", std::to_string(count_of(doc, "stragglers")));
    field("ambiguous", std::to_string(count_of(doc, "ambiguous")));
    field("bad_pairs", std::to_string(count_of(doc, "bad_pairs")));
    field("exclude", text_of(doc, "exclude"));
  }
  return out;
}

}  // namespace preflight
