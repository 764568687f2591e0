// The nvlink check's readings and their judgement (nvlink_readings.hpp).
#include "checks/nvlink/nvlink_readings.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <utility>

#include "checks/common/entities.hpp"
#include "checks/nvlink/nvlink_findings.hpp"
#include "model/json_fields.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

// "gpu3" -> 3; the readings name GPUs as findings do.
int gpu_index_from_name(const std::string& name, const std::string& field) {
  const bool digits = name.size() > 3 && name.compare(0, 3, "gpu") == 0 &&
                      std::all_of(name.begin() + 3, name.end(),
                                  [](unsigned char c) { return std::isdigit(c) != 0; });
  if (!digits || name.size() > 9) {
    throw InvalidInput(field + ": expected a GPU named gpuN, got \"" + name + "\"");
  }
  return std::stoi(name.substr(3));
}

Json matrix_to_json(const BandwidthMatrix& m) {
  Json rows = Json::array();
  for (const auto& row : m) {
    Json cells = Json::array();
    for (const auto& cell : row) cells.push_back(cell ? Json(*cell) : Json(nullptr));
    rows.push_back(std::move(cells));
  }
  return rows;
}

// An n x n matrix of numbers or nulls; the field's name in every error.
BandwidthMatrix matrix_from_json(const Json& j, std::size_t n, const std::string& field) {
  if (!j.is_array() || j.size() != n) {
    throw InvalidInput(field + ": expected " + std::to_string(n) + " rows, one per GPU");
  }
  BandwidthMatrix m(n, std::vector<std::optional<double>>(n));
  for (std::size_t i = 0; i < n; ++i) {
    const std::string row = field + "[" + std::to_string(i) + "]";
    if (!j[i].is_array() || j[i].size() != n) {
      throw InvalidInput(row + ": expected " + std::to_string(n) + " values, one per GPU");
    }
    for (std::size_t k = 0; k < n; ++k) {
      const Json& cell = j[i][k];
      if (cell.is_null()) continue;
      if (!cell.is_number() || cell.get<double>() < 0) {
        throw InvalidInput(row + "[" + std::to_string(k) + "]: expected GB/s (>= 0) or null");
      }
      if (i != k) m[i][k] = cell.get<double>();
    }
  }
  return m;
}

// A link count. Read through Fields, never nlohmann's get<int>(): that casts whatever number it
// finds, and 1e20 cast to an int is undefined behaviour (a verdict given to `preflight judge` is
// outside input; found by tests/fuzz, target verdict).
std::optional<int> optional_int(const Json& j, const char* key, const std::string& field) {
  const auto value = Fields(j, field).integer(key, 0, std::numeric_limits<int>::max());
  return value ? std::optional<int>(static_cast<int>(*value)) : std::nullopt;
}

// A GpuReading with what nvlink_pair_expectation reads: the bus id and the links.
GpuReading topology_of(const NvlinkGpu& g) {
  GpuReading r;
  r.index = g.index;
  r.pci_bus_id = g.pci_bus_id;
  r.nvlink_peer_bus_ids = g.nvlink_peer_bus_ids;
  r.nvlink_switch_links = g.nvlink_switch_links;
  return r;
}

// Findings of one code on one unordered pair are merged: "gpu0 -> gpu1 212.0 GB/s; gpu1 -> gpu0
// 215.3 GB/s".
struct PairFinding {
  std::string code;
  std::string entity;
  std::string text;
  double worst = 0.0;
  double limit = 0.0;
  bool measured = false;
  NvlinkPairExpectation expected;  // of the first direction noted
};

}  // namespace

void to_json(nlohmann::ordered_json& j, const NvlinkReadings& r) {
  j = Json::object();
  Json gpus = Json::array();
  for (const NvlinkGpu& g : r.gpus) {
    Json e = Json::object();
    e["gpu"] = gpu_entity(g.index);
    e["pci_bus_id"] = g.pci_bus_id;
    if (g.nvlink_active) e["nvlink_active"] = *g.nvlink_active;
    if (g.nvlink_supported) e["nvlink_supported"] = *g.nvlink_supported;
    if (g.nvlink_switch_links) e["nvlink_switch_links"] = *g.nvlink_switch_links;
    e["nvlink_peer_bus_ids"] = g.nvlink_peer_bus_ids;
    gpus.push_back(std::move(e));
  }
  j["gpus"] = std::move(gpus);
  Json access = Json::array();
  for (std::size_t i = 0; i < r.peer_access.size(); ++i) {
    Json row = Json::array();
    for (std::size_t k = 0; k < r.peer_access[i].size(); ++k) {
      row.push_back(i == k ? Json(nullptr) : Json(static_cast<bool>(r.peer_access[i][k])));
    }
    access.push_back(std::move(row));
  }
  j["peer_access"] = std::move(access);
  j["unidirectional_gbps"] = matrix_to_json(r.unidirectional_gbps);
  j["bidirectional_gbps"] = matrix_to_json(r.bidirectional_gbps);
  if (!r.injected_slow_pairs.empty()) j["injected_slow_pairs"] = r.injected_slow_pairs;
}

void from_json(const nlohmann::ordered_json& j, NvlinkReadings& r) {
  r = NvlinkReadings{};
  const Json& gpus = j.at("gpus");
  if (!gpus.is_array()) throw InvalidInput("gpus: expected a list of GPUs");
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const Json& e = gpus[i];
    const std::string field = "gpus[" + std::to_string(i) + "]";
    NvlinkGpu g;
    g.index = gpu_index_from_name(e.at("gpu").get<std::string>(), field + ".gpu");
    g.pci_bus_id = e.value("pci_bus_id", std::string());
    g.nvlink_active = optional_int(e, "nvlink_active", field);
    g.nvlink_supported = optional_int(e, "nvlink_supported", field);
    g.nvlink_switch_links = optional_int(e, "nvlink_switch_links", field);
    if (const auto peers = e.find("nvlink_peer_bus_ids"); peers != e.end()) {
      g.nvlink_peer_bus_ids = peers->get<std::vector<std::string>>();
    }
    for (const NvlinkGpu& other : r.gpus) {
      if (other.index == g.index) {
        throw InvalidInput(field + ".gpu: " + gpu_entity(g.index) + " is listed twice");
      }
    }
    r.gpus.push_back(std::move(g));
  }
  const std::size_t n = r.gpus.size();
  // Absent: every pair has access (hand-written readings of a healthy node).
  r.peer_access.assign(n, std::vector<bool>(n, true));
  for (std::size_t i = 0; i < n; ++i) r.peer_access[i][i] = false;
  if (const auto access = j.find("peer_access"); access != j.end()) {
    if (!access->is_array() || access->size() != n) {
      throw InvalidInput("peer_access: expected " + std::to_string(n) + " rows, one per GPU");
    }
    for (std::size_t i = 0; i < n; ++i) {
      const Json& row = (*access)[i];
      const std::string field = "peer_access[" + std::to_string(i) + "]";
      if (!row.is_array() || row.size() != n) {
        throw InvalidInput(field + ": expected " + std::to_string(n) + " values, one per GPU");
      }
      for (std::size_t k = 0; k < n; ++k) {
        if (i == k) continue;
        if (!row[k].is_boolean()) {
          throw InvalidInput(field + "[" + std::to_string(k) + "]: expected true or false");
        }
        r.peer_access[i][k] = row[k].get<bool>();
      }
    }
  }
  r.unidirectional_gbps = matrix_from_json(j.at("unidirectional_gbps"), n, "unidirectional_gbps");
  if (const auto bidir = j.find("bidirectional_gbps"); bidir != j.end() && !bidir->is_null()) {
    r.bidirectional_gbps = matrix_from_json(*bidir, n, "bidirectional_gbps");
  } else {
    r.bidirectional_gbps.assign(n, std::vector<std::optional<double>>(n));
  }
  if (const auto pairs = j.find("injected_slow_pairs"); pairs != j.end()) {
    const auto names = pairs->get<std::vector<std::string>>();
    for (std::size_t i = 0; i < names.size(); ++i) {
      // Either order ("gpu2-gpu1"); kept in the order findings name pairs.
      const std::string field = "injected_slow_pairs[" + std::to_string(i) + "]";
      const std::size_t dash = names[i].find('-');
      if (dash == std::string::npos) {
        throw InvalidInput(field + ": expected a GPU pair named gpuA-gpuB");
      }
      r.injected_slow_pairs.push_back(
          pair_entity(gpu_index_from_name(names[i].substr(0, dash), field),
                      gpu_index_from_name(names[i].substr(dash + 1), field)));
    }
  }
}

std::vector<Finding> judge_nvlink(const NvlinkReadings& r, const Thresholds& t) {
  const std::size_t n = r.gpus.size();
  const double expected = t.get("nvlink.expected_gbps");
  const int links_per_gpu = static_cast<int>(t.get("inventory.expected_nvlink_links"));
  std::vector<GpuReading> topology;
  for (const NvlinkGpu& g : r.gpus) topology.push_back(topology_of(g));
  // Each pair's expectation: all links through NVSwitches, or the links joining the two GPUs
  // directly (a 4-GPU board gives each pair a third of them).
  std::vector<std::vector<NvlinkPairExpectation>> pair_expected(
      n, std::vector<NvlinkPairExpectation>(n));
  BandwidthMatrix fail_limits(n, std::vector<std::optional<double>>(n));
  BandwidthMatrix warn_limits = fail_limits;
  BandwidthMatrix bidir_fail = fail_limits;
  BandwidthMatrix bidir_warn = fail_limits;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      if (i == k) continue;
      const NvlinkPairExpectation e =
          nvlink_pair_expectation(expected, links_per_gpu, topology[i], topology[k]);
      pair_expected[i][k] = e;
      fail_limits[i][k] = e.gbps * t.get("nvlink.fail_fraction");
      warn_limits[i][k] = e.gbps * t.get("nvlink.warn_fraction");
      bidir_fail[i][k] = 2 * *fail_limits[i][k];
      bidir_warn[i][k] = 2 * *warn_limits[i][k];
    }
  }

  // Without an NVLink expectation (PCIe cards, unknown SKU) nothing is judged: peer copies over
  // PCIe are not a fault.
  std::map<std::pair<std::string, std::string>, PairFinding> merged;
  const auto note = [&](const PairJudgement& p, const std::string& kind) {
    const int a = r.gpus[p.from].index;
    const int b = r.gpus[p.to].index;
    std::string code;
    std::string text = kind + gpu_entity(a) + " -> " + gpu_entity(b);
    switch (p.kind) {
      case PairClass::no_peer_access:
        code = "NVLINK_NO_PEER_ACCESS";
        text = gpu_entity(a) + " cannot access " + gpu_entity(b) + "'s memory";
        break;
      case PairClass::fail:
        code = "NVLINK_BANDWIDTH_LOW";
        text += " " + format_gbps(p.value);
        break;
      case PairClass::warn:
        code = "NVLINK_BANDWIDTH_MARGINAL";
        text += " " + format_gbps(p.value);
        break;
      default:
        return;
    }
    PairFinding& f = merged[{pair_entity(a, b), code}];
    if (f.code.empty()) {
      f.code = code;
      f.entity = pair_entity(a, b);
      f.worst = p.value;
      f.expected = pair_expected[p.from][p.to];
    }
    f.text += (f.text.empty() ? "" : "; ") + text;
    if (p.kind == PairClass::fail || p.kind == PairClass::warn) {
      // Value and limit come from the first direction noted (unidirectional ones come first);
      // a bidirectional figure is on another scale and only adds to the text.
      if (!f.measured) {
        f.measured = true;
        f.worst = p.value;
        f.limit = p.limit;
      } else if (p.limit == f.limit) {
        f.worst = std::min(f.worst, p.value);
      }
    }
  };
  for (const auto& p :
       classify_matrix(r.unidirectional_gbps, r.peer_access, fail_limits, warn_limits)) {
    // Without peer access a pair is a fault only where NVLink joins the two GPUs.
    if (p.kind == PairClass::no_peer_access && pair_expected[p.from][p.to].gbps <= 0) continue;
    note(p, "");
  }
  std::vector<std::vector<bool>> both(n, std::vector<bool>(n, false));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t k = 0; k < n; ++k) {
      both[i][k] = i != k && r.peer_access[i][k] && r.peer_access[k][i];
    }
  }
  for (const auto& p : classify_matrix(r.bidirectional_gbps, both, bidir_fail, bidir_warn)) {
    if (p.kind != PairClass::no_peer_access && p.from < p.to) note(p, "bidirectional ");
  }

  std::vector<Finding> findings;
  for (auto& [key, f] : merged) {
    std::string message = f.text;
    if (f.measured) {
      message += "; expected " + format_gbps(f.expected.gbps) + " per direction (" +
                 f.expected.basis + ")";
    } else {
      message += " (" + f.expected.basis + ")";
    }
    // Literal codes: the catalogue test finds every emitted code in the sources.
    Finding finding =
        f.code == "NVLINK_NO_PEER_ACCESS"
            ? make_finding(nvlink_findings(), "NVLINK_NO_PEER_ACCESS", f.entity, message)
        : f.code == "NVLINK_BANDWIDTH_LOW"
            ? make_finding(nvlink_findings(), "NVLINK_BANDWIDTH_LOW", f.entity, message)
            : make_finding(nvlink_findings(), "NVLINK_BANDWIDTH_MARGINAL", f.entity, message);
    if (f.measured) finding.measured(f.worst, "GB/s", f.limit);
    // An nvlink-slow fault names the pair in either order; the finding's entity is ordered.
    finding.injected = std::find(r.injected_slow_pairs.begin(), r.injected_slow_pairs.end(),
                                 f.entity) != r.injected_slow_pairs.end();
    findings.push_back(std::move(finding));
  }
  return findings;
}

}  // namespace preflight
