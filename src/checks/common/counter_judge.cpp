// Error counters in readings, and their judgement (counters.hpp; docs/checks/counters.md). The
// limits and their sources: docs/thresholds.md, "Error counters under load".
#include <algorithm>
#include <cstdio>
#include <map>

#include "checks/common/counters.hpp"
#include "checks/common/fault_kinds.hpp"
#include "checks/common/judgement.hpp"
#include "checks/common/xid_catalog.hpp"
#include "checks/common/xid_findings.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

// A rate over a window of at least one period, so a short check does not turn one stray error
// into a high rate: 1 error in a 0.4 s check is 1 per minute, not 150.
double rate(std::uint64_t delta, double seconds, double period_s) {
  return static_cast<double>(delta) * period_s / std::max(seconds, period_s);
}

std::string format(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value < 10 ? "%.2g" : "%.0f", value);
  return text;
}

// Rises per entity: counter -> delta, for counters read at both ends that did not go backwards
// (a driver reload or a counter reset between the readings is no rise).
using Rises = std::map<std::string, std::map<std::string, std::uint64_t>>;

Rises rises_of(const CounterWindow& w) {
  Rises rises;
  for (const CounterValue& v : w.values) {
    if (!v.before || !v.after || *v.after < *v.before) continue;
    rises[v.entity][v.counter] = *v.after - *v.before;
  }
  return rises;
}

std::uint64_t sum(const std::map<std::string, std::uint64_t>& counters,
                  std::initializer_list<const char*> names) {
  std::uint64_t total = 0;
  for (const char* n : names) {
    const auto it = counters.find(n);
    if (it != counters.end()) total += it->second;
  }
  return total;
}

// The RDMA link errors judged together: errors of the physical link and its receiver. Congestion
// counters (transmit discards, out-of-sequence, sequence errors, ACK timeouts) rise on a healthy
// fabric under load and are recorded, not judged.
constexpr std::initializer_list<const char*> kRdmaLinkErrors = {
    "symbol_error", "link_error_recovery", "port_rcv_errors", "local_link_integrity_errors",
    "excessive_buffer_overrun_errors"};

}  // namespace

void record_counters(Readings& readings, const CounterWindow& window) {
  Readings values = Readings::array();
  for (const CounterValue& v : window.values) {
    Readings item = {{"entity", v.entity}, {"counter", v.counter}};
    item["before"] = v.before ? Readings(*v.before) : Readings(nullptr);
    item["after"] = v.after ? Readings(*v.after) : Readings(nullptr);
    if (v.injected) item["injected"] = true;
    if (v.previous_run) item["previous_run"] = *v.previous_run;
    values.push_back(std::move(item));
  }
  readings["counters"] = {{"seconds", window.seconds},
                          {"values", std::move(values)},
                          {"not_available", window.not_available}};
  if (window.xid_events_read) {
    Readings xids = Readings::array();
    for (const CounterXid& x : window.xids) {
      xids.push_back(
          {{"entity", x.entity}, {"xid", x.xid}, {"during", x.during}, {"count", x.count}});
    }
    readings["counters"]["xid_events"] = std::move(xids);
  }
}

std::optional<CounterWindow> counters_of(const Readings& readings) {
  if (!readings.is_object() || !readings.contains("counters")) return std::nullopt;
  const Readings& c = readings.at("counters");
  if (!c.is_object()) throw InvalidInput("counters: not an object");
  CounterWindow w;
  w.seconds = c.at("seconds").get<double>();
  if (!(w.seconds >= 0)) throw InvalidInput("counters.seconds: negative");
  const auto number = [](const Readings& item, const char* key) -> std::optional<std::uint64_t> {
    if (!item.contains(key) || item.at(key).is_null()) return std::nullopt;
    if (!item.at(key).is_number_unsigned()) {
      throw InvalidInput(std::string("counters.values[].") + key + ": not a count");
    }
    return item.at(key).get<std::uint64_t>();
  };
  for (const Readings& item : c.at("values")) {
    CounterValue v;
    v.entity = item.at("entity").get<std::string>();
    v.counter = item.at("counter").get<std::string>();
    v.before = number(item, "before");
    v.after = number(item, "after");
    v.injected = item.value("injected", false);
    v.previous_run = number(item, "previous_run");
    w.values.push_back(std::move(v));
  }
  if (c.contains("not_available")) {
    w.not_available = c.at("not_available").get<std::vector<std::string>>();
  }
  if (c.contains("xid_events")) {
    w.xid_events_read = true;
    for (const Readings& item : c.at("xid_events")) {
      CounterXid x;
      x.entity = item.at("entity").get<std::string>();
      x.xid = item.at("xid").get<int>();
      x.during = item.at("during").get<std::string>();
      if (x.during != "load" && x.during != "before") {
        throw InvalidInput("counters.xid_events[].during: \"" + x.during +
                           "\" is neither load nor before");
      }
      if (!item.at("count").is_number_unsigned()) {
        throw InvalidInput("counters.xid_events[].count: not a count");
      }
      x.count = item.at("count").get<std::uint64_t>();
      w.xids.push_back(std::move(x));
    }
  }
  return w;
}

std::vector<Finding> judge_counters(const Readings& readings, const Thresholds& thresholds,
                                    std::string_view check) {
  std::vector<Finding> findings;
  const auto window = counters_of(readings);
  if (!window) return findings;
  const std::string prefix = std::string(check) + ".";
  const auto limit = [&](const char* key) -> std::optional<double> {
    const std::string full = prefix + key;
    if (thresholds.find_spec(full) == nullptr) return std::nullopt;
    return thresholds.get(full);
  };
  const double s = window->seconds;
  const std::string over = "over " + format(s) + " s of load";
  for (const auto& [entity, counters] : rises_of(*window)) {
    if (const auto max = limit("ecc_corrected_per_s")) {
      const std::uint64_t d = sum(counters, {"ecc_corrected_volatile"});
      const double r = rate(d, s, 1.0);
      if (d > 0 && r >= *max) {
        findings.push_back(make_finding(counter_findings(), "ECC_CORRECTED_UNDER_LOAD", entity,
                                        std::to_string(d) + " corrected ECC errors " + over + " (" +
                                            format(r) + " per s)")
                               .measured(r, "per s", *max));
      }
    }
    if (const auto max = limit("replays_per_min")) {
      const std::uint64_t d = sum(counters, {"pcie_replay"});
      const double r = rate(d, s, 60.0);
      if (d > 0 && r >= *max) {
        findings.push_back(make_finding(counter_findings(), "PCIE_REPLAYS_UNDER_LOAD", entity,
                                        std::to_string(d) + " PCIe replays " + over + " (" +
                                            format(r) + " per min)")
                               .measured(r, "per min", *max));
      }
    }
    if (const auto max = limit("aer_corrected_per_min")) {
      const std::uint64_t d = sum(counters, {"aer_corrected"});
      const double r = rate(d, s, 60.0);
      if (d > 0 && r >= *max) {
        findings.push_back(make_finding(counter_findings(), "PCIE_AER_CORRECTED_UNDER_LOAD", entity,
                                        std::to_string(d) + " corrected PCIe errors (AER) " + over +
                                            " (" + format(r) + " per min)")
                               .measured(r, "per min", *max));
      }
    }
    if (const auto max = limit("nvlink_crc_per_s")) {
      const std::uint64_t d = sum(counters, {"nvlink_crc_flit", "nvlink_crc_data"});
      const double r = rate(d, s, 1.0);
      if (d > 0 && r >= *max) {
        findings.push_back(make_finding(counter_findings(), "NVLINK_CRC_UNDER_LOAD", entity,
                                        std::to_string(d) + " NVLink CRC errors " + over + " (" +
                                            format(r) + " per s)")
                               .measured(r, "per s", *max));
      }
    }
    if (const auto max = limit("nvlink_replays")) {
      const std::uint64_t d = sum(counters, {"nvlink_replay", "nvlink_recovery"});
      if (d > 0 && static_cast<double>(d) >= *max) {
        findings.push_back(
            make_finding(counter_findings(), "NVLINK_REPLAYS_UNDER_LOAD", entity,
                         std::to_string(d) + " NVLink replays and recoveries " + over)
                .measured(static_cast<double>(d), "count", *max));
      }
    }
    if (const auto max = limit("port_errors_per_min")) {
      const std::uint64_t d = sum(counters, kRdmaLinkErrors);
      const double r = rate(d, s, 60.0);
      if (d > 0 && r >= *max) {
        findings.push_back(make_finding(counter_findings(), "RDMA_PORT_ERRORS_UNDER_LOAD", entity,
                                        std::to_string(d) +
                                            " link errors (symbol, recovery, receive, integrity, "
                                            "overrun) " +
                                            over + " (" + format(r) + " per min)")
                               .measured(r, "per min", *max));
      }
    }
  }
  return findings;
}

std::vector<Finding> observe_counters(const Readings& readings) {
  std::vector<Finding> findings;
  const auto window = counters_of(readings);
  if (!window) return findings;
  const std::string over = "over " + format(window->seconds) + " s of load";
  // The driver's own Xid events, judged by the same table as the kernel log's (xid_catalog.hpp):
  // the code that tells an operator what to do is the same whichever way the Xid arrived.
  for (const CounterXid& x : window->xids) {
    const XidSpec* spec = find_xid(x.xid);
    std::string message = "Xid " + std::to_string(x.xid);
    if (spec != nullptr) message += " (" + std::string(spec->name) + ")";
    message += " reported by the driver ";
    message += x.during == "load" ? "during this check's load" : "before this check's load";
    if (x.count > 1) message += ", " + std::to_string(x.count) + " times";
    findings.push_back(xid_bucket_finding(spec, x.entity, std::move(message))
                           .measured(static_cast<double>(x.count), "events"));
  }
  for (const auto& [entity, counters] : rises_of(*window)) {
    if (const auto d = sum(counters, {"ecc_uncorrected_volatile"}); d > 0) {
      findings.push_back(make_finding(counter_findings(), "ECC_UNCORRECTED_UNDER_LOAD", entity,
                                      std::to_string(d) + " uncorrectable ECC errors " + over)
                             .measured(static_cast<double>(d), "count", 0));
    }
    if (const auto d = sum(counters, {"aer_nonfatal", "aer_fatal"}); d > 0) {
      findings.push_back(
          make_finding(
              counter_findings(), "PCIE_AER_UNCORRECTED_UNDER_LOAD", entity,
              std::to_string(d) + " uncorrected PCIe errors (AER non-fatal and fatal) " + over)
              .measured(static_cast<double>(d), "count", 0));
    }
    if (const auto d = sum(counters, {"link_downed"}); d > 0) {
      findings.push_back(make_finding(counter_findings(), "RDMA_LINK_DOWNED_UNDER_LOAD", entity,
                                      "the link went down " + std::to_string(d) + " times " + over)
                             .measured(static_cast<double>(d), "count", 0));
    }
  }
  return findings;
}

ThresholdSpecs counter_thresholds(std::string_view check,
                                  const std::vector<CounterFamily>& families) {
  (void)families;  // the keys are named by check: one check's keys serve all its families
  // Keys are string_views: every one a literal here. Sources in docs/thresholds.md.
  static const ThresholdSpecs all = {
      {"gemm.ecc_corrected_per_s", "per s",
       "corrected ECC errors per second of the products (counted over 1 s at least) at or above "
       "this warn",
       0.001, 1e9, false, 10},
      {"hbm.ecc_corrected_per_s", "per s",
       "corrected ECC errors per second of the memory test (counted over 1 s at least) at or "
       "above this warn",
       0.001, 1e9, false, 10},
      {"pcie.replays_per_min", "per min",
       "PCIe replays per minute of the copies (counted over 1 min at least) at or above this warn",
       0.001, 1e9, false, 8},
      {"pcie.aer_corrected_per_min", "per min",
       "corrected PCIe errors (AER) per minute of the copies (counted over 1 min at least) at or "
       "above this warn",
       0.001, 1e9, false, 8},
      {"nvlink.nvlink_crc_per_s", "per s",
       "NVLink CRC errors per second of the copies (counted over 1 s at least) at or above this "
       "warn",
       0.001, 1e9, false, 100},
      {"nvlink.nvlink_replays", "count",
       "NVLink replays and recoveries during the copies at or above this warn", 1, 1e9, true, 1},
      {"nccl.nvlink_crc_per_s", "per s",
       "NVLink CRC errors per second of the collectives (counted over 1 s at least) at or above "
       "this warn",
       0.001, 1e9, false, 100},
      {"nccl.nvlink_replays", "count",
       "NVLink replays and recoveries during the collectives at or above this warn", 1, 1e9, true,
       1},
      {"rdma.port_errors_per_min", "per min",
       "RDMA link errors (symbol, link recovery, receive, integrity, overrun) per minute of the "
       "transfers (counted over 1 min at least) at or above this warn",
       0.001, 1e9, false, 10},
  };
  ThresholdSpecs own;
  const std::string prefix = std::string(check) + ".";
  for (const ThresholdSpec& spec : all) {
    if (spec.key.substr(0, prefix.size()) == prefix) own.push_back(spec);
  }
  return own;
}

std::vector<FaultKindSpec> counter_fault_kinds(std::string_view check,
                                               const std::vector<CounterFamily>& families) {
  const auto has = [&](CounterFamily f) {
    return std::find(families.begin(), families.end(), f) != families.end();
  };
  std::vector<FaultKindSpec> kinds;
  const auto number = [](std::string kind, TargetType target, std::string description,
                         std::vector<std::string> codes) {
    return fault_kind(std::move(kind), target, std::move(description), std::move(codes),
                      FaultValue::optional_number, 1, 1e9);
  };
  if (check == "gemm" && has(CounterFamily::gpu_ecc)) {
    kinds.push_back(number("ecc-correctable-rise", TargetType::gpu,
                           "the GPU's corrected ECC count rises by N (default 1) during the "
                           "products",
                           {"ECC_CORRECTED_UNDER_LOAD"}));
    kinds.push_back(number("ecc-uncorrectable-rise", TargetType::gpu,
                           "the GPU's uncorrectable ECC count rises by N (default 1) during the "
                           "products",
                           {"ECC_UNCORRECTED_UNDER_LOAD"}));
  }
  if (check == "pcie" && has(CounterFamily::gpu_pcie)) {
    kinds.push_back(number("pcie-replay-rise", TargetType::gpu,
                           "the GPU's PCIe replay counter rises by N (default 1) during the copies",
                           {"PCIE_REPLAYS_UNDER_LOAD"}));
    kinds.push_back(number("aer-corrected-rise", TargetType::gpu,
                           "the GPU's corrected AER count rises by N (default 1) during the copies",
                           {"PCIE_AER_CORRECTED_UNDER_LOAD"}));
    kinds.push_back(number("aer-fatal-rise", TargetType::gpu,
                           "the GPU's fatal AER count rises by N (default 1) during the copies",
                           {"PCIE_AER_UNCORRECTED_UNDER_LOAD"}));
  }
  if (check == "nvlink" && has(CounterFamily::gpu_nvlink)) {
    kinds.push_back(number("nvlink-crc-rise", TargetType::gpu,
                           "the GPU's NVLink CRC count rises by N (default 1) during the copies",
                           {"NVLINK_CRC_UNDER_LOAD"}));
  }
  if (check == "rdma" && has(CounterFamily::rnic)) {
    kinds.push_back(number("rnic-symbol-errors", TargetType::nic,
                           "the port's symbol error counter rises by N (default 1) during the "
                           "transfers",
                           {"RDMA_PORT_ERRORS_UNDER_LOAD", "FAULT_TARGET_MISSING"}));
    kinds.push_back(number("rnic-link-downed", TargetType::nic,
                           "the port's link-downed counter rises by N (default 1) during the "
                           "transfers",
                           {"RDMA_LINK_DOWNED_UNDER_LOAD", "FAULT_TARGET_MISSING"}));
  }
  return kinds;
}

void declare_counters(CheckInfo& info, const std::vector<CounterFamily>& families) {
  // A GPU check plans nothing on a node without GPUs, so the readings cost nothing there. The
  // RDMA ports' readings are in the rdma check's own model, which knows when it has ports to
  // load (a node without compute NICs only lists its devices).
  const bool gpu_counters = std::any_of(families.begin(), families.end(),
                                        [](CounterFamily f) { return f != CounterFamily::rnic; });
  if (gpu_counters) info.fixed_overhead_s += kCounterReadSeconds;
  info.findings.push_back(&counter_findings());
  info.findings.push_back(&xid_findings());  // the driver's Xid events under the load
  for (const ThresholdSpec& spec : counter_thresholds(info.name, families)) {
    info.thresholds.push_back(spec);
  }
  for (FaultKindSpec& kind : counter_fault_kinds(info.name, families)) {
    info.fault_kinds.push_back(std::move(kind));
  }
}

void close_counters(CheckResult& result, const CounterWindow& window, const Thresholds& thresholds,
                    std::string_view check) {
  Readings own = Readings::object();
  record_counters(own, window);
  if (result.readings.is_object()) result.readings["counters"] = own["counters"];
  if (!window.state_file.empty())
    result.state_if_healthy.push_back({window.state_file, window.state});
  for (Finding& f : observe_counters(own)) result.findings.push_back(std::move(f));
  add_judged(result.findings, judge_counters(own, thresholds, check));
}

}  // namespace preflight
