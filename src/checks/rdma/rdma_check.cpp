#include "checks/rdma/rdma_check.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checks/common/call_bounded.hpp"
#include "checks/common/counters.hpp"
#include "checks/common/fault_kinds.hpp"
#include "checks/common/findings.hpp"
#include "checks/common/judgement.hpp"
#include "checks/rdma/rdma_drills.hpp"
#include "checks/rdma/rdma_fabric.hpp"
#include "checks/rdma/rdma_figures.hpp"
#include "checks/rdma/rdma_findings.hpp"
#include "checks/rdma/rdma_host.hpp"
#include "checks/rdma/rdma_judge.hpp"
#include "checks/rdma/rdma_math.hpp"
#include "checks/rdma/rdma_plan.hpp"
#include "checks/rdma/rdma_readings.hpp"
#include "checks/rdma/rdma_thresholds.hpp"
#include "preflight/catalogue.hpp"
#include "preflight/errors.hpp"

namespace preflight {

namespace {

using namespace std::chrono_literals;

constexpr const char* kExpectFlag = "--expect-rnics";
constexpr const char* kDevicesFlag = "--rdma-devices";
constexpr auto kInventoryBudget = 15s;
constexpr auto kConnectAllowance = 10s;  // beyond a transfer's seconds: setup, connect, drain
// Kept free before the check's deadline to record what ran (CheckContext::finish_by).
constexpr auto kRdmaEndMargin = 1s;
// The figures of a transfer that completed (its data may still have arrived changed: that is
// its observation, rdma_transfer_observation).
void record_transfer_metrics(const PlannedTransfer& t, const RdmaTransferResult& r,
                             Metrics& metrics) {
  if (r.timed_out || !r.error.empty()) return;
  metrics.push_back(rdma_figures().transfer(t.kind)(t.entity, r.gbps));
  if (t.kind == "gpudirect") {
    // Which registration worked matters to NCCL: 1 dma-buf, 0 nvidia-peermem.
    metrics.push_back(
        {t.entity, "gpudirect_dmabuf", r.registration == "dma-buf" ? 1.0 : 0.0, "bool"});
  }
}

// "12 RDMA devices, 8 compute (sharing a PCIe switch with a GPU), 4 other left out: mlx5_1,
// ...;", or just "2 RDMA devices," when every one is compute.
std::string device_summary(const RdmaReadings& readings, const NicSelection& selection) {
  std::string text = std::to_string(readings.devices.size()) + " RDMA devices";
  std::string others;
  std::size_t other_count = 0;
  for (std::size_t i = 0; i < readings.devices.size(); ++i) {
    if (selection.compute[i]) continue;
    ++other_count;
    others += (others.empty() ? "" : ", ") + readings.devices[i].device.name;
  }
  if (other_count == 0) return text + ",";
  return text + ", " + std::to_string(readings.devices.size() - other_count) + " compute (" +
         describe_rule(selection) + "), " + std::to_string(other_count) +
         " other left out: " + others + ";";
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

std::vector<std::string> rdma_device_list(const CheckOptions& options) {
  const std::string* text = options.find(kDevicesFlag);
  if (text == nullptr) return {};
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text->size()) {
    std::size_t comma = text->find(',', start);
    if (comma == std::string::npos) comma = text->size();
    const std::string name = text->substr(start, comma - start);
    // Device names as libibverbs gives them: mlx5_0, mlx5_bond_0, irdma0, rxe0.
    const bool valid =
        !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-' ||
                 c == '.';
        });
    if (!valid) {
      throw InvalidInput(std::string(kDevicesFlag) + ": '" + *text +
                         "' is not a comma-separated list of RDMA device names (mlx5_0,mlx5_3)");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      throw InvalidInput(std::string(kDevicesFlag) + ": " + name + " is listed twice");
    }
    names.push_back(name);
    start = comma + 1;
  }
  return names;
}

RdmaCheck::RdmaCheck(std::string sysfs_root) : sysfs_root_(std::move(sysfs_root)) {
  info_.name = "rdma";
  info_.description =
      "RDMA NICs (libibverbs): ports against expectations, the NIC's PCIe link, the loopback "
      "mesh (every NIC into host memory on every NUMA node and into every GPU), NIC pairs "
      "through the fabric (rotating where they do not all fit)";
  info_.needs_gpu = false;  // a node's NICs matter without GPUs too
  info_.budget = {std::chrono::seconds(60), std::chrono::seconds(180), std::chrono::seconds(900)};
  info_.thresholds = rdma_thresholds();
  info_.findings = {&rdma_findings(), &shared_findings()};
  info_.fault_kinds = {
      fault_kind("rdma-down", TargetType::nic, "every port of the NIC reads as down",
                 {"RDMA_PORT_DOWN", "RDMA_COUNT_MISMATCH", "FAULT_TARGET_MISSING"}),
      slow_kind("rdma-slow", TargetType::nic,
                "RDMA writes from and to the NIC deliver FACTOR of their bandwidth, e.g. 0.5",
                {"RDMA_BANDWIDTH_LOW", "RDMA_BANDWIDTH_MARGINAL", "FAULT_TARGET_MISSING"}),
      slow_kind(kRdmaPathSlowKind, TargetType::nic,
                "the one transfer named (a loopback-mesh path such as nic=mlx5_0-gpu3 or "
                "nic=mlx5_0-numa1, or a NIC pair nic=mlx5_0-mlx5_3) delivers FACTOR of its "
                "bandwidth, e.g. 0.5",
                {"RDMA_BANDWIDTH_LOW", "RDMA_BANDWIDTH_MARGINAL", "FAULT_TARGET_MISSING"}),
  };
  declare_counters(info_, {CounterFamily::rnic});
  info_.figures = rdma_figures().exports();
  info_.options = {
      {kExpectFlag, "N",
       "rdma: number of usable ports (active, link up) the node's compute NICs must have; with "
       "N > 0 a node without RDMA fails instead of skipping"},
      {kDevicesFlag, "LIST",
       "rdma: the compute NICs, comma-separated (mlx5_0,mlx5_3,...): only these are judged and "
       "tested, and each must exist; default: those sharing a PCIe switch with a GPU"},
  };
}

void RdmaCheck::validate_options(const CheckOptions& options) const {
  (void)expected_rnics(options);
  (void)rdma_device_list(options);
}

std::optional<std::vector<Finding>> RdmaCheck::judge(const Readings& readings,
                                                     const Thresholds& thresholds) const {
  RdmaReadings parsed;
  from_json(readings, parsed);
  std::vector<Finding> findings = judge_rdma(parsed, thresholds);
  for (Finding& f : judge_counters(readings, thresholds, info_.name)) findings.push_back(f);
  return findings;
}

std::vector<Finding> RdmaCheck::observe(const Readings& readings) const {
  RdmaReadings parsed;
  from_json(readings, parsed);
  std::vector<Finding> findings = rdma_observations(parsed);
  for (Finding& f : observe_counters(readings)) findings.push_back(f);
  return findings;
}

WorkPlan RdmaCheck::plan_work(const WorkRequest& request) const {
  return plan_rdma_work(request);
}

std::string RdmaCheck::sysfs_root() const {
  if (!sysfs_root_.empty()) return sysfs_root_;
  // The seam the counters and the events check read sysfs through (tests point it at a tree of
  // their own, or at none).
  const char* root = std::getenv("PREFLIGHT_SYSFS_ROOT");
  return root != nullptr && *root != '\0' ? root : "/sys";
}

std::optional<std::string> RdmaCheck::skip_reason(const CheckContext& ctx) const {
  // Not applicable where the node has no RDMA fabric by design: GCP's A3 High moves GPU traffic
  // over TCP (GPUDirect-TCPX), and --expect-rnics 0 says the same of any node. The fleet then
  // uses NCCL's own transport (docs/checks/rdma.md, "Node shapes and what each GPU gets").
  if (ctx.options != nullptr) {
    if (const auto expect = expected_rnics(*ctx.options); expect && *expect == 0) {
      return std::string("not applicable: --expect-rnics 0 (no RDMA fabric)");
    }
  }
  if (ctx.thresholds != nullptr && ctx.thresholds->node_shape() != nullptr &&
      !ctx.thresholds->node_shape()->has_rdma_fabric()) {
    return "not applicable: the node shape " + ctx.thresholds->node_shape()->id +
           " has no RDMA fabric";
  }
  if (ctx.engines.rdma == nullptr) {
    return std::string("this binary has no RDMA engine");
  }
  return std::nullopt;
}

CheckResult RdmaCheck::run(CheckContext& ctx) const {
  CheckResult result;
  RdmaEngine& engine = *ctx.engines.rdma;
  RdmaReadings readings;
  readings.expect_rnics = expected_rnics(*ctx.options);
  readings.rdma_devices = rdma_device_list(*ctx.options);
  const bool expected =
      (readings.expect_rnics && *readings.expect_rnics > 0) || !readings.rdma_devices.empty();
  const auto end = ctx.finish_by(kRdmaEndMargin);
  // The planner's request (its share of the time, the rotation), with what this run knows for
  // sure; a context made by hand (unit tests) has no request and plans the profile's whole work.
  WorkRequest request = ctx.work_request();

  auto inv = call_bounded<RdmaInventory>(ctx, std::min(end, SteadyClock::now() + kInventoryBudget),
                                         [&engine] { return engine.inventory(); });
  if (!inv) {
    result.findings.push_back(make_finding(rdma_findings(), "RDMA_TIMEOUT", "node",
                                           "listing the RDMA devices did not return in time"));
    result.summary = "RDMA device listing hung";
    return result;
  }
  std::map<std::string, double> slow;
  const auto skip_or_fail = [&](const std::string& why, const char* code) {
    // A fault aimed at a NIC this node lacks is reported even here: a drill must not pass by
    // testing nothing.
    apply_rdma_faults(*ctx.faults, *inv, slow, result.findings);
    (void)rdma_path_faults(*ctx.faults, {}, result.findings);
    if (!expected && result.findings.empty()) {
      result.status = Status::skip;
      result.skip_reason = why;
      result.summary = "skipped";
      return result;
    }
    if (expected) {
      const std::string wanted =
          readings.expect_rnics && *readings.expect_rnics > 0
              ? std::to_string(*readings.expect_rnics) + " RDMA ports expected"
              : std::string(kDevicesFlag) + " names " +
                    std::to_string(readings.rdma_devices.size()) + " devices";
      result.findings.push_back(
          std::string(code) == "RDMA_UNAVAILABLE"
              ? make_finding(rdma_findings(), "RDMA_UNAVAILABLE", "node", why)
              : make_finding(rdma_findings(), "RDMA_NO_DEVICE", "node", why + "; " + wanted));
    }
    result.summary = why;
    return result;
  };
  if (!inv->library_loaded) return skip_or_fail(inv->error, "RDMA_UNAVAILABLE");
  if (inv->devices.empty()) return skip_or_fail("no RDMA device on this node", "RDMA_NO_DEVICE");

  apply_rdma_faults(*ctx.faults, *inv, slow, result.findings);
  readings.devices = locate_rdma_devices(inv->devices, rdma_gpu_locations(*ctx.node));
  readings.gpus = static_cast<int>(ctx.node->gpus.size());
  assign_roles(readings, *ctx.thresholds);
  for (const RdmaDevice& d : inv->devices) {
    // Made as `preflight judge` makes it from the readings (Check::observe).
    if (auto failed = rdma_device_observation(d)) {
      result.findings.push_back(std::move(*failed));
      continue;
    }
    for (const RdmaPort& p : d.ports) {
      const double rate =
          p.rate_gbps > 0 ? p.rate_gbps : rdma_port_rate_gbps(p.active_speed, p.active_width);
      if (rate > 0) {
        result.metrics.push_back(
            rdma_figures().rate_gbps(rdma_port_entity(d.name, p.port_num), rate));
      }
    }
  }
  // Only the compute fabric is judged and tested: storage and in-band NICs are reported
  // (RDMA_NIC_NOT_COMPUTE) and left out (rdma_judge.hpp).
  std::string unfit;
  const NicSelection selection = select_compute_nics(
      readings.devices, readings.rdma_devices, fabric_shape(readings, *ctx.thresholds, unfit));
  std::vector<RdmaDevice> compute;
  for (std::size_t i = 0; i < readings.devices.size(); ++i) {
    if (selection.compute[i]) compute.push_back(readings.devices[i].device);
  }
  const std::size_t usable = usable_ports(compute).size();
  result.metrics.push_back({"", "usable_ports", static_cast<double>(usable), "count"});

  // Sized by what is here: the NICs with a usable port are the pairs' endpoints and the mesh's
  // rows, its columns the host's NUMA nodes and the GPUs CUDA can use.
  RdmaMesh mesh;
  mesh.numa_nodes = host_numa_nodes(sysfs_root());
  for (const auto& g : ctx.node->gpus) {
    if (g.cuda_ordinal >= 0) mesh.gpus.push_back(g.index);
  }
  std::sort(mesh.gpus.begin(), mesh.gpus.end());
  const std::vector<std::string> endpoints = rdma_pair_endpoints(compute);
  RdmaWorkShape shape;
  shape.nics = static_cast<int>(endpoints.size());
  shape.numa_cells = mesh.host_cells();
  shape.gpu_cells = mesh.gpu_cells();
  shape.extra_loopbacks = rdma_extra_loopbacks(compute);
  const std::vector<PlannedTransfer> all = plan_transfers(compute, mesh);
  request.shape.nics = shape.nics;
  const RdmaWork work = plan_rdma(request, shape, endpoints);
  std::vector<PlannedTransfer> transfers = plan_transfers(compute, mesh, work.coverage());
  const std::map<std::string, double> slow_paths =
      rdma_path_faults(*ctx.faults, all, result.findings);
  for (const auto& slowed : slow_paths) {
    // A drill's path that this run's rotation step does not cover runs too: the drill must test
    // what it names.
    const std::string& entity = slowed.first;
    const auto planned = [&entity](const PlannedTransfer& t) { return t.entity == entity; };
    if (std::none_of(transfers.begin(), transfers.end(), planned)) {
      transfers.push_back(*std::find_if(all.begin(), all.end(), planned));
    }
  }
  CheckPlanRecord record = coverage_record(work.plan);
  // The modelled time of the work it does here: the NICs it found, not those counted before.
  record.expected_s = work.plan.expected_s;
  record.covered.clear();
  // The cells and pairs planned of the parts that rotate, by the entities their findings and
  // metrics use.
  for (const PlannedTransfer& t : transfers) {
    // Cells into host memory rotate only on a host of several NUMA nodes, so only they are
    // bound to one; a further port's loopback runs every run.
    const bool rotating = t.kind == "pair"              ? !work.pairs.complete()
                          : t.memory == RdmaMemory::gpu ? !work.gpus.complete()
                          : t.host_numa_node >= 0       ? !work.numa.complete()
                                                        : false;
    if (rotating) record.covered.push_back(t.entity);
  }
  result.plan = record;

  // The ports' error counters around the transfers: a link that degrades while it still trains
  // at full rate.
  std::optional<CounterWatch> counters;
  if (!transfers.empty()) counters.emplace(ctx, info_.name, std::vector{CounterFamily::rnic});
  std::size_t done = 0;
  for (std::size_t i = 0; i < transfers.size(); ++i) {
    const PlannedTransfer& t = transfers[i];
    if (ctx.cancelled() || SteadyClock::now() >= end) {
      readings.transfers_not_run = transfers.size() - i;
      break;
    }
    RdmaTransferJob job;
    job.from_device = t.from_device;
    job.from_port = t.from_port;
    job.to_device = t.to_device;
    job.to_port = t.to_port;
    job.memory = t.memory;
    job.host_numa_node = t.host_numa_node;
    job.op = t.op;
    if (t.memory == RdmaMemory::gpu) {
      job.gpu_cuda_ordinal = cuda_ordinal_of(*ctx.node, t.gpu_index);
      if (job.gpu_cuda_ordinal < 0) continue;  // CUDA cannot use that GPU: inventory says so
    }
    job.seconds = work.transfer_s;
    job.deadline = std::min(end, SteadyClock::now() +
                                     std::chrono::duration_cast<SteadyClock::duration>(
                                         std::chrono::duration<double>(job.seconds)) +
                                     kConnectAllowance);
    job.cancel = ctx.cancel;
    RdmaTransferReading reading;
    reading.planned = t;
    for (const std::string& name : {t.from_device, t.to_device}) {
      const auto it = slow.find(name);
      if (it == slow.end()) continue;
      job.slow_factor = std::min(job.slow_factor, it->second);
      reading.injected_slow_factor = job.slow_factor;
    }
    if (const auto it = slow_paths.find(t.entity); it != slow_paths.end()) {
      job.slow_factor = std::min(job.slow_factor, it->second);
      reading.injected_slow_factor = job.slow_factor;
    }
    const auto r = call_bounded<RdmaTransferResult>(
        ctx, job.deadline, [&engine, job] { return engine.transfer(job); });
    if (r) {
      reading.result = *r;
    } else {
      reading.result.timed_out = true;  // abandoned: it never returned
    }
    // Hung, failed or corrupted: made as `preflight judge` makes it from the readings.
    if (auto wrong = rdma_transfer_observation(t, reading.result)) {
      result.findings.push_back(std::move(*wrong));
    }
    record_transfer_metrics(t, reading.result, result.metrics);
    readings.transfers.push_back(std::move(reading));
    ++done;
  }
  if (readings.transfers_not_run > 0 && !ctx.cancelled()) {
    // Unverified is not healthy: transfers the time did not allow are reported.
    result.findings.push_back(make_finding(
        rdma_findings(), "RDMA_TIMEOUT", "node",
        std::to_string(readings.transfers_not_run) + " of " + std::to_string(transfers.size()) +
            " planned transfers were not run: the check's time ran out (give it a longer "
            "--timeout)"));
  }
  add_judged(result.findings, judge_rdma(readings, *ctx.thresholds));
  to_json(result.readings, readings);
  if (counters) close_counters(result, counters->finish(ctx), *ctx.thresholds, info_.name);

  result.summary = device_summary(readings, selection) + " " + std::to_string(usable) +
                   " usable ports, " + std::to_string(done) + " of " +
                   std::to_string(transfers.size()) + " transfers run";
  // Reduced or rotated coverage is said, never silent (docs/plan.md).
  if (const std::string rotating = rdma_rotation_text(work); !rotating.empty()) {
    result.summary += "; " + rotating;
  }
  if (work.plan.reduced) {
    result.summary += "; reduced to fit its time: " + work.plan.coverage;
  }
  int dmabuf = 0;
  int peer_memory = 0;
  for (const Metric& m : result.metrics) {
    if (m.name == "gpudirect_dmabuf") ++(m.value > 0 ? dmabuf : peer_memory);
  }
  if (dmabuf + peer_memory > 0) {
    result.summary += "; GPUDirect by dma-buf on " + std::to_string(dmabuf) +
                      ", by peer memory on " + std::to_string(peer_memory) + " paths";
  }
  return result;
}

}  // namespace preflight
