#include "fleet/mpi/fleet_protocol.hpp"

#include <nlohmann/json.hpp>

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// A malformed message from a peer is treated like no message: it never throws into the
// control loop.
std::optional<Json> parse(const std::string& text) {
  Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

}  // namespace

std::string encode(const LocalReport& r) {
  Json j = {{"rank", r.rank}, {"host", r.host}, {"gpus", r.gpus}};
  j["local"] = local_summary_to_json(r.local);
  return j.dump();
}

std::optional<LocalReport> decode_local(const std::string& text) {
  const auto j = parse(text);
  if (!j) return std::nullopt;
  try {
    LocalReport r;
    r.rank = j->at("rank").get<int>();
    r.host = j->at("host").get<std::string>();
    r.gpus = j->at("gpus").get<int>();
    r.local = local_summary_from_json(j->at("local"));
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string encode(const Assignment& a) {
  if (a.done) return Json{{"done", true}, {"exit_code", a.exit_code}}.dump();
  return Json{{"round", a.round},
              {"members", a.members},
              {"member_gpus", a.member_gpus},
              {"sizes", a.sizes},
              {"iterations", a.iterations},
              {"seed", a.seed},
              {"group_timeout_s", a.group_timeout_s}}
      .dump();
}

std::optional<Assignment> decode_assignment(const std::string& text) {
  const auto j = parse(text);
  if (!j) return std::nullopt;
  try {
    Assignment a;
    if (j->value("done", false)) {
      a.done = true;
      a.exit_code = j->at("exit_code").get<int>();
      return a;
    }
    a.round = j->at("round").get<int>();
    a.members = j->at("members").get<std::vector<int>>();
    a.member_gpus = j->at("member_gpus").get<std::vector<int>>();
    a.sizes = j->at("sizes").get<std::vector<std::size_t>>();
    a.iterations = j->at("iterations").get<int>();
    a.seed = j->at("seed").get<std::uint64_t>();
    a.group_timeout_s = j->at("group_timeout_s").get<double>();
    return a;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string encode(const WorkReport& r) {
  const GroupWork& w = r.work;
  Json sizes = Json::array();
  for (const auto& [bytes, gbps] : w.busbw_by_size) sizes.push_back({bytes, gbps});
  Json corrupt = Json::array();
  for (const auto& [source, count] : w.corrupt_from) corrupt.push_back({source, count});
  return Json{{"round", r.round},
              {"status", std::string(to_string(w.status))},
              {"error", w.error},
              {"seconds", w.seconds},
              {"busbw_gbps", w.busbw_gbps},
              {"busbw_by_size", sizes},
              {"corrupt_from", corrupt},
              {"verified", w.verified},
              {"thread_abandoned", w.thread_abandoned}}
      .dump();
}

std::optional<WorkReport> decode_work(const std::string& text) {
  const auto j = parse(text);
  if (!j) return std::nullopt;
  try {
    WorkReport r;
    r.round = j->at("round").get<int>();
    const auto status = parse_group_work_status(j->at("status").get<std::string>());
    if (!status) return std::nullopt;
    r.work.status = *status;
    r.work.error = j->at("error").get<std::string>();
    r.work.seconds = j->at("seconds").get<double>();
    r.work.busbw_gbps = j->at("busbw_gbps").get<double>();
    for (const auto& pair : j->at("busbw_by_size")) {
      r.work.busbw_by_size.emplace_back(pair.at(0).get<std::size_t>(), pair.at(1).get<double>());
    }
    for (const auto& pair : j->at("corrupt_from")) {
      r.work.corrupt_from[pair.at(0).get<int>()] = pair.at(1).get<std::uint64_t>();
    }
    r.work.verified = j->at("verified").get<bool>();
    r.work.thread_abandoned = j->at("thread_abandoned").get<bool>();
    return r;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace preflight
