#include "checks/rdma/rdma_check.hpp"

#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>

#include "checks/bandwidth/bandwidth_math.hpp"  // pcie_link_gbps, pcie_link_name
#include "checks/common/call_bounded.hpp"
#include "checks/common/fault_kinds.hpp"
#include "checks/rdma/rdma_math.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;

constexpr const char* kExpectFlag = "--expect-rnics";
constexpr auto kInventoryBudget = 15s;
constexpr auto kConnectAllowance = 10s;  // beyond a transfer's seconds: setup, connect, drain

// Seconds of RDMA writes per transfer, by profile.
double transfer_seconds(Profile profile) {
  switch (profile) {
    case Profile::quick:
      return 0.25;
    case Profile::standard:
      return 2.0;
    case Profile::burnin:
      return 10.0;
  }
  return 0.25;
}

std::string format_gbit(double gbps) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f Gb/s", gbps);
  return text;
}

std::string port_entity(const std::string& device, int port) {
  return port == 1 ? device : device + ":" + std::to_string(port);
}

// NVML spells bus ids "00000000:1B:00.0"; sysfs "0000:1b:00.0".
std::string sysfs_bus_id(const std::string& nvml_bus_id) {
  std::string id = nvml_bus_id.size() == 16 ? nvml_bus_id.substr(4) : nvml_bus_id;
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

std::vector<GpuLocation> gpu_locations(const NodeReading& node) {
  std::vector<GpuLocation> out;
  for (const auto& g : node.gpus) {
    if (g.pci_bus_id.empty()) continue;
    const std::string link = "/sys/bus/pci/devices/" + sysfs_bus_id(g.pci_bus_id);
    char resolved[PATH_MAX];
    if (realpath(link.c_str(), resolved) == nullptr) continue;
    GpuLocation loc;
    loc.index = g.index;
    loc.sysfs_path = resolved;
    std::ifstream numa(link + "/numa_node");
    if (!(numa >> loc.numa_node)) loc.numa_node = -1;
    out.push_back(loc);
  }
  return out;
}

// rdma-down and rdma-slow name NICs; a name the node does not have is reported, so a drill
// cannot pass by testing nothing.
void apply_faults(const FaultPlan& faults, RdmaInventory& inv, std::map<std::string, double>& slow,
                  std::vector<Finding>& findings) {
  for (const char* kind : {"rdma-down", "rdma-slow"}) {
    for (const InjectedFault* f : faults.of_kind(kind)) {
      auto it = std::find_if(inv.devices.begin(), inv.devices.end(),
                             [&](const RdmaDevice& d) { return d.name == f->target.name; });
      if (it == inv.devices.end()) {
        Finding missing = make_finding(
            "FAULT_TARGET_MISSING", f->target.name,
            "--inject-fault " + f->spec + ": this node has no RDMA device " + f->target.name);
        missing.injected = true;
        findings.push_back(std::move(missing));
        continue;
      }
      if (std::string(kind) == "rdma-down") {
        for (auto& port : it->ports) {
          port.state = "DOWN";
          port.phys_state = "Disabled";
        }
      } else {
        slow[it->name] = f->number.value_or(1.0);
      }
    }
  }
}

void judge_inventory(const RdmaInventory& inv, const RdmaExpectations& expect,
                     std::vector<Finding>& findings, Metrics& metrics) {
  for (const RdmaDevice& d : inv.devices) {
    if (!d.error.empty()) {
      findings.push_back(make_finding("RDMA_DEVICE_ERROR", d.name, d.error));
      continue;
    }
    for (const RdmaPort& p : d.ports) {
      const double rate =
          p.rate_gbps > 0 ? p.rate_gbps : rdma_port_rate_gbps(p.active_speed, p.active_width);
      if (rate > 0) metrics.push_back({port_entity(d.name, p.port_num), "rate_gbps", rate, "Gb/s"});
    }
    // The NIC's PCIe link must carry its fastest port.
    double fastest = 0;
    for (const RdmaPort& p : d.ports) {
      fastest = std::max(fastest, rdma_port_rate_gbps(p.active_speed, p.active_width));
    }
    if (d.pcie_gen && d.pcie_width) {
      const double link_gbit = pcie_link_gbps(*d.pcie_gen, *d.pcie_width) * 8.0;
      const bool below_max = (d.pcie_max_gen && *d.pcie_gen < *d.pcie_max_gen) ||
                             (d.pcie_max_width && *d.pcie_width < *d.pcie_max_width);
      const bool starved = fastest > 0 && link_gbit < fastest;
      if (below_max || starved) {
        std::string text = "PCIe link " + pcie_link_name(*d.pcie_gen, *d.pcie_width);
        if (d.pcie_max_gen && d.pcie_max_width) {
          text += " (the NIC and slot can do " +
                  pcie_link_name(*d.pcie_max_gen, *d.pcie_max_width) + ")";
        }
        text += " carries " + format_gbit(link_gbit) + " raw";
        if (fastest > 0) text += " for a " + format_gbit(fastest) + " port";
        findings.push_back(
            make_finding("RDMA_PCIE_DEGRADED", d.name, text).measured(link_gbit, "Gb/s", fastest));
      }
    }
  }
  for (const PortJudgement& j : judge_ports(inv.devices, expect)) {
    // The device's port, unless it is the first (the usual single-port NIC).
    int port = j.port;
    const std::string entity = port_entity(j.device, port);
    switch (j.issue) {
      case PortIssue::down:
        findings.push_back(make_finding("RDMA_PORT_DOWN", entity, j.detail));
        break;
      case PortIssue::slow:
        findings.push_back(make_finding("RDMA_PORT_SLOW", entity, j.detail));
        break;
      case PortIssue::no_gid:
        findings.push_back(make_finding("RDMA_NO_GID", entity, j.detail));
        break;
      case PortIssue::unknown_rate:
        findings.push_back(make_finding("RDMA_RATE_UNKNOWN", entity, j.detail));
        break;
      case PortIssue::none:
        break;
    }
  }
  const auto usable = usable_ports(inv.devices);
  if (expect.rnics && static_cast<int>(usable.size()) != *expect.rnics) {
    findings.push_back(make_finding("RDMA_COUNT_MISMATCH", "node",
                                    std::to_string(usable.size()) +
                                        " usable RDMA ports (active, link up), expected " +
                                        std::to_string(*expect.rnics))
                           .measured(static_cast<double>(usable.size()), "ports", *expect.rnics));
  }
  metrics.push_back({"", "usable_ports", static_cast<double>(usable.size()), "count"});
}

void judge_transfer(const PlannedTransfer& t, const std::optional<RdmaTransferResult>& r,
                    const Thresholds& thresholds, std::vector<Finding>& findings,
                    Metrics& metrics) {
  const std::string what =
      t.kind + " " + t.from_device + (t.kind == "pair" ? " -> " + t.to_device : std::string()) +
      (t.memory == RdmaMemory::gpu ? " with gpu" + std::to_string(t.gpu_index) : std::string());
  if (!r || r->timed_out) {
    findings.push_back(
        make_finding("RDMA_TIMEOUT", t.entity, what + ": did not complete before the deadline"));
    return;
  }
  if (!r->error.empty()) {
    if (t.memory == RdmaMemory::gpu && r->registration.empty()) {
      findings.push_back(
          make_finding("RDMA_GPUDIRECT_UNAVAILABLE", t.entity, what + ": " + r->error));
    } else if (!r->connected) {
      findings.push_back(make_finding("RDMA_CONNECT_FAILED", t.entity, what + ": " + r->error));
    } else {
      findings.push_back(make_finding("RDMA_TRANSFER_ERROR", t.entity, what + ": " + r->error));
    }
    return;
  }
  if (r->bad_bytes > 0) {
    findings.push_back(
        make_finding("RDMA_DATA_MISMATCH", t.entity,
                     what + ": " + std::to_string(r->bad_bytes) + " bytes arrived changed")
            .measured(static_cast<double>(r->bad_bytes), "bytes"));
  }
  metrics.push_back({t.entity, t.kind + "_gbps", r->gbps, "Gb/s"});
  if (t.kind == "gpudirect") {
    // Which registration worked matters to NCCL: 1 dma-buf, 0 nvidia-peermem.
    metrics.push_back(
        {t.entity, "gpudirect_dmabuf", r->registration == "dma-buf" ? 1.0 : 0.0, "bool"});
  }
  const TransferClass c =
      classify_transfer(r->gbps, t.expected_gbps, thresholds.get("rdma.fail_fraction"),
                        thresholds.get("rdma.warn_fraction"));
  if (c == TransferClass::ok) return;
  const double fraction =
      thresholds.get(c == TransferClass::fail ? "rdma.fail_fraction" : "rdma.warn_fraction");
  const std::string text = what + ": " + format_gbit(r->gbps) + " of a " +
                           format_gbit(t.expected_gbps) + " port" +
                           (r->registration.empty() ? "" : " (" + r->registration + ")");
  Finding f = c == TransferClass::fail ? make_finding("RDMA_BANDWIDTH_LOW", t.entity, text)
                                       : make_finding("RDMA_BANDWIDTH_MARGINAL", t.entity, text);
  f.measured(r->gbps, "Gb/s", t.expected_gbps * fraction);
  findings.push_back(std::move(f));
}

}  // namespace

std::optional<int> expected_rnics(const CheckOptions& options) {
  const std::string* text = options.find(kExpectFlag);
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text->c_str(), &end, 10);
  if (text->empty() || end != text->c_str() + text->size() || value < 0 || value > 256) {
    throw InvalidInput(std::string(kExpectFlag) + ": '" + *text +
                       "' is not a whole number in 0..256");
  }
  return static_cast<int>(value);
}

RdmaCheck::RdmaCheck() {
  info_.name = "rdma";
  info_.description =
      "RDMA NICs (libibverbs): ports against expectations, the NIC's PCIe link, RDMA-write "
      "loopback per port, every NIC pair through the fabric, GPUDirect from the nearest GPU";
  info_.needs_gpu = false;  // a node's NICs matter without GPUs too
  info_.budget = {std::chrono::seconds(60), std::chrono::seconds(180), std::chrono::seconds(900)};
  info_.fault_kinds = {
      fault_kind("rdma-down", TargetType::nic, "every port of the NIC reads as down",
                 {"RDMA_PORT_DOWN", "RDMA_COUNT_MISMATCH", "FAULT_TARGET_MISSING"}),
      slow_kind("rdma-slow", TargetType::nic,
                "RDMA writes from and to the NIC deliver FACTOR of their bandwidth, e.g. 0.5",
                {"RDMA_BANDWIDTH_LOW", "RDMA_BANDWIDTH_MARGINAL", "FAULT_TARGET_MISSING"}),
  };
  info_.figures = {
      {"rate_gbps",
       {"port"},
       {},
       "preflight_rdma_port_rate_bits_per_second",
       1e9,
       "RDMA port rate",
       ""},
      {"loopback_gbps",
       {"port"},
       {},
       "preflight_rdma_loopback_bits_per_second",
       1e9,
       "verified RDMA write bandwidth of a port to itself",
       ""},
      {"pair_gbps",
       {"src", "dst"},
       {},
       "preflight_rdma_pair_bits_per_second",
       1e9,
       "verified RDMA write bandwidth between NICs",
       ""},
      {"gpudirect_gbps",
       {"nic"},
       {},
       "preflight_rdma_gpudirect_bits_per_second",
       1e9,
       "verified RDMA write bandwidth from the NIC into its nearest GPU's memory",
       ""},
  };
  info_.options = {{kExpectFlag, "N",
                    "rdma: number of usable RDMA ports (active, link up) the node must have; "
                    "with N > 0 a node without RDMA fails instead of skipping"}};
}

void RdmaCheck::validate_options(const CheckOptions& options) const {
  (void)expected_rnics(options);
}

std::optional<std::string> RdmaCheck::skip_reason(const CheckContext& ctx) const {
  if (ctx.engines.rdma == nullptr) {
    return std::string("this binary has no RDMA engine");
  }
  return std::nullopt;
}

CheckResult RdmaCheck::run(CheckContext& ctx) const {
  CheckResult result;
  RdmaEngine& engine = *ctx.engines.rdma;
  RdmaExpectations expect;
  expect.rnics = expected_rnics(*ctx.options);
  expect.min_port_gbps = ctx.thresholds->get("rdma.min_port_gbps");
  const bool expected = expect.rnics && *expect.rnics > 0;
  const auto end = ctx.deadline - 1s;

  auto inv = call_bounded<RdmaInventory>(ctx, std::min(end, SteadyClock::now() + kInventoryBudget),
                                         [&engine] { return engine.inventory(); });
  if (!inv) {
    result.findings.push_back(
        make_finding("RDMA_TIMEOUT", "node", "listing the RDMA devices did not return in time"));
    result.summary = "RDMA device listing hung";
    return result;
  }
  std::map<std::string, double> slow;
  const auto skip_or_fail = [&](const std::string& why, const char* code) {
    // A fault aimed at a NIC this node lacks is reported even here: a drill must not pass by
    // testing nothing.
    apply_faults(*ctx.faults, *inv, slow, result.findings);
    if (!expected && result.findings.empty()) {
      result.status = Status::skip;
      result.skip_reason = why;
      result.summary = "skipped";
      return result;
    }
    if (expected) {
      result.findings.push_back(
          std::string(code) == "RDMA_UNAVAILABLE"
              ? make_finding("RDMA_UNAVAILABLE", "node", why)
              : make_finding("RDMA_NO_DEVICE", "node",
                             why + "; " + std::to_string(*expect.rnics) + " RDMA ports expected"));
    }
    result.summary = why;
    return result;
  };
  if (!inv->library_loaded) return skip_or_fail(inv->error, "RDMA_UNAVAILABLE");
  if (inv->devices.empty()) return skip_or_fail("no RDMA device on this node", "RDMA_NO_DEVICE");

  apply_faults(*ctx.faults, *inv, slow, result.findings);
  const auto gpus = gpu_locations(*ctx.node);
  for (auto& d : inv->devices) {
    if (d.nearest_gpu < 0 && !d.sysfs_path.empty()) {
      d.nearest_gpu = nearest_gpu(d.sysfs_path, d.numa_node, gpus);
    }
  }
  judge_inventory(*inv, expect, result.findings, result.metrics);

  std::size_t done = 0;
  std::size_t not_run = 0;
  const auto transfers = plan_transfers(inv->devices);
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const PlannedTransfer& t = transfers[i];
    if (ctx.cancelled() || SteadyClock::now() >= end) {
      not_run = transfers.size() - i;
      break;
    }
    RdmaTransferJob job;
    job.from_device = t.from_device;
    job.from_port = t.from_port;
    job.to_device = t.to_device;
    job.to_port = t.to_port;
    job.memory = t.memory;
    if (t.memory == RdmaMemory::gpu) {
      for (const auto& g : ctx.node->gpus) {
        if (g.index == t.gpu_index) job.gpu_cuda_ordinal = g.cuda_ordinal;
      }
      if (job.gpu_cuda_ordinal < 0) continue;  // CUDA cannot use that GPU: inventory says so
    }
    job.seconds = transfer_seconds(ctx.profile);
    job.deadline = std::min(end, SteadyClock::now() +
                                     std::chrono::duration_cast<SteadyClock::duration>(
                                         std::chrono::duration<double>(job.seconds)) +
                                     kConnectAllowance);
    job.cancel = ctx.cancel;
    for (const std::string& name : {t.from_device, t.to_device}) {
      const auto it = slow.find(name);
      if (it != slow.end()) job.slow_factor = std::min(job.slow_factor, it->second);
    }
    const auto r = call_bounded<RdmaTransferResult>(
        ctx, job.deadline, [&engine, job] { return engine.transfer(job); });
    judge_transfer(t, r, *ctx.thresholds, result.findings, result.metrics);
    ++done;
  }
  if (not_run > 0 && !ctx.cancelled()) {
    // Unverified is not healthy: transfers the time did not allow are reported.
    result.findings.push_back(make_finding(
        "RDMA_TIMEOUT", "node",
        std::to_string(not_run) + " of " + std::to_string(transfers.size()) +
            " planned transfers were not run: the check's time ran out (give it a longer "
            "--timeout)"));
  }
  // rdma-slow on a pair marks the pair's findings: the fault names one NIC of it.
  for (auto& f : result.findings) {
    if (f.code != "RDMA_BANDWIDTH_LOW" && f.code != "RDMA_BANDWIDTH_MARGINAL") continue;
    for (const auto& [name, factor] : slow) {
      (void)factor;
      if (f.entity == name || f.entity.rfind(name + "-", 0) == 0 ||
          (f.entity.size() > name.size() && f.entity.compare(f.entity.size() - name.size() - 1,
                                                             std::string::npos, "-" + name) == 0)) {
        f.injected = true;
      }
    }
  }
  result.summary = std::to_string(inv->devices.size()) + " RDMA devices, " +
                   std::to_string(usable_ports(inv->devices).size()) + " usable ports, " +
                   std::to_string(done) + " of " + std::to_string(transfers.size()) +
                   " transfers run";
  int dmabuf = 0;
  int peer_memory = 0;
  for (const Metric& m : result.metrics) {
    if (m.name == "gpudirect_dmabuf") ++(m.value > 0 ? dmabuf : peer_memory);
  }
  if (dmabuf + peer_memory > 0) {
    result.summary += "; GPUDirect by dma-buf on " + std::to_string(dmabuf) +
                      ", by peer memory on " + std::to_string(peer_memory) + " NICs";
  }
  return result;
}

}  // namespace preflight
