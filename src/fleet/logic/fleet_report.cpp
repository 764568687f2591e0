// The fleet verdict as a document (preflight.fleet/1, docs/fleet-verdict.md) and as a short
// table for a terminal. Both only read the verdict.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "fleet/logic/fleet_verdict.hpp"
#include "model/text_format.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// JSON has no NaN or infinity: a non-finite figure becomes null rather than a string.
Json number_or_null(double v) {
  if (!std::isfinite(v)) return nullptr;
  return v;
}

Json seconds_json(double s) {
  return number_or_null(std::round(s * 1000.0) / 1000.0);
}

Json listed_json(const std::vector<FleetListed>& listed) {
  Json arr = Json::array();
  for (const FleetListed& l : listed) {
    arr.push_back({{"rank", l.rank}, {"host", l.host}, {"reason", l.reason}});
  }
  return arr;
}

// Host names and reasons come from other machines: control characters (an escape sequence, a
// newline) must not reach the terminal or break the table.
std::string printable(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

std::string coloured(const std::string& text, const char* colour, const TextStyle& style) {
  return style.colour ? std::string(colour) + text + "\033[0m" : text;
}

const char* colour_of(const std::string& verdict) {
  if (verdict == "faulty" || verdict == "fail") return "\033[31m";
  if (verdict == "pass" || verdict == "healthy") return "\033[32m";
  return "\033[33m";  // straggler, ambiguous
}

struct Row {
  const FleetListed* listed = nullptr;
  std::string verdict;
};

void node_lines(std::ostringstream& os, const FleetVerdict& v, const TextStyle& style) {
  std::vector<Row> rows;
  for (const auto& l : v.faulty) rows.push_back({&l, "faulty"});
  for (const auto& l : v.stragglers) rows.push_back({&l, "straggler"});
  for (const auto& l : v.ambiguous) rows.push_back({&l, "ambiguous"});
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.listed->rank < b.listed->rank; });
  if (rows.empty()) {
    os << "All " << v.nodes.size() << " node" << (v.nodes.size() == 1 ? "" : "s") << " healthy.\n";
    return;
  }
  std::size_t host_width = 4;
  for (const Row& r : rows) host_width = std::max(host_width, r.listed->host.size());
  host_width = std::min<std::size_t>(host_width, 32) + 2;
  os << padded("NODE", host_width) << padded("RANK", 6) << padded("VERDICT", 11) << "REASON\n";
  for (const Row& r : rows) {
    os << padded(printable(r.listed->host), host_width) << padded(std::to_string(r.listed->rank), 6)
       << coloured(padded(upper(r.verdict), 11), colour_of(r.verdict), style)
       << printable(r.listed->reason) << '\n';
  }
}

void round_lines(std::ostringstream& os, const FleetVerdict& v) {
  if (v.rounds.empty()) return;
  os << "\nRounds:\n";
  for (const FleetRound& r : v.rounds) {
    // Outcome counts, "ok" first, the others in the order they first appear.
    std::vector<std::pair<std::string, std::size_t>> counts = {{"ok", 0}};
    for (const FleetGroupRecord& g : r.groups) {
      auto it = std::find_if(counts.begin(), counts.end(),
                             [&g](const auto& c) { return c.first == g.outcome; });
      if (it == counts.end()) {
        counts.emplace_back(g.outcome, 1);
      } else {
        ++it->second;
      }
    }
    os << "  round " << r.index << ": ";
    if (r.groups.empty()) {
      os << "no groups\n";
      continue;
    }
    os << r.groups.size() << " group" << (r.groups.size() == 1 ? "" : "s");
    std::string sep = ": ";
    for (const auto& [outcome, n] : counts) {
      os << sep << n << ' ' << printable(outcome.empty() ? "unknown" : outcome);
      sep = ", ";
    }
    os << '\n';
  }
  if (v.bound_reached) {
    os << "  the bound of " << v.round_bound << " rounds was reached before every node was "
       << "cleared\n";
  }
}

}  // namespace

std::string fleet_verdict_to_json_text(const FleetVerdict& v) {
  Json j;
  j["schema"] = kFleetSchema;
  j["tool"] = {{"name", v.tool.name}, {"version", v.tool.version}, {"git", v.tool.git}};
  j["started_at"] = v.started_at;
  j["duration_s"] = seconds_json(v.duration_s);
  j["argv"] = v.argv;
  j["transport"] = v.transport;
  j["local_profile"] = v.local_profile;
  j["group_size"] = v.group_size;
  j["round_bound"] = v.round_bound;
  j["bound_reached"] = v.bound_reached;
  j["timeout_s"] = number_or_null(v.timeout_s);
  j["group_timeout_s"] = number_or_null(v.group_timeout_s);
  j["local_timeout_s"] = number_or_null(v.local_timeout_s);
  j["launch_s"] = seconds_json(v.launch_s);
  j["max_exclude_share"] = v.max_exclude_share;

  Json nodes = Json::array();
  for (const FleetNode& n : v.nodes) {
    Json nj;
    nj["rank"] = n.rank;
    nj["host"] = n.host;
    nj["verdict"] = n.verdict;
    nj["reasons"] = n.reasons;
    nj["local"] = local_summary_to_json(n.local);
    nj["round_speed"] = n.round_speed;
    nj["groups_compared"] = n.groups_compared;
    nodes.push_back(std::move(nj));
  }
  j["nodes"] = std::move(nodes);

  Json rounds = Json::array();
  for (const FleetRound& r : v.rounds) {
    Json groups = Json::array();
    for (const FleetGroupRecord& g : r.groups) {
      groups.push_back({{"ranks", g.ranks},
                        {"reference", g.reference},
                        {"outcome", g.outcome},
                        {"busbw_gbps", number_or_null(g.busbw_gbps)},
                        {"duration_s", seconds_json(g.duration_s)},
                        {"detail", g.detail},
                        {"speed", g.speed},
                        {"groups_compared", g.groups_compared},
                        {"median_gbps", number_or_null(g.median_gbps)},
                        {"gap", g.gap},
                        {"noise", g.noise},
                        {"iteration_se", g.iteration_se},
                        {"drill_unslowed_gbps",
                         g.drill_unslowed_gbps > 0 ? Json(g.drill_unslowed_gbps) : Json()}});
    }
    rounds.push_back({{"index", r.index}, {"groups", std::move(groups)}});
  }
  j["rounds"] = std::move(rounds);

  j["faulty"] = listed_json(v.faulty);
  j["stragglers"] = listed_json(v.stragglers);
  j["ambiguous"] = listed_json(v.ambiguous);
  Json pairs = Json::array();
  for (const FleetBadPair& p : v.bad_pairs) {
    pairs.push_back({{"ranks", p.ranks}, {"hosts", p.hosts}, {"reason", p.reason}});
  }
  j["bad_pairs"] = std::move(pairs);
  j["exclude"] = v.exclude;
  Json systemic = Json::array();
  for (const SystemicCause& s : v.systemic) {
    systemic.push_back({{"cause", s.cause}, {"nodes", s.nodes}, {"share", s.share}});
  }
  j["systemic"] = std::move(systemic);
  j["injected_faults"] = v.injected_faults;
  j["notes"] = v.notes;
  j["verdict"] = v.verdict;
  j["reason"] = v.reason;
  j["exit_code"] = v.exit_code;
  // Host names and messages come from other machines: replace invalid UTF-8, never throw.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string fleet_verdict_to_text(const FleetVerdict& v, const TextStyle& style) {
  std::ostringstream os;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.1fs", v.duration_s);
  os << "preflight " << v.tool.version << " fleet: " << v.nodes.size() << " node"
     << (v.nodes.size() == 1 ? "" : "s") << ", transport " << v.transport << ", groups of "
     << v.group_size << ", local profile " << v.local_profile << ", " << secs << '\n';
  if (!v.injected_faults.empty()) {
    os << "injected faults:";
    for (const auto& f : v.injected_faults) os << ' ' << printable(f);
    os << '\n';
  }
  os << '\n';
  node_lines(os, v, style);
  if (!v.bad_pairs.empty()) {
    os << "\nBad pairs:\n";
    for (const FleetBadPair& p : v.bad_pairs) {
      os << " ";
      for (std::size_t i = 0; i < p.ranks.size(); ++i) {
        os << (i == 0 ? " " : " - ") << (i < p.hosts.size() ? printable(p.hosts[i]) + " " : "")
           << "(rank " << p.ranks[i] << ")";
      }
      if (!p.reason.empty()) os << ": " << printable(p.reason);
      os << '\n';
    }
  }
  round_lines(os, v);
  if (!v.notes.empty()) {
    os << "\nNotes:\n";
    for (const std::string& n : v.notes) os << "  " << printable(n) << '\n';
  }
  for (const SystemicCause& s : v.systemic) {
    os << "\nSystemic: " << s.nodes << " of " << v.nodes.size() << " nodes failed by "
       << printable(s.cause) << " (more than " << v.max_exclude_share * 100.0
       << "% of the fleet): not excluded; look for what they share";
  }
  if (!v.systemic.empty()) os << '\n';
  os << "\nExclude: " << (v.exclude.empty() ? "(none)" : printable(v.exclude)) << '\n';
  os << "Fleet verdict: "
     << coloured(upper(v.verdict.empty() ? "unknown" : v.verdict), colour_of(v.verdict), style)
     << " (exit " << v.exit_code << ")";
  if (!v.reason.empty()) os << ": " << printable(v.reason);
  os << '\n';
  return os.str();
}

}  // namespace preflight
