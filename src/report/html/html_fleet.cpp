// A fleet verdict (preflight.fleet/1, docs/fleet-verdict.md) as a section of the HTML report:
// what the rounds concluded first (lists, bad pairs, the exclude list), then every node, then
// the rounds that led there.
#include <string>

#include "report/html/html_common.hpp"
#include "report/html/html_sections.hpp"

namespace preflight::html {

namespace {

constexpr std::size_t kMaxExcludeBytes = std::size_t{1} << 20;

// "[2, 3]" from an array of ranks; a rank that is not an integer shows as "-".
std::string rank_list(const Json& ranks) {
  std::string out;
  std::size_t shown = 0;
  for (; shown < ranks.size() && shown < kMaxCellItems; ++shown) {
    out += (out.empty() ? "" : ", ") + format_integer(integer_of(ranks[shown]));
  }
  return "[" + out + "]" + more_in_cell(ranks.size() - shown);
}

std::string host_cell(const Json& entry) {
  const std::string host = text(entry, "host");
  return host.empty() ? "<span class=\"none\">(no host name)</span>" : breakable(host);
}

std::string conclusions(const Json& doc, PageBudget& budget) {
  std::string rows;
  std::size_t total = 0;
  Rows shown(budget, budget.max_rows());
  const std::pair<const char*, const char*> lists[] = {
      {"faulty", "faulty"}, {"stragglers", "straggler"}, {"ambiguous", "ambiguous"}};
  for (const auto& [key, word] : lists) {
    const Json& entries = array(doc, key);
    total += entries.size();
    for (const Json& e : entries) {
      if (!shown.open()) break;
      shown.add(rows, "<tr><td>" + badge(word) + "</td><td class=\"num\">" +
                          format_integer(integer(e, "rank")) + "</td><td class=\"host\">" +
                          host_cell(e) + "</td><td>" + cell(text(e, "reason")) + "</td></tr>\n");
    }
  }
  std::string out = "<h3>Faulty, stragglers, ambiguous</h3>\n";
  if (total == 0) {
    out += "<p class=\"none\">No faulty, straggler or ambiguous node.</p>\n";
  } else {
    out +=
        "<table class=\"wide\"><thead><tr><th>Conclusion</th><th class=\"num\">Rank</th>"
        "<th>Host</th><th>Reason</th></tr></thead><tbody>\n" +
        rows + shown.more_row(total, 4) + "</tbody></table>\n";
  }
  const Json& pairs = array(doc, "bad_pairs");
  out += "<h3>Bad pairs</h3>\n";
  if (pairs.empty()) return out + "<p class=\"none\">No bad pair.</p>\n";
  out +=
      "<table class=\"wide\"><thead><tr><th>Ranks</th><th>Hosts</th><th>Reason</th></tr>"
      "</thead><tbody>\n";
  Rows pair_rows(budget, budget.max_rows());
  for (const Json& p : pairs) {
    if (!pair_rows.open()) break;
    const Json& names = array(p, "hosts");
    std::string hosts;
    std::size_t named = 0;
    for (; named < names.size() && named < kMaxCellItems; ++named) {
      hosts += (hosts.empty() ? "" : " &ndash; ") + cell(text_of(names[named]));
    }
    if (hosts.empty()) hosts = "<span class=\"none\">-</span>";
    hosts += more_in_cell(names.size() - named);
    pair_rows.add(out, "<tr><td class=\"nowrap\">" + rank_list(array(p, "ranks")) + "</td><td>" +
                           hosts + "</td><td>" + cell(text(p, "reason")) + "</td></tr>\n");
  }
  return out + pair_rows.more_row(pairs.size(), 3) + "</tbody></table>\n";
}

std::string figures_text(const Json& figures) {
  std::string out;
  std::size_t shown = 0;
  for (auto it = figures.begin(); it != figures.end() && shown < kMaxCellItems; ++it, ++shown) {
    out += (out.empty() ? "" : "<br>") + std::string("<span class=\"mono\">") +
           breakable(clipped(it.key())) + "</span> " + format_number(number_of(it.value()));
  }
  return out.empty() ? "<span class=\"none\">-</span>" : out + more_in_cell(figures.size() - shown);
}

std::string nodes_table(const Json& nodes, PageBudget& budget) {
  std::string out = "<h3>Nodes</h3>\n";
  if (nodes.empty()) return out + "<p class=\"none\">No node.</p>\n";
  out +=
      "<table class=\"wide\"><thead><tr><th class=\"num\">Rank</th><th>Host</th>"
      "<th>Conclusion</th><th>Reasons</th><th>Local verdict</th><th class=\"num\">Exit</th>"
      "<th>Local reason and findings</th><th class=\"num\">Local time</th><th>Figures</th>"
      "</tr></thead><tbody>\n";
  // A fleet's table of nodes is its main content: it has a limit of its own, above the node
  // count of the largest clusters.
  Rows rows(budget, budget.max_fleet_nodes());
  for (const Json& n : nodes) {
    if (!rows.open()) break;
    const Json& local = object(n, "local");
    const Json& reason_list = array(n, "reasons");
    std::string reasons;
    std::size_t reasons_shown = 0;
    for (; reasons_shown < reason_list.size() && reasons_shown < kMaxCellItems; ++reasons_shown) {
      reasons += "<li>" + cell(text_of(reason_list[reasons_shown])) + "</li>";
    }
    if (reasons_shown < reason_list.size()) {
      reasons += "<li>" + more_in_cell(reason_list.size() - reasons_shown) + "</li>";
    }
    const Json& finding_list = array(local, "findings");
    std::string findings;
    std::size_t findings_shown = 0;
    for (; findings_shown < finding_list.size() && findings_shown < kMaxCellItems;
         ++findings_shown) {
      findings += (findings.empty() ? "" : ", ") + std::string("<span class=\"mono\">") +
                  cell(text_of(finding_list[findings_shown])) + "</span>";
    }
    findings += more_in_cell(finding_list.size() - findings_shown);
    std::string local_text = cell(text(local, "reason"));
    if (!findings.empty()) local_text += "<br>" + findings;
    rows.add(out, "<tr><td class=\"num\">" + format_integer(integer(n, "rank")) +
                      "</td><td class=\"host\">" + host_cell(n) + "</td><td>" +
                      badge(text(n, "verdict")) + "</td><td>" +
                      (reasons.empty() ? "<span class=\"none\">-</span>"
                                       : "<ul class=\"plain\">" + reasons + "</ul>") +
                      "</td><td>" + badge(text(local, "verdict")) + "</td><td class=\"num\">" +
                      format_integer(integer(local, "exit_code")) + "</td><td>" + local_text +
                      "</td><td class=\"num\">" + format_seconds(number(local, "duration_s")) +
                      "</td><td class=\"figs\">" + figures_text(object(local, "figures")) +
                      "</td></tr>\n");
  }
  return out + rows.more_row(nodes.size(), 9) + "</tbody></table>\n";
}

std::string rounds_part(const Json& rounds, PageBudget& budget) {
  std::string out = "<h3>Rounds</h3>\n";
  if (rounds.empty()) return out + "<p class=\"none\">No round ran.</p>\n";
  Rows shown(budget, budget.max_rows());
  for (const Json& r : rounds) {
    if (!shown.open()) break;
    const Json& groups = array(r, "groups");
    if (!shown.add(out, "<h4>Round " + format_integer(integer(r, "index")) +
                            " <span class=\"meta\">" + count_of(groups.size(), "group", "groups") +
                            "</span></h4>\n")) {
      break;
    }
    if (groups.empty()) continue;
    out +=
        "<table><thead><tr><th>Ranks</th><th>Outcome</th><th class=\"num\">Bus bandwidth</th>"
        "<th class=\"num\">Duration</th><th>Detail</th></tr></thead><tbody>\n";
    Rows rows(budget, budget.max_rows());
    for (const Json& g : groups) {
      if (!rows.open()) break;
      const std::optional<double> busbw = number(g, "busbw_gbps");
      rows.add(out, "<tr><td class=\"nowrap\">" + rank_list(array(g, "ranks")) + "</td><td>" +
                        badge(text(g, "outcome")) + "</td><td class=\"num\">" +
                        format_number(busbw) + (busbw ? " GB/s" : "") + "</td><td class=\"num\">" +
                        format_seconds(number(g, "duration_s")) + "</td><td>" +
                        cell(text(g, "detail")) + "</td></tr>\n");
    }
    out += rows.more_row(groups.size(), 5) + "</tbody></table>\n";
  }
  return out + shown.more_note(rounds.size());
}

}  // namespace

std::string fleet_section(const ReportDocument& document, std::size_t n, PageBudget& budget) {
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
    const Json& faults = array(doc, "injected_faults");
    std::string specs;
    std::size_t shown = 0;
    for (; shown < faults.size() && shown < kMaxCellItems; ++shown) {
      specs += (specs.empty() ? "" : ", ") + std::string("<code>") + cell(text_of(faults[shown])) +
               "</code>";
    }
    specs += more_in_cell(faults.size() - shown);
    out += "<div class=\"banner\">" + drill_badge() +
           " <strong>Drill:</strong> this fleet run injected faults: " + specs + ".</div>\n";
  }
  out += "<p class=\"reason\">Reason: " + cell(text(doc, "reason")) + "</p>\n";
  // Whole, not clipped like other text: people paste it into sbatch. Still bounded, since a
  // hostile one is escaped into the page (80,000 host names fit in 1 MiB).
  const Json* exclude_field = member(doc, "exclude");
  const std::string exclude =
      exclude_field && exclude_field->is_string()
          ? clipped(exclude_field->get_ref<const std::string&>(), kMaxExcludeBytes)
          : std::string();
  out += "<p><strong>Exclude</strong> (for <code>sbatch --exclude</code>): " +
         (exclude.empty() ? std::string("<span class=\"none\">none</span>")
                          : "<code>" + escape(exclude) + "</code>") +
         "</p>\n";
  const Json& notes = array(doc, "notes");
  if (!notes.empty()) {
    out += "<h3>Notes</h3>\n<ul>";
    Rows shown(budget, budget.max_rows());
    for (const Json& note : notes) {
      if (!shown.open()) break;
      shown.add(out, "<li>" + cell(text_of(note)) + "</li>");
    }
    out += "</ul>\n" + shown.more_note(notes.size());
  }
  out += conclusions(doc, budget);
  out += nodes_table(nodes, budget);
  out += rounds_part(array(doc, "rounds"), budget);
  out += command_line_details(doc, "Command line (rank 0)") + "</section>\n";
  return out;
}

}  // namespace preflight::html
