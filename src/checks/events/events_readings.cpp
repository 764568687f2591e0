// The events check's readings as JSON (events_readings.hpp). Hand-writable: a corpus file or
// an operator's edit gets one line naming the field it cannot use.
#include "checks/events/events_readings.hpp"

#include "model/bounded_input.hpp"
#include "model/json_fields.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using Json = nlohmann::ordered_json;

Json optional_json(const std::optional<std::uint64_t>& v) {
  return v ? Json(*v) : Json(nullptr);
}
Json optional_json(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}

Json entities_json(const std::vector<DeviceEntity>& list) {
  Json arr = Json::array();
  for (const DeviceEntity& d : list) arr.push_back({{"entity", d.entity}, {"bus_id", d.bus_id}});
  return arr;
}

std::vector<DeviceEntity> entities_of(const Fields& f, const char* key) {
  std::vector<DeviceEntity> out;
  for (const Fields& e : f.objects(key)) {
    DeviceEntity d;
    d.entity = e.text("entity");
    d.bus_id = normalize_pci_address(e.text("bus_id"));
    if (d.entity.empty()) e.fail("entity", "missing");
    if (d.bus_id.empty()) e.fail("bus_id", "expected a PCI address like 0000:3b:00.0");
    out.push_back(std::move(d));
  }
  return out;
}

EventGroup group_of(const Fields& e) {
  EventGroup g;
  const std::string kind = e.text("kind");
  const auto parsed = parse_event_kind(kind);
  if (!parsed) e.fail("kind", "unknown event kind \"" + printable(kind) + "\"");
  g.kind = *parsed;
  g.xid = static_cast<int>(e.integer("xid", 0, 1'000'000).value_or(0));
  const std::string device = e.text("device");
  g.device = device.empty() ? "" : normalize_pci_address(device, g.kind != EventKind::xid);
  if (!device.empty() && g.device.empty()) {
    e.fail("device", "expected a PCI address like 0000:3b:00.0, got \"" + printable(device) + "\"");
  }
  const auto count = e.count("count");
  if (!count || *count == 0) e.fail("count", "expected a count of at least 1");
  g.count = *count;
  g.first_seq = e.count("first_seq");
  g.last_seq = e.count("last_seq");
  g.first_s = e.number("first_s");
  g.last_s = e.number("last_s");
  g.text = e.text("text").substr(0, kMaxEventText);
  return g;
}

}  // namespace

void to_json(nlohmann::ordered_json& j, const EventsReadings& r) {
  j = Json::object();
  j["source"] = r.source;
  j["path"] = r.path;
  j["boot_id"] = r.boot_id;
  j["counted"] = r.counted;
  j["window_hours"] = optional_json(r.window_hours);
  j["cursor_seq"] = optional_json(r.cursor_seq);
  j["records"] = r.records;
  j["counted_records"] = r.counted_records;
  j["last_seq"] = optional_json(r.last_seq);
  j["lost"] = r.lost;
  j["missed"] = r.missed;
  j["bound"] = r.bound;
  j["unreadable"] = r.unreadable;
  j["gpus"] = entities_json(r.gpus);
  j["nics"] = entities_json(r.nics);
  Json edac = Json::array();
  for (const EdacCounts& e : r.edac) {
    edac.push_back(
        {{"controller", e.controller}, {"corrected", e.corrected}, {"uncorrected", e.uncorrected}});
  }
  j["edac"] = std::move(edac);
  j["uptime_s"] = optional_json(r.uptime_s);
  Json events = Json::array();
  for (const EventGroup& g : r.events) {
    Json e = Json::object();
    e["kind"] = std::string(to_string(g.kind));
    if (g.kind == EventKind::xid) e["xid"] = g.xid;
    e["device"] = g.device;
    e["count"] = g.count;
    e["first_seq"] = optional_json(g.first_seq);
    e["last_seq"] = optional_json(g.last_seq);
    e["first_s"] = optional_json(g.first_s);
    e["last_s"] = optional_json(g.last_s);
    e["text"] = g.text;
    events.push_back(std::move(e));
  }
  j["events"] = std::move(events);
  j["events_truncated"] = r.events_truncated;
}

void from_json(const nlohmann::ordered_json& j, EventsReadings& r) {
  const Fields f(j, "");
  r.source = f.text("source");
  if (r.source != "live" && r.source != "file") {
    f.fail("source", "expected \"live\" or \"file\", got \"" + printable(r.source) + "\"");
  }
  r.path = f.text("path");
  r.boot_id = f.text("boot_id");
  r.counted = f.text("counted");
  r.window_hours = f.number("window_hours");
  r.cursor_seq = f.count("cursor_seq");
  r.records = f.count("records").value_or(0);
  r.counted_records = f.count("counted_records").value_or(0);
  r.last_seq = f.count("last_seq");
  r.lost = f.count("lost").value_or(0);
  r.missed = f.count("missed").value_or(0);
  r.bound = f.text("bound");
  r.unreadable = f.text("unreadable");
  r.gpus = entities_of(f, "gpus");
  r.nics = entities_of(f, "nics");
  for (const Fields& e : f.objects("edac")) {
    EdacCounts counts;
    counts.controller = e.text("controller");
    counts.corrected = e.count("corrected").value_or(0);
    counts.uncorrected = e.count("uncorrected").value_or(0);
    r.edac.push_back(std::move(counts));
  }
  r.uptime_s = f.number("uptime_s");
  if (r.uptime_s && !(*r.uptime_s >= 0)) f.fail("uptime_s", "expected seconds (>= 0)");
  const std::vector<Fields> events = f.objects("events");
  if (events.size() > kMaxEventGroups) {
    f.fail("events", "more than " + std::to_string(kMaxEventGroups) + " event groups");
  }
  for (const Fields& e : events) r.events.push_back(group_of(e));
  r.events_truncated = f.flag("events_truncated").value_or(false);
}

}  // namespace preflight
