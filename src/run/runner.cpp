#include "run/runner.hpp"

#include <algorithm>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "preflight/catalogue.hpp"
#include "preflight/check.hpp"
#include "preflight/errors.hpp"
#include "run/bounded_task.hpp"
#include "run/planner.hpp"
#include "run/rejudge.hpp"

namespace preflight {

namespace {

using std::chrono::duration;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Waits for a task until `deadline` or a stop of the run (a signal), waking on the run's events.
template <class T>
TaskEnd wait_task(RunState& state, const BoundedTask<T>& task, SteadyClock::time_point deadline) {
  return task.wait(
      deadline, [&state] { return state.stop_cause() != StopCause::none; },
      [&state](milliseconds d) { state.wait_for_event(d); });
}

// How long registering for the driver's events may take: a few NVML calls per GPU.
constexpr std::chrono::seconds kEventsRegistration{2};

// Stands in for a driver call that never returns (hang@check=NAME): ignores cancellation.
void block_forever() {
  std::mutex m;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [] { return false; });
}

std::string format_seconds(double s) {
  std::ostringstream os;
  os.precision(s < 10 ? 2 : 3);
  os << s << " s";
  return os.str();
}

CheckResult skipped(const std::string& name, std::string reason) {
  CheckResult r;
  r.name = name;
  r.status = Status::skip;
  r.skip_reason = std::move(reason);
  r.summary = "skipped";
  return r;
}

CheckResult overran(const std::string& name, double elapsed, double budget, bool global) {
  CheckResult r;
  r.name = name;
  r.status = Status::fail;
  r.duration_s = elapsed;
  r.summary = "timed out";
  const std::string limit = global ? "the --timeout of the run" : "its deadline";
  r.findings.push_back(
      make_finding(runner_findings(), "CHECK_TIMEOUT", "node",
                   name + " did not finish within " + limit + " (" + format_seconds(budget) + ")")
          .measured(elapsed, "s", budget));
  return r;
}

// Faults aimed at GPUs this node does not have cannot be injected: bad input.
std::string check_fault_targets(const FaultPlan& faults, const NodeReading& node) {
  for (const auto& f : faults.all()) {
    const auto has_gpu = [&](int index) {
      return std::any_of(node.gpus.begin(), node.gpus.end(),
                         [&](const GpuReading& g) { return g.index == index; });
    };
    if (f.target.type == TargetType::gpu && !has_gpu(f.target.index)) {
      return "--inject-fault '" + f.spec + "': this node has no gpu" +
             std::to_string(f.target.index) + " (" + std::to_string(node.gpus.size()) +
             " GPUs visible)";
    }
    if (f.target.type == TargetType::pair &&
        (!has_gpu(f.target.index) || !has_gpu(f.target.index2))) {
      return "--inject-fault '" + f.spec + "': this node does not have both GPUs of the pair";
    }
  }
  return {};
}

}  // namespace

void mark_injected(CheckResult& result, const FaultPlan& faults,
                   const std::vector<FaultKindSpec>& kinds) {
  for (auto& finding : result.findings) {
    for (const auto& fault : faults.all()) {
      const auto kind = std::find_if(kinds.begin(), kinds.end(),
                                     [&](const FaultKindSpec& k) { return k.kind == fault.kind; });
      if (kind == kinds.end()) continue;
      const bool code_matches =
          std::find(kind->codes.begin(), kind->codes.end(), finding.code) != kind->codes.end();
      // Node-level findings (a GPU missing from the count) belong to a GPU fault too.
      const bool entity_matches =
          fault.target.type == TargetType::check
              ? fault.target.name == result.name
              : fault.target.entity() == finding.entity || finding.entity == "node";
      if (code_matches && entity_matches) finding.injected = true;
    }
  }
}

std::optional<NodeReading> discover_within(NodeBackend& backend, std::chrono::seconds budget) {
  NodeBackend* b = &backend;
  auto task = BoundedTask<NodeReading>::start([b] { return b->discover(); });
  if (task.wait(SteadyClock::now() + budget) != TaskEnd::returned) return std::nullopt;
  auto node = task.take();
  if (!node) throw std::runtime_error("GPU discovery failed: " + task.error());
  return std::move(*node);
}

std::vector<std::string> gpu_models(const NodeReading& node) {
  std::vector<std::string> models;
  for (const auto& g : node.gpus) {
    if (!g.name.empty()) models.push_back(g.name);
  }
  std::sort(models.begin(), models.end());
  models.erase(std::unique(models.begin(), models.end()), models.end());
  return models;
}

SystemInfo system_info_from(const NodeReading& node) {
  SystemInfo s;
  s.driver_version = node.driver_version;
  const auto version = [](int v) {
    return v > 0 ? std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10) : "";
  };
  s.cuda_driver = version(node.cuda_driver_version);
  s.cuda_runtime = version(node.cuda_runtime_version);
  s.nccl = node.nccl_version;
  for (const auto& g : node.gpus) {
    s.gpus.push_back({g.index, g.name, g.uuid, g.pci_bus_id, g.serial});
  }
  for (const auto& l : node.libraries) {
    s.libraries.push_back({l.name, l.soname, l.path, l.version, l.problem});
  }
  return s;
}

RunOutcome Runner::run(RunState& state, const std::vector<PlannedCheck>& plan,
                       const RunSettings& settings) {
  // A bug of the caller, found before anything starts.
  if (!settings.threshold_specs) {
    throw std::logic_error("Runner::run: RunSettings::threshold_specs is not set");
  }
  RunOutcome outcome;
  const auto run_start = SteadyClock::now();
  const double timeout_s = duration<double>(settings.deadline - run_start).count();
  const auto kinds = [&] {
    std::vector<FaultKindSpec> all = runner_fault_kinds();
    for (const auto& p : plan) {
      for (const auto& k : p.check->info().fault_kinds) all.push_back(k);
    }
    return all;
  }();

  state.set_injection_marker([this, kinds](CheckResult& r) { mark_injected(r, faults_, kinds); });

  // Discovery runs under its own deadline: NVML and the CUDA runtime can block as well.
  const auto discovery_start = SteadyClock::now();
  const auto discovery_deadline =
      std::min(settings.deadline, discovery_start + settings.discovery_budget);
  NodeBackend* backend = engines_.node;
  auto discovery = BoundedTask<NodeReading>::start([backend] { return backend->discover(); });
  const TaskEnd discovery_end = wait_task(state, discovery, discovery_deadline);

  auto node = std::make_shared<NodeReading>();
  std::string not_run_why;
  if (discovery_end == TaskEnd::returned) {
    if (auto found = discovery.take()) {
      *node = std::move(*found);
    } else {
      node->nvml_error = "discovery failed: " + discovery.error();
    }
  } else if (discovery_end == TaskEnd::deadline) {
    state.note_abandoned_thread();
    const double allowed_s = duration<double>(discovery_deadline - discovery_start).count();
    // A deadline already past when discovery began is no time at all, never a negative one.
    state.add_run_finding(make_finding(
        runner_findings(), "DISCOVERY_TIMEOUT", "node",
        allowed_s > 0
            ? "GPU discovery (NVML, CUDA) did not answer within " + format_seconds(allowed_s)
            : std::string("GPU discovery (NVML, CUDA) had no time: the run's deadline "
                          "had passed before it began")));
    not_run_why = "GPU discovery did not finish";
  } else {
    state.note_abandoned_thread();
    not_run_why = "interrupted by " + state.stop_why();
  }
  state.set_system(system_info_from(*node));
  for (const auto& g : node->gpus) {
    if (g.cuda_ordinal >= 0) outcome.cuda_ordinals.push_back(g.cuda_ordinal);
  }

  if (not_run_why.empty()) {
    outcome.invalid = check_fault_targets(faults_, *node);
    if (!outcome.invalid.empty()) return outcome;
  }

  // Thresholds follow the SKU of the first GPU; the --thresholds file applies on top.
  const auto& specs = settings.threshold_specs;
  auto thresholds = std::make_shared<Thresholds>([&] {
    const GpuReading* first = representative_gpu(*node);
    if (first == nullptr) return Thresholds::for_sku(specs, nullptr, "no GPU identified");
    const auto& g = *first;
    const SkuSpec* sku = detect_sku(g.pci_device_id, g.name);
    std::ostringstream by;
    by << (sku ? "pci device id 0x" : "unknown pci device id 0x") << std::hex << g.pci_device_id
       << " (" << g.name << ")";
    return Thresholds::for_sku(specs, sku, by.str());
  }());
  try {
    if (!settings.thresholds_path.empty()) {
      thresholds->apply_overrides_file(settings.thresholds_path);
    }
    choose_node_shape(*thresholds, settings.node_shape,
                      read_dmi_product_name(settings.dmi_product_path),
                      static_cast<int>(node->gpus.size()));
  } catch (const InvalidInput& e) {
    outcome.invalid = e.what();
    return outcome;
  }

  state.set_thresholds(record_of(*thresholds));

  // The driver's Xid events for the rest of the run, so one raised under a check's load lands on
  // that check (docs/checks/counters.md). Registering may block in the driver: bounded, and a
  // run without it goes on.
  std::shared_ptr<GpuEventSource> gpu_events;
  if (not_run_why.empty() && !node->gpus.empty()) {
    auto opening = BoundedTask<std::shared_ptr<GpuEventSource>>::start(
        [backend, node] { return backend->open_events(*node); });
    const auto opened = wait_task(state, opening, SteadyClock::now() + kEventsRegistration);
    if (opened == TaskEnd::returned) {
      if (auto source = opening.take()) gpu_events = std::move(*source);
    } else {
      state.note_abandoned_thread();
    }
  }

  // Shared with the workers like the thresholds: an abandoned worker may still read them.
  const auto options = std::make_shared<const CheckOptions>(settings.options);

  // The plan for this node (docs/plan.md): every check's work and its share of the time left.
  WorkRequest base;
  base.profile = settings.profile;
  base.shape.gpus = static_cast<int>(node->gpus.size());
  base.shape.nics = settings.nics;
  base.thresholds = thresholds.get();
  base.options = options.get();
  base.rotation = settings.rotation;
  const auto verdict_end = settings.deadline - std::chrono::duration_cast<SteadyClock::duration>(
                                                   duration<double>(plan_rules::kVerdictMargin_s));
  std::vector<CheckAllotment> allotted;
  std::optional<RunPlanRecord> plan_record;
  if (not_run_why.empty()) {
    try {
      // The same rule as before the run, now for the node discovery found.
      // Without --timeout the deadline is the profile's default for the shape assumed before
      // discovery; it is never refused.
      RunPlan whole = plan_run(
          plan, base, settings.timeout_given ? std::optional<double>(timeout_s) : std::nullopt);
      const double left = duration<double>(verdict_end - SteadyClock::now()).count();
      // Discovery slower than modelled leaves less: the checks share what is left (their
      // deadlines shrink with it) rather than the run being refused for the node's slowness.
      allotted = allot_checks(plan, base, std::max(left, checks_floor_s(whole.checks)), "");
      RunPlanRecord& record = plan_record.emplace(record_of(whole));
      record.timeout_s = timeout_s;
      record.timeout_given = settings.timeout_given;
      record.rotation = settings.rotation;
      record.rotation_from = settings.rotation_from;
      record.reduced = false;
      record.expected_s = whole.discovery.expected_s;
      for (const auto& a : allotted) {
        record.reduced = record.reduced || a.work.reduced;
        record.expected_s += a.work.expected_s;
      }
      state.set_plan(record);
    } catch (const InvalidInput& e) {
      outcome.invalid = e.what();
      return outcome;
    }
  }

  for (std::size_t i = 0; i < plan.size(); ++i) {
    const Check& check = *plan[i].check;
    const CheckInfo& info = check.info();

    if (not_run_why.empty() && state.stop_cause() != StopCause::none) {
      not_run_why = "interrupted by " + state.stop_why();
    }
    if (not_run_why.empty() && SteadyClock::now() >= settings.deadline) {
      not_run_why = "the --timeout was reached";
    }
    if (!not_run_why.empty()) {
      state.check_finished(i, skipped(info.name, std::string(kNotRunPrefix) + not_run_why));
      continue;
    }

    auto ctx = std::make_shared<CheckContext>();
    ctx->profile = settings.profile;
    ctx->expect = settings.expect;
    ctx->thresholds = thresholds.get();
    ctx->faults = &faults_;
    ctx->node = node.get();
    ctx->engines = engines_;
    ctx->cancel = std::make_shared<std::atomic<bool>>(false);
    ctx->options = options.get();
    ctx->abandoned_threads = std::make_shared<std::atomic<int>>(0);
    ctx->work = base;
    ctx->state_dir = settings.state_dir;
    ctx->gpu_events = gpu_events;
    ctx->work.seconds = allotted[i].work_s;
    const auto start = SteadyClock::now();
    // Its share of what is left: time a check before it did not use goes to those after it.
    // Past the verdict margin already (discovery overran a default deadline), the check gets
    // what is left of the run's deadline, no more; one planned to do nothing, a moment to say
    // why.
    const double left = duration<double>(verdict_end - start).count();
    double still_planned = 0;
    for (std::size_t j = i; j < allotted.size(); ++j) still_planned += allotted[j].deadline_s;
    const double share = allotted[i].deadline_s > 0
                             ? left * allotted[i].deadline_s / std::max(still_planned, 1e-9)
                             : std::min(left, plan_rules::kSlack_s);
    ctx->deadline = left > 0 ? std::min(settings.deadline,
                                        start + std::chrono::duration_cast<SteadyClock::duration>(
                                                    duration<double>(share)))
                             : settings.deadline;
    const bool by_global = ctx->deadline == settings.deadline;
    CheckPlanRecord planned = record_of(allotted[i]);
    planned.deadline_s = duration<double>(ctx->deadline - start).count();

    if (info.needs_gpu && node->gpus.empty()) {
      state.check_finished(
          i, skipped(info.name, settings.expect.gpus == 0 ? "no GPU on this node (--expect-gpus 0)"
                                                          : "no GPU visible (see inventory)"));
      continue;
    }
    if (auto why = check.skip_reason(*ctx)) {
      state.check_finished(i, skipped(info.name, *why));
      continue;
    }

    state.check_started(i);
    const bool hang = faults_.for_check("hang", info.name) != nullptr;
    // The thresholds and discovery reading are shared with the worker: an abandoned worker
    // keeps them alive.
    auto task = BoundedTask<CheckResult>::start(
        [&check, ctx, thresholds, node, options, hang]() -> CheckResult {
          if (hang) block_forever();
          return check.run(*ctx);
        });
    TaskEnd end = wait_task(state, task, ctx->deadline);
    if (end == TaskEnd::deadline) {
      // Ask the check to stop; a cooperative check returns within the grace period and the
      // run goes on. One that does not is stuck and is abandoned with the rest not run.
      ctx->cancel->store(true);
      const bool returned =
          wait_task(state, task, SteadyClock::now() + settings.cancel_grace) == TaskEnd::returned;
      const double elapsed = duration<double>(SteadyClock::now() - start).count();
      const double budget = duration<double>(ctx->deadline - start).count();
      CheckResult r = overran(info.name, elapsed, budget, by_global);
      r.plan = planned;
      state.check_finished(i, std::move(r));
      if (!returned) {
        state.note_abandoned_thread();
        not_run_why = info.name + " did not return after its deadline";
      }
      continue;
    }
    if (end == TaskEnd::stopped) {
      ctx->cancel->store(true);
      state.note_abandoned_thread();
      not_run_why = "interrupted by " + state.stop_why();
      CheckResult r;
      r.name = info.name;
      r.status = Status::fail;
      r.summary = "interrupted";
      r.duration_s = duration<double>(SteadyClock::now() - start).count();
      r.findings.push_back(make_finding(
          runner_findings(), "CHECK_INTERRUPTED", "node",
          "interrupted by " + state.stop_why() + " after " + format_seconds(r.duration_s)));
      state.check_finished(i, std::move(r));
      continue;
    }

    for (int n = ctx->abandoned_threads->load(); n > 0; --n) state.note_abandoned_thread();
    CheckResult result;
    if (auto returned = task.take()) {
      result = std::move(*returned);
    } else {
      result.status = Status::error;
      result.summary = "error";
      result.findings.push_back(
          make_finding(runner_findings(), "CHECK_ERROR", "node", task.error()));
    }
    result.name = info.name;
    if (result.status != Status::skip && result.status != Status::error) {
      result.status = status_from_findings(result.findings);
    }
    result.duration_s = duration<double>(SteadyClock::now() - start).count();
    if (result.plan) {
      // The check's own account of what it covered (it may know more than the plan did, as the
      // rdma check does of its compute NICs); the model's seconds and the deadline from the plan.
      if (result.plan->expected_s <= 0) result.plan->expected_s = planned.expected_s;
      result.plan->deadline_s = planned.deadline_s;
    } else if (result.status != Status::skip) {
      result.plan = planned;
    }
    if (plan_record && result.plan) {
      // What the check found may differ from what was counted before (the rdma check's
      // compute NICs): the run's expected total follows the checks' own figures.
      plan_record->expected_s += result.plan->expected_s - planned.expected_s;
      state.set_plan(*plan_record);
    }
    state.check_finished(i, std::move(result));
  }

  outcome.verdict = state.compose();
  return outcome;
}

}  // namespace preflight
