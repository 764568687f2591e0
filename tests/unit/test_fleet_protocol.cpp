// The fleet's control messages (src/fleet/mpi/fleet_protocol.hpp): every decoder is total.
// Whatever a broken or hostile peer sends (garbage, wrong types, numbers out of range, huge
// arrays, deep nesting, every prefix of a real message), decoding returns nullopt or a message
// within the protocol's bounds, and never throws; what a well-formed message claims is then
// checked against what rank 0 knows.
#include <catch2/catch.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "fleet/logic/fleet_setup.hpp"
#include "fleet/mpi/fleet_protocol.hpp"
#include "fleet/mpi/mpi_link.hpp"
#include "preflight/errors.hpp"

namespace preflight {
namespace {

using Json = nlohmann::ordered_json;

LocalReport sample_local() {
  LocalReport r;
  r.rank = 3;
  r.host = "gpu017";
  r.gpus = 8;
  r.local.verdict = "warn";
  r.local.exit_code = 0;
  r.local.reason = "inventory: gpu2 THROTTLE_HW_SLOWDOWN";
  r.local.duration_s = 4.25;
  r.local.findings = {"THROTTLE_HW_SLOWDOWN@gpu2"};
  r.local.figures = {{"gemm_bf16_tflops", 771.5}, {"hbm_gbps", 2810.0}};
  return r;
}

Assignment sample_assignment() {
  Assignment a;
  a.round = 2;
  a.members = {1, 4, 6};
  a.member_gpus = {8, 8, 8};
  a.sizes = {65536, 1048576};
  a.iterations = 8;
  a.seed = 0x5eedf1ee7ull + 2;
  a.group_timeout_s = 3.5;
  return a;
}

WorkReport sample_work() {
  WorkReport r;
  r.round = 2;
  r.work.status = GroupWorkStatus::ok;
  r.work.seconds = 1.5;
  r.work.busbw_by_size = {{65536, 1.25}, {1048576, 3.5}};
  r.work.busbw_gbps = 3.5;
  r.work.corrupt_from = {{4, 17}};
  r.work.verified = true;
  return r;
}

// Values a hostile peer might put anywhere a real one goes.
std::vector<Json> hostile_values() {
  std::vector<Json> out = {nullptr,
                           true,
                           "text",
                           std::string(5000, 'x'),
                           -1,
                           0,
                           1.5,
                           1e308,
                           -1e308,
                           Json(std::numeric_limits<std::int64_t>::min()),
                           Json(std::numeric_limits<std::uint64_t>::max()),
                           Json(2147483648LL),
                           Json::array(),
                           Json::object(),
                           Json::array({Json::array({1, 2, 3})}),
                           Json::array({"a", nullptr}),
                           Json::array({Json::array({-5, 1.0}), Json::array({1})})};
  Json deep = 0;
  for (int i = 0; i < 64; ++i) deep = Json::array({deep});
  out.push_back(deep);
  return out;
}

Json huge_array() {
  Json big = Json::array();
  for (int i = 0; i < 100000; ++i) big.push_back(Json::array({i, 1}));
  return big;
}

// Decodes `text` with `decode`, which must not throw; true when it returned a message.
template <typename Decode>
bool decodes(const std::string& text, Decode decode) {
  bool got = false;
  CHECK_NOTHROW(got = decode(text).has_value());
  return got;
}

// Every key of `valid` replaced by every hostile value, and removed: no throw, and a removed
// key is never a message.
template <typename Decode>
void check_every_field(const std::string& valid, Decode decode) {
  const Json j = Json::parse(valid);
  for (const auto& item : j.items()) {
    INFO("key " << item.key());
    Json without = j;
    without.erase(item.key());
    CHECK_FALSE(decodes(without.dump(), decode));
    for (const Json& value : hostile_values()) {
      Json changed = j;
      changed[item.key()] = value;
      decodes(changed.dump(), decode);
    }
    if (item.value().is_array()) {
      // Far more items than any bound (the largest, corrupt_from's, is 65536).
      Json changed = j;
      changed[item.key()] = huge_array();
      CHECK_FALSE(decodes(changed.dump(), decode));
    }
  }
}

std::string nested(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') +
         std::string(static_cast<std::size_t>(depth), ']');
}

}  // namespace

TEST_CASE("fleet protocol: messages round-trip") {
  const auto local = decode_local(encode(sample_local()));
  REQUIRE(local);
  CHECK(local->rank == 3);
  CHECK(local->host == "gpu017");
  CHECK(local->gpus == 8);
  CHECK(local->local.findings == sample_local().local.findings);
  CHECK(local->local.figures.size() == 2);

  const auto a = decode_assignment(encode(sample_assignment()));
  REQUIRE(a);
  CHECK(a->members == sample_assignment().members);
  CHECK(a->sizes == sample_assignment().sizes);
  CHECK(a->seed == sample_assignment().seed);
  CHECK(assignment_problem(*a, 8, 4).empty());
  Assignment done;
  done.done = true;
  done.exit_code = 1;
  const auto d = decode_assignment(encode(done));
  REQUIRE(d);
  CHECK(d->done);
  CHECK(d->exit_code == 1);

  const auto w = decode_work(encode(sample_work()));
  REQUIRE(w);
  CHECK(w->round == 2);
  CHECK(w->work.busbw_by_size == sample_work().work.busbw_by_size);
  CHECK(w->work.corrupt_from == sample_work().work.corrupt_from);
}

TEST_CASE("fleet protocol: garbage is no message") {
  const std::vector<std::string> garbage = {
      "",
      "null",
      "[]",
      "{}",
      "42",
      "\"text\"",
      std::string(1, '\0') + "\xff\xfe{\"round\": [[[[\"status\": ",
      "{\"round\": 1",
      "{\"host\": \"\xff\xfe\"}",
      std::string(kMaxControlMessageBytes, '['),
      nested(100000),
      "{\"rank\": " + nested(100000) + "}",
      "{\"a\":" + std::string(5000, '{'),
  };
  for (const auto& text : garbage) {
    INFO("message of " << text.size() << " bytes: " << text.substr(0, 40));
    CHECK_FALSE(decodes(text, decode_local));
    CHECK_FALSE(decodes(text, decode_assignment));
    CHECK_FALSE(decodes(text, decode_work));
  }
}

TEST_CASE("fleet protocol: every field of every message, replaced or removed, never throws") {
  check_every_field(encode(sample_local()), decode_local);
  check_every_field(encode(sample_assignment()), decode_assignment);
  check_every_field(encode(sample_work()), decode_work);
  // Inside the local summary too.
  Json local = Json::parse(encode(sample_local()));
  for (const auto& item : local["local"].items()) {
    for (const Json& value : hostile_values()) {
      Json changed = local;
      changed["local"][item.key()] = value;
      decodes(changed.dump(), decode_local);
    }
  }
}

TEST_CASE("fleet protocol: numbers out of range and lists beyond the bounds are refused") {
  Json local = Json::parse(encode(sample_local()));
  for (const Json& rank : {Json(-1), Json(1.0), Json(1e300), Json(4294967296LL)}) {
    local["rank"] = rank;
    CHECK_FALSE(decode_local(local.dump()));
  }
  local = Json::parse(encode(sample_local()));
  local["gpus"] = kMaxGpusPerNode + 1;
  CHECK_FALSE(decode_local(local.dump()));
  local["gpus"] = 8;
  local["host"] = std::string(kMaxHostBytes + 1, 'h');
  CHECK_FALSE(decode_local(local.dump()));
  local["host"] = "gpu017";
  local["local"]["findings"] = std::vector<std::string>(kMaxLocalFindings + 1, "X@gpu0");
  CHECK_FALSE(decode_local(local.dump()));

  Json work = Json::parse(encode(sample_work()));
  work["round"] = kMaxRound + 1;
  CHECK_FALSE(decode_work(work.dump()));
  work["round"] = 2;
  work["busbw_gbps"] = -1.0;
  CHECK_FALSE(decode_work(work.dump()));
  work["busbw_gbps"] = 3.5;
  work["busbw_by_size"] = Json::array();
  for (int i = 0; i < 9; ++i) work["busbw_by_size"].push_back({1024, 1.0});
  CHECK_FALSE(decode_work(work.dump()));
  work["busbw_by_size"] = Json::array();
  work["corrupt_from"] = Json::array({{4, 1}, {4, 2}});  // the same source twice
  CHECK_FALSE(decode_work(work.dump()));
  work["corrupt_from"] = Json::array({{4, -1}});
  CHECK_FALSE(decode_work(work.dump()));
  work["corrupt_from"] = Json::array({{4, 1}});
  work["status"] = "fine";
  CHECK_FALSE(decode_work(work.dump()));

  Json a = Json::parse(encode(sample_assignment()));
  a["sizes"] = Json::array({4});
  CHECK_FALSE(decode_assignment(a.dump()));
  a["sizes"] = Json::array({65536});
  a["group_timeout_s"] = -3.0;
  CHECK_FALSE(decode_assignment(a.dump()));
  a["group_timeout_s"] = 3.0;
  a["done"] = "yes";
  CHECK_FALSE(decode_assignment(a.dump()));
}

TEST_CASE("fleet protocol: every prefix of a real message decodes without throwing") {
  for (const std::string& text : {encode(sample_local()), encode(sample_work())}) {
    for (std::size_t n = 0; n < text.size(); ++n) {
      // A prefix is never the whole object (the closing brace is last).
      CHECK_FALSE(decodes(text.substr(0, n), decode_local));
      CHECK_FALSE(decodes(text.substr(0, n), decode_work));
    }
  }
}

TEST_CASE("fleet protocol: random bytes and random mutations never throw") {
  std::mt19937 random(20240517);
  const std::vector<std::string> real = {encode(sample_local()), encode(sample_assignment()),
                                         encode(sample_work())};
  for (int i = 0; i < 3000; ++i) {
    std::string text = real[static_cast<std::size_t>(i) % real.size()];
    const int edits = 1 + static_cast<int>(random() % 8);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      const std::size_t at = random() % text.size();
      switch (random() % 3) {
        case 0:
          text[at] = static_cast<char>(random() % 256);
          break;
        case 1:
          text.erase(at, 1 + random() % 4);
          break;
        default:
          text.insert(at, 1, "[]{}\",:-0e9"[random() % 11]);
      }
    }
    decodes(text, decode_local);
    decodes(text, decode_assignment);
    decodes(text, decode_work);
  }
}

TEST_CASE("fleet protocol: a peer's claims are checked against what rank 0 knows") {
  LocalReport local = sample_local();
  CHECK(local_report_problem(local, 3, 8).empty());
  CHECK(local_report_problem(local, 2, 8) == "claims to be rank 3");
  local.rank = 0;
  CHECK(local_report_problem(local, 3, 8) == "claims to be rank 0");
  CHECK_FALSE(local_report_problem(local, 9, 8).empty());

  const WorkReport work = sample_work();  // blames rank 4
  CHECK(work_report_problem(work, 1, {1, 4}).empty());
  CHECK(work_report_problem(work, 1, {1, 5}) == "blames rank 4, which was not in its group");
  CHECK(work_report_problem(work, 2, {1, 4}) == "was not in the group it reports on");
  WorkReport own = work;  // with NCCL, a node's own GPUs may corrupt each other's data
  own.work.corrupt_from = {{1, 3}};
  CHECK(work_report_problem(own, 1, {1, 4}).empty());

  Assignment a = sample_assignment();  // members 1, 4, 6
  CHECK(assignment_problem(a, 7, 6).empty());
  CHECK(assignment_problem(a, 6, 4) == "member 6 is not a rank of this fleet");
  CHECK(assignment_problem(a, 8, 2) == "this rank is not a member");
  a.members = {4, 1, 6};
  CHECK(assignment_problem(a, 8, 4) == "members are not ascending");
  a.members = {1, 4, 6};
  a.member_gpus = {8};
  CHECK(assignment_problem(a, 8, 4) == "not one GPU count per member");
}

TEST_CASE("fleet protocol: an honest node's report stays within the bounds, whatever it found") {
  LocalReport r = sample_local();
  r.host = "node\xff\xfe-with-bad-utf8";
  r.local.reason = std::string(20000, 'r');
  r.local.findings.assign(5000, std::string(1000, 'F') + "@gpu0");
  for (int i = 0; i < 1000; ++i) r.local.figures.emplace_back("figure" + std::to_string(i), 1.0);
  std::string text;
  REQUIRE_NOTHROW(text = encode(r));
  CHECK(text.size() < kMaxControlMessageBytes);
  const auto back = decode_local(text);
  REQUIRE(back);
  CHECK(back->local.findings.size() == kMaxLocalFindings);

  WorkReport w = sample_work();
  w.work.error = std::string(100000, 'e') + "\xff";
  w.work.busbw_gbps = std::numeric_limits<double>::quiet_NaN();
  REQUIRE_NOTHROW(text = encode(w));
  CHECK(decode_work(text));
}

TEST_CASE("fleet protocol: the hostile-peer drills parse, and never on rank 0") {
  const auto faults =
      parse_fleet_faults({"peer-malformed:local@node=1", "peer-oversized:report@node=1",
                          "peer-freeze@node=2", "peer-die@node=3"},
                         4);
  const NodeFaults one = faults_for_rank(faults, 1);
  CHECK(one.local_message == PeerMessage::malformed);
  CHECK(one.report_message == PeerMessage::oversized);
  CHECK(faults_for_rank(faults, 2).freeze);
  CHECK(faults_for_rank(faults, 3).die);
  CHECK(faults_for_rank(faults, 0).specs.empty());
  CHECK_THROWS_WITH(parse_fleet_faults({"peer-die@node=0"}, 4),
                    Catch::Contains("rank 0 coordinates the fleet"));
  CHECK_THROWS_AS(parse_fleet_faults({"peer-malformed@node=1"}, 4), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_faults({"peer-malformed:lots@node=1"}, 4), InvalidInput);
  CHECK_THROWS_AS(parse_fleet_faults({"peer-freeze:1@node=1"}, 4), InvalidInput);
}

}  // namespace preflight
