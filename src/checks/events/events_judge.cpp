// The events check's judgement (judge_events, events_readings.hpp): readings in, findings out.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "checks/common/xid_catalog.hpp"
#include "checks/common/xid_findings.hpp"
#include "checks/events/events_findings.hpp"
#include "checks/events/events_readings.hpp"
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
  return xid_bucket_finding(spec, entity_of(r, g), std::move(message))
      .measured(static_cast<double>(g.count), "events");
}

// Corrected errors summed over a scope (the host, or one device) against their limit.
struct Tally {
  std::uint64_t count = 0;
  const EventGroup* first = nullptr;
};

// The scopes whose corrected errors reach `key`'s limit, each with its message; the caller
// makes the finding (its code spelt out).
struct OverLimit {
  std::string entity;
  std::string message;
  double count = 0;
  double limit = 0;
};

std::vector<OverLimit> over_limit(const EventsReadings& r,
                                  const std::map<std::string, Tally>& tallies, const char* key,
                                  const char* what, const Thresholds& thresholds) {
  std::vector<OverLimit> out;
  const double limit = thresholds.get(key);
  for (const auto& [entity, t] : tallies) {
    if (static_cast<double>(t.count) < limit) continue;
    std::string message = std::to_string(t.count) + " " + what + " in " +
                          (r.counted == "file" ? "the log judged" : "the part of the log judged") +
                          ", at or above " + key;
    if (t.first != nullptr && !t.first->text.empty())
      message += "; first: \"" + t.first->text + "\"";
    out.push_back({entity, std::move(message), static_cast<double>(t.count), limit});
  }
  return out;
}

}  // namespace

std::vector<Finding> judge_events(const EventsReadings& r, const Thresholds& thresholds) {
  std::vector<Finding> out;
  // Nothing was read; only a drill's events can follow.
  if (!r.unreadable.empty()) {
    out.push_back(make_finding(events_findings(), "KERNEL_LOG_UNREADABLE", "node",
                               "kernel events not judged: " + r.unreadable));
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
  for (OverLimit& o :
       over_limit(r, mce, "events.mce_corrected_warn", "corrected machine checks", thresholds)) {
    out.push_back(make_finding(events_findings(), "HOST_MCE_CORRECTED", o.entity, o.message)
                      .measured(o.count, "events", o.limit));
  }
  for (OverLimit& o : over_limit(r, edac, "events.edac_corrected_warn",
                                 "corrected memory errors (EDAC)", thresholds)) {
    out.push_back(make_finding(events_findings(), "HOST_EDAC_CORRECTED", o.entity, o.message)
                      .measured(o.count, "errors", o.limit));
  }
  for (OverLimit& o :
       over_limit(r, aer, "events.aer_corrected_warn", "corrected PCIe errors (AER)", thresholds)) {
    out.push_back(make_finding(events_findings(), "PCIE_AER_CORRECTED", o.entity, o.message)
                      .measured(o.count, "events", o.limit));
  }
  // EDAC's counts since boot: an uncorrected error fails; corrected ones warn at a daily rate of
  // events.edac_corrected_warn (mcelog's 10 per 24 h), over a day at least.
  std::uint64_t corrected = 0;
  for (const EdacCounts& e : r.edac) {
    corrected += e.corrected;
    if (e.uncorrected == 0) continue;
    out.push_back(make_finding(events_findings(), "HOST_EDAC_UNCORRECTED", "node",
                               "EDAC " + e.controller + ": " + std::to_string(e.uncorrected) +
                                   " uncorrected memory errors since boot (sysfs ue_count)")
                      .measured(static_cast<double>(e.uncorrected), "errors"));
  }
  if (corrected > 0 && r.uptime_s) {
    const double days = std::max(1.0, *r.uptime_s / 86400.0);
    const double per_day = static_cast<double>(corrected) / days;
    const double limit = thresholds.get("events.edac_corrected_warn");
    if (per_day >= limit) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "EDAC: %llu corrected memory errors since boot (sysfs ce_count), %.1f per day "
                    "over %.1f days, at or above events.edac_corrected_warn",
                    static_cast<unsigned long long>(corrected), per_day, *r.uptime_s / 86400.0);
      out.push_back(make_finding(events_findings(), "HOST_EDAC_CORRECTED", "node", text)
                        .measured(per_day, "errors/day", limit));
    }
  }
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
