#include "fleet/mpi/fleet_protocol.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// Far above the largest --sizes (4 GiB) and the longest round; only a bound for the decoder.
constexpr long long kMaxSizeBytes = 1LL << 40;
constexpr double kMaxSeconds = 1e7;
constexpr double kMaxGbps = 1e7;
constexpr std::size_t kMaxCorruptSources = std::size_t{1} << 16;

// Whether arrays and objects nest at most `limit` deep, read off the text (strings skipped), so
// a peer's "[[[[..." is refused before the parser sees it.
bool nesting_within(const std::string& text, int limit) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return false;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return true;
}

// A message is one JSON object; anything else is treated like no message.
std::optional<Json> parse_object(const std::string& text) {
  if (!nesting_within(text, kMaxMessageNesting)) return std::nullopt;
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

const Json* member(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A whole number within [lo, hi]; a fraction, a string or a number out of range is nullopt
// (nlohmann's own get<int> would cast whatever it finds).
std::optional<long long> whole(const Json* v, long long lo, long long hi) {
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  if (v->is_number_unsigned()) {
    const auto u = v->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<long long>::max())) return std::nullopt;
    const auto x = static_cast<long long>(u);
    return x >= lo && x <= hi ? std::optional<long long>(x) : std::nullopt;
  }
  const auto x = v->get<std::int64_t>();
  return x >= lo && x <= hi ? std::optional<long long>(x) : std::nullopt;
}

std::optional<std::uint64_t> unsigned_whole(const Json* v) {
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  if (v->is_number_unsigned()) return v->get<std::uint64_t>();
  const auto x = v->get<std::int64_t>();
  return x >= 0 ? std::optional<std::uint64_t>(static_cast<std::uint64_t>(x)) : std::nullopt;
}

std::optional<double> finite(const Json* v, double lo, double hi) {
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double x = v->get<double>();
  return std::isfinite(x) && x >= lo && x <= hi ? std::optional<double>(x) : std::nullopt;
}

std::optional<std::string> text(const Json* v, std::size_t max_bytes) {
  if (v == nullptr || !v->is_string()) return std::nullopt;
  const auto& s = v->get_ref<const std::string&>();
  return s.size() <= max_bytes ? std::optional<std::string>(s) : std::nullopt;
}

std::optional<bool> flag(const Json* v) {
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

// Whole numbers within [lo, hi], at most `max_items` of them.
std::optional<std::vector<long long>> wholes(const Json* v, long long lo, long long hi,
                                             std::size_t max_items) {
  if (v == nullptr || !v->is_array() || v->size() > max_items) return std::nullopt;
  std::vector<long long> out;
  for (const Json& item : *v) {
    const auto x = whole(&item, lo, hi);
    if (!x) return std::nullopt;
    out.push_back(*x);
  }
  return out;
}

// Invalid UTF-8 (a host name, a driver's error text) is replaced, never a reason to throw.
std::string dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string clipped(const std::string& s, std::size_t max_bytes) {
  return s.size() <= max_bytes ? s : s.substr(0, max_bytes);
}

double finite_or_zero(double x) {
  return std::isfinite(x) && x >= 0 ? x : 0.0;
}

// What a peer's local summary may hold beyond what local_summary_from_json checks.
bool summary_within_bounds(const LocalSummary& s) {
  if (s.reason.size() > kMaxMessageTextBytes || s.findings.size() > kMaxLocalFindings ||
      s.figures.size() > kMaxLocalFigures) {
    return false;
  }
  for (const auto& f : s.findings) {
    if (f.size() > kMaxNameBytes) return false;
  }
  for (const auto& [name, value] : s.figures) {
    if (name.size() > kMaxNameBytes) return false;
  }
  return true;
}

}  // namespace

std::string_view to_string(GroupWorkStatus s) {
  switch (s) {
    case GroupWorkStatus::ok:
      return "ok";
    case GroupWorkStatus::error:
      return "error";
    case GroupWorkStatus::timeout:
      return "timeout";
  }
  return "error";
}

std::optional<GroupWorkStatus> parse_group_work_status(std::string_view text) {
  for (auto s : {GroupWorkStatus::ok, GroupWorkStatus::error, GroupWorkStatus::timeout}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

std::string encode(const LocalReport& r) {
  LocalSummary local = r.local;
  local.reason = clipped(local.reason, kMaxMessageTextBytes);
  if (local.findings.size() > kMaxLocalFindings) local.findings.resize(kMaxLocalFindings);
  for (auto& f : local.findings) f = clipped(f, kMaxNameBytes);
  if (local.figures.size() > kMaxLocalFigures) local.figures.resize(kMaxLocalFigures);
  for (auto& figure : local.figures) figure.first = clipped(figure.first, kMaxNameBytes);
  Json j = {{"rank", r.rank},
            {"host", clipped(r.host, kMaxHostBytes)},
            {"gpus", std::clamp(r.gpus, 0, kMaxGpusPerNode)}};
  j["local"] = local_summary_to_json(local);
  return dump(j);
}

std::optional<LocalReport> decode_local(const std::string& text_in) {
  try {
    const auto j = parse_object(text_in);
    if (!j) return std::nullopt;
    const auto rank = whole(member(*j, "rank"), 0, kMaxWorldRanks - 1);
    const auto host = text(member(*j, "host"), kMaxHostBytes);
    const auto gpus = whole(member(*j, "gpus"), 0, kMaxGpusPerNode);
    const Json* local = member(*j, "local");
    if (!rank || !host || !gpus || local == nullptr || !local->is_object()) return std::nullopt;
    LocalReport r;
    r.rank = static_cast<int>(*rank);
    r.host = *host;
    r.gpus = static_cast<int>(*gpus);
    r.local = local_summary_from_json(*local);  // InvalidInput when malformed
    if (!summary_within_bounds(r.local)) return std::nullopt;
    return r;
  } catch (...) {
    // Whatever went wrong (InvalidInput, nlohmann, an allocation), a peer's message never
    // throws into the control loop.
    return std::nullopt;
  }
}

std::string local_report_problem(const LocalReport& r, int source, int world) {
  if (source < 0 || source >= world) return "came from outside the fleet";
  if (r.rank != source) return "claims to be rank " + std::to_string(r.rank);
  return {};
}

std::string encode(const Assignment& a) {
  if (a.done) return dump(Json{{"done", true}, {"exit_code", a.exit_code}});
  return dump(Json{{"round", a.round},
                   {"members", a.members},
                   {"member_gpus", a.member_gpus},
                   {"sizes", a.sizes},
                   {"iterations", a.iterations},
                   {"seed", a.seed},
                   {"group_timeout_s", a.group_timeout_s}});
}

std::optional<Assignment> decode_assignment(const std::string& text_in) {
  try {
    const auto j = parse_object(text_in);
    if (!j) return std::nullopt;
    Assignment a;
    if (const Json* done = member(*j, "done")) {
      const auto is_done = flag(done);
      if (!is_done) return std::nullopt;
      if (*is_done) {
        const auto code = whole(member(*j, "exit_code"), 0, 255);
        if (!code) return std::nullopt;
        a.done = true;
        a.exit_code = static_cast<int>(*code);
        return a;
      }
    }
    const auto round = whole(member(*j, "round"), 1, kMaxRound);
    const auto members = wholes(member(*j, "members"), 0, kMaxWorldRanks - 1, kMaxWorldRanks);
    const auto gpus = wholes(member(*j, "member_gpus"), 0, kMaxGpusPerNode, kMaxWorldRanks);
    const auto sizes = wholes(member(*j, "sizes"), 8, kMaxSizeBytes, kMaxReportSizes);
    const auto iterations = whole(member(*j, "iterations"), 1, 1000);
    const auto seed = unsigned_whole(member(*j, "seed"));
    const auto timeout = finite(member(*j, "group_timeout_s"), 0.0, kMaxSeconds);
    if (!round || !members || !gpus || !sizes || !iterations || !seed || !timeout) {
      return std::nullopt;
    }
    a.round = static_cast<int>(*round);
    for (long long m : *members) a.members.push_back(static_cast<int>(m));
    for (long long g : *gpus) a.member_gpus.push_back(static_cast<int>(g));
    for (long long s : *sizes) a.sizes.push_back(static_cast<std::size_t>(s));
    a.iterations = static_cast<int>(*iterations);
    a.seed = *seed;
    a.group_timeout_s = *timeout;
    return a;
  } catch (...) {
    return std::nullopt;
  }
}

std::string assignment_problem(const Assignment& a, int world, int me) {
  if (a.done) return {};
  if (a.members.empty()) return "no members";
  for (std::size_t i = 0; i < a.members.size(); ++i) {
    if (a.members[i] < 0 || a.members[i] >= world) {
      return "member " + std::to_string(a.members[i]) + " is not a rank of this fleet";
    }
    if (i > 0 && a.members[i] <= a.members[i - 1]) return "members are not ascending";
  }
  if (std::find(a.members.begin(), a.members.end(), me) == a.members.end()) {
    return "this rank is not a member";
  }
  if (a.member_gpus.size() != a.members.size()) return "not one GPU count per member";
  if (a.sizes.empty()) return "no sizes";
  if (!(a.group_timeout_s > 0)) return "no group timeout";
  return {};
}

std::string encode(const WorkReport& r) {
  const GroupWork& w = r.work;
  Json sizes = Json::array();
  for (std::size_t i = 0; i < w.busbw_by_size.size() && i < kMaxReportSizes; ++i) {
    sizes.push_back({w.busbw_by_size[i].first, finite_or_zero(w.busbw_by_size[i].second)});
  }
  Json corrupt = Json::array();
  for (const auto& [source, count] : w.corrupt_from) corrupt.push_back({source, count});
  return dump(Json{{"round", r.round},
                   {"status", std::string(to_string(w.status))},
                   {"error", clipped(w.error, kMaxMessageTextBytes)},
                   {"seconds", finite_or_zero(w.seconds)},
                   {"busbw_gbps", finite_or_zero(w.busbw_gbps)},
                   {"unslowed_busbw_gbps", finite_or_zero(w.unslowed_busbw_gbps)},
                   {"busbw_rel_se", finite_or_zero(w.busbw_rel_se)},
                   {"busbw_by_size", sizes},
                   {"corrupt_from", corrupt},
                   {"verified", w.verified},
                   {"thread_abandoned", w.thread_abandoned}});
}

std::optional<WorkReport> decode_work(const std::string& text_in) {
  try {
    const auto j = parse_object(text_in);
    if (!j) return std::nullopt;
    const auto round = whole(member(*j, "round"), 0, kMaxRound);
    const auto status_text = text(member(*j, "status"), 16);
    const auto status = status_text ? parse_group_work_status(*status_text) : std::nullopt;
    const auto error = text(member(*j, "error"), kMaxMessageTextBytes);
    const auto seconds = finite(member(*j, "seconds"), 0.0, kMaxSeconds);
    const auto busbw = finite(member(*j, "busbw_gbps"), 0.0, kMaxGbps);
    const auto unslowed = finite(member(*j, "unslowed_busbw_gbps"), 0.0, kMaxGbps);
    const auto rel_se = finite(member(*j, "busbw_rel_se"), 0.0, 100.0);
    const auto verified = flag(member(*j, "verified"));
    const auto abandoned = flag(member(*j, "thread_abandoned"));
    const Json* by_size = member(*j, "busbw_by_size");
    const Json* corrupt = member(*j, "corrupt_from");
    if (!round || !status || !error || !seconds || !busbw || !unslowed || !rel_se || !verified ||
        !abandoned || by_size == nullptr || !by_size->is_array() ||
        by_size->size() > kMaxReportSizes || corrupt == nullptr || !corrupt->is_array() ||
        corrupt->size() > kMaxCorruptSources) {
      return std::nullopt;
    }
    WorkReport r;
    r.round = static_cast<int>(*round);
    r.work.status = *status;
    r.work.error = *error;
    r.work.seconds = *seconds;
    r.work.busbw_gbps = *busbw;
    r.work.unslowed_busbw_gbps = *unslowed;
    r.work.busbw_rel_se = *rel_se;
    r.work.verified = *verified;
    r.work.thread_abandoned = *abandoned;
    for (const Json& pair : *by_size) {
      if (!pair.is_array() || pair.size() != 2) return std::nullopt;
      const auto bytes = whole(&pair[0], 0, kMaxSizeBytes);
      const auto gbps = finite(&pair[1], 0.0, kMaxGbps);
      if (!bytes || !gbps) return std::nullopt;
      r.work.busbw_by_size.emplace_back(static_cast<std::size_t>(*bytes), *gbps);
    }
    for (const Json& pair : *corrupt) {
      if (!pair.is_array() || pair.size() != 2) return std::nullopt;
      const auto source = whole(&pair[0], 0, kMaxWorldRanks - 1);
      const auto count = unsigned_whole(&pair[1]);
      if (!source || !count) return std::nullopt;
      // The same source twice is no encoder's doing.
      if (!r.work.corrupt_from.emplace(static_cast<int>(*source), *count).second) {
        return std::nullopt;
      }
    }
    return r;
  } catch (...) {
    return std::nullopt;
  }
}

std::string work_report_problem(const WorkReport& r, int source, const std::vector<int>& members) {
  if (std::find(members.begin(), members.end(), source) == members.end()) {
    return "was not in the group it reports on";
  }
  for (const auto& [blamed, count] : r.work.corrupt_from) {
    // A member may blame itself: with NCCL, corruption between a node's own GPUs is its own.
    if (std::find(members.begin(), members.end(), blamed) == members.end()) {
      return "blames rank " + std::to_string(blamed) + ", which was not in its group";
    }
  }
  return {};
}

}  // namespace preflight
