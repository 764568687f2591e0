// A fleet verdict (preflight.fleet/1, docs/fleet-verdict.md) as a section of the HTML report:
// what the rounds concluded first (lists, bad pairs, the exclude list), then every node, then
// the rounds that led there.
#include <string>

#include "report/html/html_common.hpp"
#include "report/html/html_sections.hpp"

namespace preflight::html {

namespace {

// "[2, 3]" from an array of ranks; a rank that is not an integer shows as "-".
std::string rank_list(const Json& ranks) {
  std::string out;
  for (const Json& r : ranks) out += (out.empty() ? "" : ", ") + format_integer(integer_of(r));
  return "[" + out + "]";
}

std::string host_cell(const Json& entry) {
  const std::string host = text(entry, "host");
  return host.empty() ? "<span class=\"none\">(no host name)</span>" : breakable(host);
}

std::string conclusions(const Json& doc) {
  std::string rows;
  const std::pair<const char*, const char*> lists[] = {
      {"faulty", "faulty"}, {"stragglers", "straggler"}, {"ambiguous", "ambiguous"}};
  for (const auto& [key, word] : lists) {
    for (const Json& e : array(doc, key)) {
      rows += "<tr><td>" + badge(word) + "</td><td class=\"num\">" +
              format_integer(integer(e, "rank")) + "</td><td class=\"host\">" + host_cell(e) +
              "</td><td>" + cell(text(e, "reason")) + "</td></tr>\n";
    }
  }
  std::string out = "<h3>Faulty, stragglers, ambiguous</h3>\n";
  if (rows.empty()) {
    out += "<p class=\"none\">No faulty, straggler or ambiguous node.</p>\n";
  } else {
    out +=
        "<table class=\"wide\"><thead><tr><th>Conclusion</th><th class=\"num\">Rank</th>"
        "<th>Host</th><th>Reason</th></tr></thead><tbody>\n" +
        rows + "</tbody></table>\n";
  }
  const Json& pairs = array(doc, "bad_pairs");
  out += "<h3>Bad pairs</h3>\n";
  if (pairs.empty()) return out + "<p class=\"none\">No bad pair.</p>\n";
  out +=
      "<table class=\"wide\"><thead><tr><th>Ranks</th><th>Hosts</th><th>Reason</th></tr>"
      "</thead><tbody>\n";
  for (const Json& p : pairs) {
    std::string hosts;
    for (const Json& h : array(p, "hosts")) {
      hosts += (hosts.empty() ? "" : " &ndash; ") + cell(text_of(h));
    }
    if (hosts.empty()) hosts = "<span class=\"none\">-</span>";
    out += "<tr><td class=\"nowrap\">" + rank_list(array(p, "ranks")) + "</td><td>" + hosts +
           "</td><td>" + cell(text(p, "reason")) + "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string figures_text(const Json& figures) {
  std::string out;
  for (auto it = figures.begin(); it != figures.end(); ++it) {
    out += (out.empty() ? "" : "<br>") + std::string("<span class=\"mono\">") +
           breakable(it.key()) + "</span> " + format_number(number_of(it.value()));
  }
  return out.empty() ? "<span class=\"none\">-</span>" : out;
}

std::string nodes_table(const Json& nodes) {
  std::string out = "<h3>Nodes</h3>\n";
  if (nodes.empty()) return out + "<p class=\"none\">No node.</p>\n";
  out +=
      "<table class=\"wide\"><thead><tr><th class=\"num\">Rank</th><th>Host</th>"
      "<th>Conclusion</th><th>Reasons</th><th>Local verdict</th><th class=\"num\">Exit</th>"
      "<th>Local reason and findings</th><th class=\"num\">Local time</th><th>Figures</th>"
      "</tr></thead><tbody>\n";
  for (const Json& n : nodes) {
    const Json& local = object(n, "local");
    std::string reasons;
    for (const Json& r : array(n, "reasons")) reasons += "<li>" + cell(text_of(r)) + "</li>";
    std::string findings;
    for (const Json& f : array(local, "findings")) {
      findings += (findings.empty() ? "" : ", ") + std::string("<span class=\"mono\">") +
                  cell(text_of(f)) + "</span>";
    }
    std::string local_text = cell(text(local, "reason"));
    if (!findings.empty()) local_text += "<br>" + findings;
    out += "<tr><td class=\"num\">" + format_integer(integer(n, "rank")) +
           "</td><td class=\"host\">" + host_cell(n) + "</td><td>" + badge(text(n, "verdict")) +
           "</td><td>" +
           (reasons.empty() ? "<span class=\"none\">-</span>"
                            : "<ul class=\"plain\">" + reasons + "</ul>") +
           "</td><td>" + badge(text(local, "verdict")) + "</td><td class=\"num\">" +
           format_integer(integer(local, "exit_code")) + "</td><td>" + local_text +
           "</td><td class=\"num\">" + format_seconds(number(local, "duration_s")) +
           "</td><td class=\"figs\">" + figures_text(object(local, "figures")) + "</td></tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string rounds_part(const Json& rounds) {
  std::string out = "<h3>Rounds</h3>\n";
  if (rounds.empty()) return out + "<p class=\"none\">No round ran.</p>\n";
  for (const Json& r : rounds) {
    const Json& groups = array(r, "groups");
    out += "<h4>Round " + format_integer(integer(r, "index")) + " <span class=\"meta\">" +
           count_of(groups.size(), "group", "groups") + "</span></h4>\n";
    if (groups.empty()) continue;
    out +=
        "<table><thead><tr><th>Ranks</th><th>Outcome</th><th class=\"num\">Bus bandwidth</th>"
        "<th class=\"num\">Duration</th><th>Detail</th></tr></thead><tbody>\n";
    for (const Json& g : groups) {
      const std::optional<double> busbw = number(g, "busbw_gbps");
      out += "<tr><td class=\"nowrap\">" + rank_list(array(g, "ranks")) + "</td><td>" +
             badge(text(g, "outcome")) + "</td><td class=\"num\">" + format_number(busbw) +
             (busbw ? " GB/s" : "") + "</td><td class=\"num\">" +
             format_seconds(number(g, "duration_s")) + "</td><td>" + cell(text(g, "detail")) +
             "</td></tr>\n";
    }
    out += "</tbody></table>\n";
  }
  return out;
}

}  // namespace

std::string fleet_section(const ReportDocument& document, std::size_t n) {
  const Json& doc = document.doc;
  const Json& nodes = array(doc, "nodes");
  const Json& tool = object(doc, "tool");
  std::string out = "<section class=\"doc\" id=\"" + section_id(n) + "\">\n<h2>" +
                    std::to_string(n) + ". Fleet of " + count_of(nodes.size(), "node", "nodes") +
                    " " + badge(text(doc, "verdict")) + "</h2>\n";
  const std::optional<bool> bound = boolean(doc, "bound_reached");
  out += "<p class=\"meta\"><span>exit code " + format_integer(integer(doc, "exit_code")) +
         "</span><span>started " + cell(text(doc, "started_at")) + "</span><span>took " +
         format_seconds(number(doc, "duration_s")) + "</span><span>transport " +
         cell(text(doc, "transport")) + "</span><span>local profile " +
         cell(text(doc, "local_profile")) + "</span><span>groups of " +
         format_integer(integer(doc, "group_size")) + "</span><span>round bound " +
         format_integer(integer(doc, "round_bound")) + (bound.value_or(false) ? " (reached)" : "") +
         "</span><span>timeout " + format_seconds(number(doc, "timeout_s")) + ", per group " +
         format_seconds(number(doc, "group_timeout_s")) + "</span><span>preflight " +
         cell(text(tool, "version")) + " (git " + cell(text(tool, "git")) +
         ")</span><span class=\"mono\">" + cell(document.path) + "</span></p>\n";
  if (is_drill(doc)) {
    std::string specs;
    for (const Json& s : array(doc, "injected_faults")) {
      specs += (specs.empty() ? "" : ", ") + std::string("<code>") + cell(text_of(s)) + "</code>";
    }
    out += "<div class=\"banner\">" + drill_badge() +
           " <strong>Drill:</strong> this fleet run injected faults: " + specs + ".</div>\n";
  }
  out += "<p class=\"reason\">Reason: " + cell(text(doc, "reason")) + "</p>\n";
  const std::string exclude = text(doc, "exclude");
  out += "<p><strong>Exclude</strong> (for <code>sbatch --exclude</code>): " +
         (exclude.empty() ? std::string("<span class=\"none\">none</span>")
                          : "<code>" + escape(exclude) + "</code>") +
         "</p>\n";
  const Json& notes = array(doc, "notes");
  if (!notes.empty()) {
    out += "<h3>Notes</h3>\n<ul>";
    for (const Json& note : notes) out += "<li>" + cell(text_of(note)) + "</li>";
    out += "</ul>\n";
  }
  out += conclusions(doc);
  out += nodes_table(nodes);
  out += rounds_part(array(doc, "rounds"));
  out += command_line_details(doc, "Command line (rank 0)") + "</section>\n";
  return out;
}

}  // namespace preflight::html
