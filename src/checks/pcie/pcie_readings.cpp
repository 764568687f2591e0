// The pcie check's readings as JSON (pcie_readings.hpp). Written by the check and by hand
// (tests/data/nodes/), so reading is strict: an unknown key is an error naming it, which catches
// a misspelt field instead of judging without it.
#include "checks/pcie/pcie_readings.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>

#include "preflight/errors.hpp"

namespace preflight {
namespace {

using Json = nlohmann::ordered_json;

[[noreturn]] void bad_pcie_reading(const std::string& field, const std::string& what) {
  throw InvalidInput(field + ": " + what);
}

const Json& object_at(const Json& j, const std::string& field,
                      std::initializer_list<const char*> keys) {
  if (!j.is_object()) bad_pcie_reading(field.empty() ? "readings" : field, "expected an object");
  for (const auto& item : j.items()) {
    const bool known =
        std::any_of(keys.begin(), keys.end(), [&](const char* k) { return item.key() == k; });
    if (!known)
      bad_pcie_reading(field.empty() ? item.key() : field + "." + item.key(), "unknown key");
  }
  return j;
}

std::string path(const std::string& field, const std::string& key) {
  return field.empty() ? key : field + "." + key;
}

// nullptr for a key that is absent or null (optional fields may be either).
const Json* find(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::optional<int> opt_int(const Json& j, const std::string& field, const char* key) {
  const Json* v = find(j, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) bad_pcie_reading(path(field, key), "expected a whole number");
  return v->get<int>();
}

std::string opt_string(const Json& j, const std::string& field, const char* key) {
  const Json* v = find(j, key);
  if (v == nullptr) return "";
  if (!v->is_string()) bad_pcie_reading(path(field, key), "expected a string");
  return v->get<std::string>();
}

std::vector<std::string> string_list(const Json& j, const std::string& field, const char* key) {
  std::vector<std::string> out;
  const Json* v = find(j, key);
  if (v == nullptr) return out;
  if (!v->is_array()) bad_pcie_reading(path(field, key), "expected an array of strings");
  for (std::size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) {
      bad_pcie_reading(path(field, key) + "[" + std::to_string(i) + "]", "expected a string");
    }
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

double gbps(const Json& j, const std::string& field, const char* key) {
  const Json* v = find(j, key);
  if (v == nullptr) bad_pcie_reading(path(field, key), "missing");
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0) {
    bad_pcie_reading(path(field, key), "expected a number of GB/s, 0 or more");
  }
  return v->get<double>();
}

void put_if_known(Json& j, const char* key, const std::optional<int>& value) {
  if (value) j[key] = *value;
}

Json stats_json(const PcieStats& s) {
  Json j = Json::object();
  j["median_gbps"] = s.median_gbps;
  j["min_gbps"] = s.min_gbps;
  j["count"] = s.count;
  return j;
}

// min_gbps defaults to the median and count to 1: a hand-written reading often has one
// published figure.
PcieStats stats_from(const Json& j, const std::string& field) {
  object_at(j, field, {"median_gbps", "min_gbps", "count"});
  PcieStats s;
  s.median_gbps = gbps(j, field, "median_gbps");
  s.min_gbps = find(j, "min_gbps") != nullptr ? gbps(j, field, "min_gbps") : s.median_gbps;
  s.count = opt_int(j, field, "count").value_or(1);
  if (s.count < 1) bad_pcie_reading(path(field, "count"), "expected 1 or more samples");
  return s;
}

Json directions_json(const PcieDirections& d) {
  Json j = Json::object();
  if (d.h2d) j["h2d"] = stats_json(*d.h2d);
  if (d.d2h) j["d2h"] = stats_json(*d.d2h);
  if (d.bidir) j["bidir"] = stats_json(*d.bidir);
  return j;
}

PcieDirections directions_from(const Json& j, const std::string& field, bool with_bidir) {
  if (with_bidir) {
    object_at(j, field, {"h2d", "d2h", "bidir"});
  } else {
    object_at(j, field, {"h2d", "d2h"});
  }
  PcieDirections d;
  if (const Json* v = find(j, "h2d")) d.h2d = stats_from(*v, path(field, "h2d"));
  if (const Json* v = find(j, "d2h")) d.d2h = stats_from(*v, path(field, "d2h"));
  if (const Json* v = find(j, "bidir")) d.bidir = stats_from(*v, path(field, "bidir"));
  return d;
}

Json gpu_json(const PcieGpuReadings& g) {
  Json j = Json::object();
  j["index"] = g.index;
  j["bus_id"] = g.bus_id;
  put_if_known(j, "numa_node", g.numa_node);
  put_if_known(j, "host_numa_node", g.host_numa_node);
  if (!g.root_port.empty()) j["root_port"] = g.root_port;
  if (!g.bridges.empty()) j["bridges"] = g.bridges;
  if (g.path_gen_max || g.path_width_max) {
    Json path = Json::object();
    put_if_known(path, "gen_max", g.path_gen_max);
    put_if_known(path, "width_max", g.path_width_max);
    j["path"] = path;
  }
  Json link = Json::object();
  put_if_known(link, "gen_current", g.link.gen_current);
  put_if_known(link, "gen_max_link", g.link.gen_max_link);
  put_if_known(link, "gen_max_gpu", g.link.gen_max_gpu);
  put_if_known(link, "width_current", g.link.width_current);
  put_if_known(link, "width_max", g.link.width_max);
  j["link"] = link;
  j["alone"] = directions_json(g.alone);
  j["all_at_once"] = directions_json(g.all_at_once);
  return j;
}

PcieGpuReadings gpu_from(const Json& j, const std::string& field) {
  object_at(j, field,
            {"index", "bus_id", "numa_node", "host_numa_node", "root_port", "bridges", "path",
             "link", "alone", "all_at_once"});
  PcieGpuReadings g;
  const auto index = opt_int(j, field, "index");
  if (!index || *index < 0)
    bad_pcie_reading(path(field, "index"), "expected the GPU's index, 0 or more");
  g.index = *index;
  g.bus_id = opt_string(j, field, "bus_id");
  g.numa_node = opt_int(j, field, "numa_node");
  g.host_numa_node = opt_int(j, field, "host_numa_node");
  g.root_port = opt_string(j, field, "root_port");
  g.bridges = string_list(j, field, "bridges");
  if (const Json* p = find(j, "path")) {
    const std::string f = path(field, "path");
    object_at(*p, f, {"gen_max", "width_max"});
    g.path_gen_max = opt_int(*p, f, "gen_max");
    g.path_width_max = opt_int(*p, f, "width_max");
  }
  if (const Json* link = find(j, "link")) {
    const std::string f = path(field, "link");
    object_at(*link, f,
              {"gen_current", "gen_max_link", "gen_max_gpu", "width_current", "width_max"});
    g.link.gen_current = opt_int(*link, f, "gen_current");
    g.link.gen_max_link = opt_int(*link, f, "gen_max_link");
    g.link.gen_max_gpu = opt_int(*link, f, "gen_max_gpu");
    g.link.width_current = opt_int(*link, f, "width_current");
    g.link.width_max = opt_int(*link, f, "width_max");
  }
  if (const Json* v = find(j, "alone")) g.alone = directions_from(*v, path(field, "alone"), true);
  if (const Json* v = find(j, "all_at_once")) {
    g.all_at_once = directions_from(*v, path(field, "all_at_once"), false);
  }
  return g;
}

Json uplink_json(const PcieUplinkReadings& u) {
  Json j = Json::object();
  j["id"] = u.id;
  if (!u.device.empty()) j["device"] = u.device;
  put_if_known(j, "gen_current", u.gen_current);
  put_if_known(j, "width_current", u.width_current);
  put_if_known(j, "gen_max", u.gen_max);
  put_if_known(j, "width_max", u.width_max);
  j["gpus"] = u.gpus;
  return j;
}

PcieUplinkReadings uplink_from(const Json& j, const std::string& field) {
  object_at(j, field,
            {"id", "device", "gen_current", "width_current", "gen_max", "width_max", "gpus"});
  PcieUplinkReadings u;
  u.id = opt_string(j, field, "id");
  if (u.id.empty()) bad_pcie_reading(path(field, "id"), "expected the root port's PCI address");
  u.device = opt_string(j, field, "device");
  u.gen_current = opt_int(j, field, "gen_current");
  u.width_current = opt_int(j, field, "width_current");
  u.gen_max = opt_int(j, field, "gen_max");
  u.width_max = opt_int(j, field, "width_max");
  u.gpus = string_list(j, field, "gpus");
  return u;
}

}  // namespace

void to_json(nlohmann::ordered_json& j, const PcieReadings& r) {
  j = Json::object();
  j["topology"] = r.topology;
  j["gpus"] = Json::array();
  for (const auto& g : r.gpus) j["gpus"].push_back(gpu_json(g));
  j["uplinks"] = Json::array();
  for (const auto& u : r.uplinks) j["uplinks"].push_back(uplink_json(u));
}

void from_json(const nlohmann::ordered_json& j, PcieReadings& r) {
  // "counters": the error counters read around the copies, read by their own code
  // (checks/common/counters.hpp).
  object_at(j, "", {"topology", "gpus", "uplinks", "counters"});
  r = PcieReadings{};
  if (find(j, "topology") != nullptr) r.topology = opt_string(j, "", "topology");
  if (r.topology != "sysfs" && r.topology != "partial" && r.topology != "unknown") {
    bad_pcie_reading("topology", "expected \"sysfs\", \"partial\" or \"unknown\"");
  }
  std::set<std::string> entities;
  if (const Json* gpus = find(j, "gpus")) {
    if (!gpus->is_array()) bad_pcie_reading("gpus", "expected an array");
    for (std::size_t i = 0; i < gpus->size(); ++i) {
      const std::string field = "gpus[" + std::to_string(i) + "]";
      r.gpus.push_back(gpu_from((*gpus)[i], field));
      if (!entities.insert("gpu" + std::to_string(r.gpus.back().index)).second) {
        bad_pcie_reading(field + ".index",
                         "GPU " + std::to_string(r.gpus.back().index) + " appears twice");
      }
    }
  }
  std::map<std::string, std::string> placed;  // GPU entity -> the uplink holding it
  if (const Json* uplinks = find(j, "uplinks")) {
    if (!uplinks->is_array()) bad_pcie_reading("uplinks", "expected an array");
    for (std::size_t i = 0; i < uplinks->size(); ++i) {
      const std::string field = "uplinks[" + std::to_string(i) + "]";
      r.uplinks.push_back(uplink_from((*uplinks)[i], field));
      const auto& u = r.uplinks.back();
      for (std::size_t k = 0; k < u.gpus.size(); ++k) {
        const std::string gpu_field = field + ".gpus[" + std::to_string(k) + "]";
        if (entities.count(u.gpus[k]) == 0) {
          bad_pcie_reading(gpu_field, u.gpus[k] + " is not among the readings' gpus");
        }
        const auto [at, fresh] = placed.emplace(u.gpus[k], u.id);
        if (!fresh)
          bad_pcie_reading(gpu_field, u.gpus[k] + " is already behind uplink " + at->second);
      }
    }
  }
}

}  // namespace preflight
