// The events check's judgement (judge_events, events_readings.hpp): readings in, findings out.
#include <cmath>
#include <map>
#include <sstream>

#include "checks/events/events_findings.hpp"
#include "checks/events/events_readings.hpp"
#include "checks/events/xid_catalog.hpp"
#include "preflight/catalogue.hpp"

namespace preflight {

namespace {

// The entity a device is: the GPU or NIC at that address, else the address itself ("pci:..."),
// so an Xid on a GPU that discovery did not find still names where it was; the node for the
// host's events.
std::string entity_of(const EventsReadings& r, const EventGroup& g) {
  if (g.device.empty()) return "node";
  const bool gpu_form = g.kind == EventKind::xid;  // "0000:3b:00", without the function
  for (const DeviceEntity& d : r.gpus) {
    const std::string bus = gpu_form ? normalize_pci_address(d.bus_id, false) : d.bus_id;
    if (bus == g.device) return d.entity;
  }
  for (const DeviceEntity& d : r.nics) {
    if (d.bus_id == g.device) return d.entity;
  }
  return "pci:" + g.device;
}

std::string times(std::uint64_t n) {
  return n == 1 ? "once" : std::to_string(n) + " times";
}

// Where in the log: "seq 1234, 5.2 h after boot".
std::string when(const EventGroup& g) {
  std::ostringstream os;
  os.precision(3);
  if (g.first_seq) os << "record " << *g.first_seq;
  if (g.first_s) {
    if (g.first_seq) os << ", ";
    const double s = *g.first_s;
    if (s < 120) {
      os << s << " s after boot";
    } else if (s < 7200) {
      os << s / 60 << " min after boot";
    } else {
      os << s / 3600 << " h after boot";
    }
  }
  return os.str();
}

std::string detail(const EventGroup& g) {
  std::string out = times(g.count);
  const std::string at = when(g);
  if (!at.empty()) out += " (first: " + at + ")";
  if (!g.text.empty()) out += ": \"" + g.text + "\"";
  return out;
}

std::string_view xid_code(const XidSpec* spec) {
  if (spec == nullptr) return "XID_UNLISTED";
  switch (spec->bucket) {
    case XidBucket::informational:
      return "XID_INFORMATIONAL";
    case XidBucket::application:
      return "XID_APPLICATION";
    case XidBucket::reset_gpu:
      return "XID_RESET_GPU";
    case XidBucket::reboot:
      return "XID_REBOOT";
    case XidBucket::service:
      return "XID_SERVICE";
  }
  return "XID_UNLISTED";
}

Finding xid_finding(const EventsReadings& r, const EventGroup& g) {
  const XidSpec* spec = find_xid(g.xid);
  std::string message = "Xid " + std::to_string(g.xid);
  if (spec != nullptr) message += " (" + std::string(spec->name) + ")";
  if (g.device.empty()) {
    message += " on a GPU the message does not name";
  } else {
    message += " on PCI " + g.device;
  }
  message += ", " + detail(g);
  return make_finding(events_findings(), xid_code(spec), entity_of(r, g), std::move(message))
      .measured(static_cast<double>(g.count), "events");
}

// Corrected errors summed over a scope (the host, or one device) against their limit.
struct Tally {
  std::uint64_t count = 0;
  const EventGroup* first = nullptr;
};

void judge_tally(const EventsReadings& r, const std::map<std::string, Tally>& tallies,
                 std::string_view code, const char* key, const char* what,
                 const Thresholds& thresholds, std::vector<Finding>& out) {
  const double limit = thresholds.get(key);
  for (const auto& [entity, t] : tallies) {
    if (static_cast<double>(t.count) < limit) continue;
    std::string message = std::to_string(t.count) + " " + what + " in " +
                          (r.counted == "file" ? "the log judged" : "the part of the log judged") +
                          ", at or above " + key;
    if (t.first != nullptr && !t.first->text.empty())
      message += "; first: \"" + t.first->text + "\"";
    out.push_back(make_finding(events_findings(), code, entity, std::move(message))
                      .measured(static_cast<double>(t.count), "events", limit));
  }
}

}  // namespace

std::vector<Finding> judge_events(const EventsReadings& r, const Thresholds& thresholds) {
  std::vector<Finding> out;
  if (!r.unreadable.empty()) {
    out.push_back(make_finding(events_findings(), "KERNEL_LOG_UNREADABLE", "node",
                               "kernel events not judged: " + r.unreadable));
    return out;
  }
  std::map<std::string, Tally> mce, edac, aer;
  const auto add = [](std::map<std::string, Tally>& into, const std::string& entity,
                      const EventGroup& g) {
    Tally& t = into[entity];
    t.count += g.count;
    if (t.first == nullptr) t.first = &g;
  };
  for (const EventGroup& g : r.events) {
    const std::string entity = entity_of(r, g);
    switch (g.kind) {
      case EventKind::xid:
        out.push_back(xid_finding(r, g));
        break;
      case EventKind::mce_uncorrected:
        out.push_back(make_finding(events_findings(), "HOST_MCE_UNCORRECTED", "node",
                                   "uncorrected machine check, " + detail(g))
                          .measured(static_cast<double>(g.count), "events"));
        break;
      case EventKind::edac_uncorrected:
        out.push_back(make_finding(events_findings(), "HOST_EDAC_UNCORRECTED", "node",
                                   "EDAC uncorrected memory error, " + detail(g))
                          .measured(static_cast<double>(g.count), "errors"));
        break;
      case EventKind::aer_fatal:
        out.push_back(make_finding(events_findings(), "PCIE_AER_FATAL", entity,
                                   "PCIe fatal uncorrectable error (AER), " + detail(g))
                          .measured(static_cast<double>(g.count), "events"));
        break;
      case EventKind::aer_nonfatal:
        out.push_back(make_finding(events_findings(), "PCIE_AER_UNCORRECTED", entity,
                                   "PCIe non-fatal uncorrectable error (AER), " + detail(g))
                          .measured(static_cast<double>(g.count), "events"));
        break;
      case EventKind::link_down:
        out.push_back(make_finding(events_findings(), "NIC_LINK_FLAP", entity,
                                   "network port went down after it had been up, " + detail(g))
                          .measured(static_cast<double>(g.count), "events"));
        break;
      case EventKind::mce_corrected:
        add(mce, "node", g);
        break;
      case EventKind::edac_corrected:
        add(edac, "node", g);
        break;
      case EventKind::aer_corrected:
        add(aer, entity, g);
        break;
      case EventKind::link_up:
        break;
    }
  }
  judge_tally(r, mce, "HOST_MCE_CORRECTED", "events.mce_corrected_warn", "corrected machine checks",
              thresholds, out);
  judge_tally(r, edac, "HOST_EDAC_CORRECTED", "events.edac_corrected_warn",
              "corrected memory errors (EDAC)", thresholds, out);
  judge_tally(r, aer, "PCIE_AER_CORRECTED", "events.aer_corrected_warn",
              "corrected PCIe errors (AER)", thresholds, out);
  std::vector<std::string> gaps;
  if (r.lost > 0) gaps.push_back(std::to_string(r.lost) + " records overwritten while read");
  if (r.missed > 0) {
    gaps.push_back(std::to_string(r.missed) +
                   " records after the cursor overwritten before this run (the ring buffer "
                   "wrapped)");
  }
  if (!r.bound.empty()) gaps.push_back("the reader stopped at " + r.bound);
  if (r.events_truncated) {
    gaps.push_back("more than " + std::to_string(kMaxEventGroups) +
                   " kinds of event; the rest not kept");
  }
  if (!gaps.empty()) {
    std::string message = "part of the kernel log not judged: ";
    for (std::size_t i = 0; i < gaps.size(); ++i) message += (i > 0 ? "; " : "") + gaps[i];
    out.push_back(make_finding(events_findings(), "KERNEL_LOG_INCOMPLETE", "node", message));
  }
  return out;
}

}  // namespace preflight
