#include "checks/nccl/nccl_readings.hpp"

#include <limits>
#include <utility>

#include "model/json_fields.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

constexpr CollectiveOp kOps[] = {CollectiveOp::all_gather, CollectiveOp::all_reduce};

Json size_json(const NcclSizeReading& s) {
  Json j = Json::object();
  j["bytes"] = s.bytes;
  // Microseconds, as nccl-tests prints its time column.
  j["time_us"] = s.seconds * 1e6;
  j["algbw_gbps"] = s.algbw_gbps;
  j["busbw_gbps"] = s.busbw_gbps;
  return j;
}

NcclSizeReading size_of(const Fields& f) {
  NcclSizeReading s;
  const auto bytes = f.count("bytes");
  if (!bytes) f.fail("bytes", "missing");
  s.bytes = static_cast<std::size_t>(*bytes);
  const auto busbw = f.number("busbw_gbps");
  if (!busbw) f.fail("busbw_gbps", "missing");
  s.busbw_gbps = *busbw;
  s.algbw_gbps = f.number("algbw_gbps").value_or(0.0);
  s.seconds = f.number("time_us").value_or(0.0) / 1e6;
  return s;
}

Json collective_json(const NcclCollectiveReading& c) {
  Json j = Json::object();
  j["initialized"] = c.initialized;
  if (c.timed_out) j["timed_out"] = true;
  if (!c.error.empty()) j["error"] = c.error;
  Json sizes = Json::array();
  for (const auto& s : c.sizes) sizes.push_back(size_json(s));
  j["sizes"] = std::move(sizes);
  if (c.corrupt_elements) j["corrupt_elements"] = *c.corrupt_elements;
  if (!c.corrupt_from.empty()) j["corrupt_from"] = c.corrupt_from;
  if (c.verified) j["verified"] = *c.verified;
  return j;
}

// A count as JSON gives it: a whole number >= 0 (nlohmann's get<> would cast -1.5 or 1e30,
// which is undefined behaviour for an integer; a verdict given to `preflight judge` is outside
// input).
bool is_count(const Json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
}

// corrupt_from: ranks x ranks counts, or absent. The blame (nccl_observations) indexes it by
// rank both ways, so any other shape is refused here.
std::vector<std::vector<std::uint64_t>> corrupt_from_of(const Fields& f, std::size_t ranks) {
  std::vector<std::vector<std::uint64_t>> matrix;
  const Json* rows = f.find("corrupt_from");
  if (rows == nullptr) return matrix;
  const std::string shape = "expected " + std::to_string(ranks) + " rows of " +
                            std::to_string(ranks) + " counts, one per GPU of gpus";
  if (!rows->is_array() || rows->size() != ranks) f.fail("corrupt_from", shape);
  for (std::size_t r = 0; r < ranks; ++r) {
    const Json& row = (*rows)[r];
    const std::string at = "corrupt_from[" + std::to_string(r) + "]";
    if (!row.is_array() || row.size() != ranks) f.fail(at, shape);
    std::vector<std::uint64_t> counts;
    for (std::size_t s = 0; s < ranks; ++s) {
      if (!is_count(row[s])) {
        f.fail(at + "[" + std::to_string(s) + "]", "expected a count, got " + row[s].dump());
      }
      counts.push_back(row[s].get<std::uint64_t>());
    }
    matrix.push_back(std::move(counts));
  }
  return matrix;
}

NcclCollectiveReading collective_of(const Fields& f, CollectiveOp op, std::size_t ranks) {
  NcclCollectiveReading c;
  c.op = op;
  for (const Fields& s : f.objects("sizes")) c.sizes.push_back(size_of(s));
  // Absent: it came up if it measured anything.
  c.initialized = f.flag("initialized").value_or(!c.sizes.empty());
  c.timed_out = f.flag("timed_out").value_or(false);
  c.error = f.text("error");
  c.corrupt_elements = f.count("corrupt_elements");
  c.corrupt_from = corrupt_from_of(f, ranks);
  c.verified = f.flag("verified");
  return c;
}

}  // namespace

std::string nccl_op_key(CollectiveOp op) {
  return op == CollectiveOp::all_gather ? "allgather" : "allreduce";
}

void to_json(nlohmann::ordered_json& j, const NcclReadings& readings) {
  j = Json::object();
  j["gpus"] = readings.gpus;
  if (!readings.sizes_planned.empty()) j["sizes_planned"] = readings.sizes_planned;
  if (readings.iterations > 0) j["iterations"] = readings.iterations;
  Json collectives = Json::object();
  for (const auto& c : readings.collectives) collectives[nccl_op_key(c.op)] = collective_json(c);
  j["collectives"] = std::move(collectives);
}

void from_json(const nlohmann::ordered_json& j, NcclReadings& readings) {
  const Fields f(j, "");
  readings = NcclReadings{};
  if (f.find("gpus") == nullptr)
    f.fail("gpus", "missing: the communicator's GPUs, e.g. [\"gpu0\"]");
  readings.gpus = f.texts("gpus");
  if (const Json* planned = f.find("sizes_planned")) {
    if (!planned->is_array()) f.fail("sizes_planned", "expected an array of byte counts");
    for (std::size_t i = 0; i < planned->size(); ++i) {
      const Json& v = (*planned)[i];
      if (!is_count(v)) {
        f.fail("sizes_planned[" + std::to_string(i) + "]",
               "expected a byte count, got " + v.dump());
      }
      readings.sizes_planned.push_back(v.get<std::size_t>());
    }
  }
  readings.iterations =
      static_cast<int>(f.integer("iterations", 0, std::numeric_limits<int>::max()).value_or(0));
  if (const auto collectives = f.object("collectives")) {
    for (const auto& item : j.at("collectives").items()) {
      if (item.value().is_null()) continue;
      std::optional<CollectiveOp> op;
      for (CollectiveOp known : kOps) {
        if (item.key() == nccl_op_key(known)) op = known;
      }
      if (!op) collectives->fail(item.key(), "unknown collective (known: allgather, allreduce)");
      readings.collectives.push_back(collective_of(
          Fields(item.value(), collectives->name(item.key())), *op, readings.gpus.size()));
    }
  }
}

}  // namespace preflight
