#include "report/report_documents.hpp"

#include <unistd.h>

#include <initializer_list>

#include "model/bounded_input.hpp"
#include "preflight/errors.hpp"
#include "preflight/verdict.hpp"
#include "report/linear_json.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// read_bounded_file with report's messages: "report: PATH: PROBLEM". A file that cannot be
// opened has always been "cannot be read" here, and scripts and tests match that wording.
std::string read_report_file(const std::string& path) {
  try {
    return read_bounded_file(path, kMaxReportDocumentBytes);
  } catch (const InvalidInput& e) {
    const std::string name = printable(path);
    std::string problem = e.what();
    if (problem.compare(0, name.size() + 2, name + ": ") == 0) problem.erase(0, name.size() + 2);
    const std::string cannot_open = "cannot open: ";
    if (problem.compare(0, cannot_open.size(), cannot_open) == 0) {
      problem.replace(0, cannot_open.size(), "cannot be read: ");
    }
    throw InvalidInput("report: " + name + ": " + problem);
  }
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag, on one short line.
std::string parser_message(const nlohmann::json::exception& e) {
  std::string what = e.what();
  const std::size_t bracket = what.find("] ");
  if (bracket != std::string::npos) what.erase(0, bracket + 2);
  return printable(what, 200);
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
  // Nesting is bounded by the reader, so dump's recursion is too; a string that is not UTF-8
  // (possible only in a document built in memory) is written with U+FFFD, never thrown on.
  return it->dump(-1, ' ', false, Json::error_handler_t::replace);
}

bool has_entries(const Json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_array() && !it->empty();
}

std::size_t count_of(const Json& doc, const char* key) {
  const auto it = doc.find(key);
  return it != doc.end() && it->is_array() ? it->size() : 0;
}

bool is_check_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-' || c == '.';
    if (!word) return false;
  }
  return true;
}

// The names of the node verdict's checks whose status is one of STATUSES, comma-separated, in
// the verdict's order. The Slurm health check compares them with what a failed prolog found
// (docs/slurm.md): a name that could not be a check's (a comma, a blank, 65 characters) is left
// out rather than let it split the list.
std::string checks_with_status(const Json& doc, std::initializer_list<const char*> statuses) {
  std::string out;
  const auto checks = doc.find("checks");
  if (checks == doc.end() || !checks->is_array()) return out;
  for (const Json& check : *checks) {
    if (!check.is_object()) continue;
    const auto name_field = check.find("name");
    if (name_field == check.end() || !name_field->is_string()) continue;
    const std::string name = name_field->get<std::string>();
    const std::string status = text_of(check, "status");
    bool wanted = false;
    for (const char* s : statuses) wanted = wanted || status == s;
    if (!wanted || !is_check_name(name)) continue;
    out += (out.empty() ? "" : ",") + name;
  }
  return out;
}

}  // namespace

ReportDocument parse_report_document(std::string_view text, const std::string& origin) {
  const std::string name = printable(origin);
  // nlohmann's parser keeps its own stack, but dump() and the destructor's helpers recurse:
  // a document of 60000 '[' must be refused before it is a tree.
  if (json_nesting_depth(text, kMaxReportDocumentNesting) > kMaxReportDocumentNesting) {
    throw InvalidInput("report: " + name + ": nesting deeper than " +
                       std::to_string(kMaxReportDocumentNesting) + " levels");
  }
  ReportDocument d;
  d.path = origin;
  try {
    d.doc = parse_ordered_json(text);
  } catch (const Json::parse_error& e) {
    throw InvalidInput("report: " + name + ": not JSON (" + parser_message(e) + ")");
  } catch (const nlohmann::json::exception& e) {
    // Valid JSON the parser cannot hold: a number beyond a double (1e400) is out_of_range.
    throw InvalidInput("report: " + name + ": unreadable JSON (" + parser_message(e) + ")");
  }
  if (!d.doc.is_object()) throw InvalidInput("report: " + name + ": not a JSON object");
  const std::string schema = text_of(d.doc, "schema");
  if (schema == kVerdictSchema) {
    d.kind = DocumentKind::node_verdict;
  } else if (schema == kFleetSchema) {
    d.kind = DocumentKind::fleet_verdict;
  } else {
    throw InvalidInput("report: " + name + ": unknown schema '" + printable(schema) +
                       "' (known: " + std::string(kVerdictSchema) + ", " + kFleetSchema + ")");
  }
  return d;
}

ReportDocument load_report_document(const std::string& path) {
  const bool from_stdin = path == "-";
  const std::string text =
      from_stdin ? read_bounded_descriptor(STDIN_FILENO, "report: stdin", kMaxReportDocumentBytes)
                 : read_report_file(path);
  // Messages say "stdin"; the page and the `file` line keep "-" as it was given.
  ReportDocument d = parse_report_document(text, from_stdin ? std::string("stdin") : path);
  d.path = path;
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
  // What the Slurm hooks act on beyond draining (PREFLIGHT_REBOOT_ON_ACTION); empty from a
  // verdict of a version before it.
  if (!fleet) field("action", text_of(doc, "action"));
  field("injected", has_entries(doc, "injected_faults") ? "1" : "0");
  if (!fleet) {
    field("checks_ok", checks_with_status(doc, {"pass", "warn"}));
    field("checks_failed", checks_with_status(doc, {"fail"}));
  }
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
