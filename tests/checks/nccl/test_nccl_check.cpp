// The nccl check end to end without a GPU: the runner, the check, a fake collective engine,
// fault injection through the real fault parser, judgement against the SKU's thresholds, and
// the arithmetic (bus bandwidth, sizes, blame for corrupted data). The engine itself is covered
// by tests/gpu/test_nccl_gpu.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "checks/nccl/nccl_math.hpp"
#include "model/byte_units.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_collective_engine.hpp"
#include "support/scoped_env.hpp"

using namespace preflight;
using preflight::test::findings;
using preflight::test::has_metric;
using namespace std::chrono_literals;

namespace {

struct NcclOutcome {
  Verdict verdict;
  CheckResult nccl;
  int abandoned = 0;
  double seconds = 0.0;
};

NcclOutcome run_nccl(test::FakeCollectiveEngine* engine, NodeReading node = test::healthy_node(8),
                     const std::vector<std::string>& fault_specs = {},
                     std::chrono::seconds timeout = 60s) {
  CheckRegistry registry;
  register_builtin_checks(registry);
  const auto plan = plan_checks(registry, Profile::quick, {"nccl"});
  std::vector<InjectedFault> faults;
  for (const auto& spec : fault_specs) faults.push_back(parse_fault(spec, registry.fault_kinds()));
  FaultPlan fault_plan(faults);
  test::FakeBackend backend(node);
  backend.collective = engine;
  Verdict skeleton;
  skeleton.injected_faults = fault_specs;
  RunState state(skeleton, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.deadline = SteadyClock::now() + timeout;
  Runner runner(backend.engines(), fault_plan);
  const auto start = SteadyClock::now();
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  NcclOutcome o;
  o.verdict = out.verdict;
  for (const auto& c : o.verdict.checks) {
    if (c.name == "nccl") o.nccl = c;
  }
  o.abandoned = state.abandoned_threads();
  o.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
  return o;
}

const Finding* find(const CheckResult& r, const std::string& code, const std::string& entity) {
  for (const auto& f : r.findings) {
    if (f.code == code && f.entity == entity) return &f;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("nccl check: eight healthy GPUs pass, with one all-gather and one all-reduce job") {
  test::FakeCollectiveEngine engine;
  const auto o = run_nccl(&engine);
  INFO(o.nccl.summary);
  CHECK(o.nccl.status == Status::pass);
  CHECK(o.nccl.findings.empty());
  REQUIRE(engine.jobs().size() == 2);
  CHECK(engine.jobs()[0].op == CollectiveOp::all_gather);
  CHECK(engine.jobs()[1].op == CollectiveOp::all_reduce);
  for (const auto& job : engine.jobs()) {
    CHECK(job.nranks == 8);
    CHECK(job.first_rank == 0);
    CHECK(job.cuda_ordinals == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK(job.unique_id.size() == 128);
    CHECK(job.sizes == std::vector<std::size_t>{1 * kMiB, 256 * kMiB});
    CHECK(job.iterations == 10);
    CHECK(job.cancel != nullptr);
    CHECK_FALSE(job.corrupt_send);
    CHECK_FALSE(job.hang);
    CHECK(job.corrupt_local_ranks.empty());
    CHECK(job.local_slow_factors == std::vector<double>(8, 1.0));
    CHECK(job.deadline > SteadyClock::now() - 60s);
  }
  // A fresh communicator per collective: a unique id serves one communicator.
  CHECK(engine.jobs()[0].unique_id != engine.jobs()[1].unique_id);
  CHECK(has_metric(o.nccl, "allgather.268435456.busbw_gbps"));
  CHECK(has_metric(o.nccl, "allgather.1048576.algbw_gbps"));
  CHECK(has_metric(o.nccl, "allreduce.268435456.busbw_gbps"));
  CHECK(has_metric(o.nccl, "allgather.corrupt_elements"));
  CHECK(has_metric(o.nccl, "ranks"));
  CHECK_THAT(o.nccl.summary, Catch::Contains("8 GPUs: bus bandwidth all-gather 370.0 GB/s"));
  CHECK_THAT(o.nccl.summary, Catch::Contains("all-reduce 420.0 GB/s at 256 MiB"));
}

TEST_CASE("nccl check: without libnccl the tool's installation is blamed, not the node") {
  test::FakeCollectiveEngine engine;
  engine.missing_library =
      "NCCL (libnccl.so.2) not found; looked at: the loader path (LD_LIBRARY_PATH, ld.so.cache): "
      "libnccl.so.2: cannot open shared object file: No such file or directory";
  const auto o = run_nccl(&engine);
  CHECK(o.nccl.status == Status::error);
  REQUIRE(o.nccl.findings.size() == 1);
  CHECK(o.nccl.findings[0].code == "TOOL_LIBRARY_MISSING");
  CHECK(o.nccl.findings[0].entity == "node");
  CHECK(o.nccl.findings[0].message == engine.missing_library);
  CHECK(engine.jobs().empty());
  CHECK(o.verdict.verdict == Status::fail);
  CHECK(o.verdict.exit_code == kExitInternalError);
  CHECK_THAT(o.verdict.reason, Catch::Contains("TOOL_LIBRARY_MISSING"));
  CHECK_THAT(o.verdict.reason, Catch::Contains("libnccl.so.2"));
}

TEST_CASE("nccl check: skipped with the reason on one GPU, without CUDA, without an engine") {
  SECTION("one GPU") {
    test::FakeCollectiveEngine engine;
    const auto o = run_nccl(&engine, test::healthy_node(1));
    CHECK(o.nccl.status == Status::skip);
    CHECK(o.nccl.skip_reason == "one GPU: nothing to all-gather between");
    CHECK(engine.jobs().empty());
  }
  SECTION("CUDA cannot be used by NCCL") {
    test::FakeCollectiveEngine engine;
    engine.unavailable = "CUDA: no GPU visible";
    const auto o = run_nccl(&engine);
    CHECK(o.nccl.status == Status::skip);
    CHECK(o.nccl.skip_reason == engine.unavailable);
    CHECK(engine.jobs().empty());
    CHECK(o.verdict.verdict == Status::pass);
  }
  SECTION("no engine in this binary") {
    const auto o = run_nccl(nullptr);
    CHECK(o.nccl.status == Status::skip);
    CHECK_THAT(o.nccl.skip_reason, Catch::Contains("no NCCL engine"));
  }
  SECTION("CUDA sees one of two GPUs") {
    test::FakeCollectiveEngine engine;
    NodeReading node = test::healthy_node(2);
    node.gpus[1].cuda_ordinal = -1;
    CHECK(run_nccl(&engine, node).nccl.status == Status::skip);
  }
}

TEST_CASE("nccl check: communicators that do not come up, and collectives that fail") {
  SECTION("init") {
    test::FakeCollectiveEngine engine;
    engine.init_error = "ncclCommInitRankConfig: unhandled cuda error/Cuda failure 'out of memory'";
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl) == std::set<std::string>{"NCCL_INIT_FAILED@node"});
    CHECK_THAT(o.nccl.findings.front().message, Catch::Contains("out of memory"));
    CHECK(o.nccl.status == Status::fail);
  }
  SECTION("unique id") {
    test::FakeCollectiveEngine engine;
    engine.unique_id_error = "ncclGetUniqueId: system error";
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl) == std::set<std::string>{"NCCL_INIT_FAILED@node"});
    CHECK(engine.jobs().empty());
  }
  SECTION("a collective") {
    test::FakeCollectiveEngine engine;
    engine.run_error = "ncclAllGather: remote process exited or there was a network error";
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl) == std::set<std::string>{"NCCL_ERROR@node"});
    // Only the sizes measured before the error count; the SKU judges none of them.
    CHECK(has_metric(o.nccl, "allgather.1048576.busbw_gbps"));
    CHECK_FALSE(has_metric(o.nccl, "allgather.268435456.busbw_gbps"));
  }
}

TEST_CASE("nccl check: a timeout aborts, a worker that never returns is left behind") {
  SECTION("the engine reports its deadline passed: no second collective on a hung node") {
    test::FakeCollectiveEngine engine;
    engine.time_out = true;
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl) == std::set<std::string>{"NCCL_TIMEOUT@node"});
    CHECK(engine.jobs().size() == 1);
    CHECK_THAT(o.nccl.findings.front().message, Catch::Contains("aborted"));
  }
  SECTION("the engine never returns") {
    test::FakeCollectiveEngine engine;
    engine.hang = true;
    const auto o = run_nccl(&engine, test::healthy_node(8), {}, 8s);
    CHECK(findings(o.nccl).count("NCCL_TIMEOUT@node") == 1);
    CHECK(o.abandoned >= 1);
    CHECK(o.seconds < 12.0);
    CHECK(engine.jobs().size() == 1);
    engine.release();
  }
}

TEST_CASE("nccl check: corrupted data is blamed on the sender, the receiver or the pair") {
  SECTION("a sender: every receiver sees it; the all-reduce cannot name it") {
    test::FakeCollectiveEngine engine;
    engine.corrupt_senders = {2};
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl) ==
          std::set<std::string>{"NCCL_DATA_MISMATCH@gpu2", "NCCL_DATA_MISMATCH@node"});
    const Finding* f = find(o.nccl, "NCCL_DATA_MISMATCH", "gpu2");
    REQUIRE(f != nullptr);
    CHECK_THAT(f->message, Catch::Contains("sender"));
    CHECK(f->value.value_or(-1) == Approx(8 * 3 * 2));  // 8 receivers, 3 elements, 2 sizes
    CHECK(o.nccl.status == Status::fail);
  }
  SECTION("a receiver that gets everything corrupt") {
    test::FakeCollectiveEngine engine;
    engine.corrupt_receivers = {5};
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl) == std::set<std::string>{"NCCL_DATA_MISMATCH@gpu5"});
    CHECK_THAT(find(o.nccl, "NCCL_DATA_MISMATCH", "gpu5")->message, Catch::Contains("receiver"));
  }
  SECTION("one path: the pair, lower index first") {
    test::FakeCollectiveEngine engine;
    engine.corrupt_links = {{6, 1}};
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl).count("NCCL_DATA_MISMATCH@gpu1-gpu6") == 1);
    CHECK_THAT(find(o.nccl, "NCCL_DATA_MISMATCH", "gpu1-gpu6")->message,
               Catch::Contains("from gpu6 arrived corrupt at gpu1"));
  }
  SECTION("ranks map to NVML indices, not CUDA ordinals") {
    test::FakeCollectiveEngine engine;
    NodeReading node = test::healthy_node(4);
    node.gpus[1].cuda_ordinal = -1;  // rank 1 is gpu2
    engine.corrupt_senders = {1};
    const auto o = run_nccl(&engine, node);
    CHECK(findings(o.nccl).count("NCCL_DATA_MISMATCH@gpu2") == 1);
    CHECK(findings(o.nccl).count("NCCL_GPU_NOT_TESTED@gpu1") == 1);
    CHECK(engine.jobs().at(0).cuda_ordinals == std::vector<int>{0, 2, 3});
  }
}

TEST_CASE("nccl check: bus bandwidth below the SKU's figure") {
  SECTION("low") {
    test::FakeCollectiveEngine engine;
    engine.allgather_busbw_gbps = 150;  // H100 SXM: 360 x 0.6 = 216 fails
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl) == std::set<std::string>{"NCCL_BUSBW_LOW@node"});
    const Finding* f = find(o.nccl, "NCCL_BUSBW_LOW", "node");
    REQUIRE(f != nullptr);
    CHECK(f->value.value_or(-1) == Approx(150));
    CHECK(f->threshold.value_or(-1) == Approx(216));
  }
  SECTION("marginal") {
    test::FakeCollectiveEngine engine;
    engine.allreduce_busbw_gbps = 240;  // below 360 x 0.7 = 252, above 216
    const auto o = run_nccl(&engine);
    CHECK(findings(o.nccl) == std::set<std::string>{"NCCL_BUSBW_MARGINAL@node"});
    CHECK(o.verdict.verdict == Status::warn);
  }
  SECTION("a GPU model without a figure is not judged") {
    test::FakeCollectiveEngine engine;
    engine.allgather_busbw_gbps = 1;
    NodeReading node = test::healthy_node(2);
    for (auto& g : node.gpus) {
      g.pci_device_id = 0x1234;
      g.name = "Some Future GPU";
    }
    const auto o = run_nccl(&engine, node);
    CHECK(findings(o.nccl).count("NCCL_BUSBW_LOW@node") == 0);
  }
}

TEST_CASE("nccl check: each fault kind reaches the engine and its findings are marked injected") {
  SECTION("nccl-corrupt") {
    test::FakeCollectiveEngine engine;
    const auto o = run_nccl(&engine, test::healthy_node(8), {"nccl-corrupt@gpu=3"});
    REQUIRE(engine.jobs().size() == 2);
    CHECK(engine.jobs()[0].corrupt_local_ranks == std::vector<int>{3});
    const Finding* f = find(o.nccl, "NCCL_DATA_MISMATCH", "gpu3");
    REQUIRE(f != nullptr);
    CHECK(f->injected);
    for (const auto& finding : o.nccl.findings) CHECK(finding.injected);
    CHECK(o.verdict.verdict == Status::fail);
    CHECK_THAT(o.verdict.reason, Catch::StartsWith("injected fault"));
  }
  SECTION("nccl-slow") {
    test::FakeCollectiveEngine engine;
    const auto o = run_nccl(&engine, test::healthy_node(8), {"nccl-slow:0.3@gpu=1"});
    REQUIRE(engine.jobs().size() == 2);
    CHECK(engine.jobs()[0].local_slow_factors.at(1) == Approx(0.3));
    CHECK(engine.jobs()[0].local_slow_factors.at(0) == Approx(1.0));
    const Finding* f = find(o.nccl, "NCCL_BUSBW_LOW", "node");
    REQUIRE(f != nullptr);
    CHECK(f->injected);
  }
  SECTION("a drill on a GPU CUDA cannot use fails instead of testing nothing") {
    test::FakeCollectiveEngine engine;
    NodeReading node = test::healthy_node(3);
    node.gpus[2].cuda_ordinal = -1;
    const auto o = run_nccl(&engine, node, {"nccl-corrupt@gpu=2"});
    const Finding* f = find(o.nccl, "FAULT_TARGET_MISSING", "gpu2");
    REQUIRE(f != nullptr);
    CHECK(f->injected);
    CHECK(o.verdict.verdict == Status::fail);
  }
}

TEST_CASE("nccl math: bus bandwidth as nccl-tests defines it") {
  // 1 GB per rank over 8 ranks in 1 s: 8 GB/s moved, 7/8 of it over the bus.
  CHECK(collective_algbw_gbps(CollectiveOp::all_gather, 1'000'000'000, 8, 1.0) == Approx(8.0));
  CHECK(collective_busbw_gbps(CollectiveOp::all_gather, 1'000'000'000, 8, 1.0) == Approx(7.0));
  // A 1 GB all-reduce in 1 s: algbw 1, busbw 2 x 7/8.
  CHECK(collective_algbw_gbps(CollectiveOp::all_reduce, 1'000'000'000, 8, 1.0) == Approx(1.0));
  CHECK(collective_busbw_gbps(CollectiveOp::all_reduce, 1'000'000'000, 8, 1.0) == Approx(1.75));
  CHECK(collective_busbw_gbps(CollectiveOp::all_gather, 256 * kMiB, 8, 0.005) ==
        Approx(256.0 * kMiB * 8 / 0.005 / 1e9 * 7 / 8));
  // One rank moves nothing over a bus; no time is no figure.
  CHECK(collective_busbw_gbps(CollectiveOp::all_gather, 1'000'000, 1, 1.0) == 0.0);
  CHECK(collective_busbw_gbps(CollectiveOp::all_reduce, 1'000'000, 8, 0.0) == 0.0);
}

TEST_CASE("nccl math: sizes by profile, capped by the smallest GPU's memory") {
  CHECK(nccl_plan(Profile::quick, 8, 0).sizes == std::vector<std::size_t>{kMiB, 256 * kMiB});
  CHECK(nccl_plan(Profile::standard, 8, 80ull << 30).sizes ==
        std::vector<std::size_t>{kMiB, 16 * kMiB, 256 * kMiB, 1024 * kMiB});
  CHECK(nccl_plan(Profile::burnin, 8, 0).iterations >
        nccl_plan(Profile::standard, 8, 0).iterations);
  // 4 GiB GPUs: half is 2 GiB, and 256 MiB x 9 slots is more.
  CHECK(nccl_plan(Profile::quick, 8, 4ull << 30).sizes == std::vector<std::size_t>{kMiB});
  // The smallest size stays even where nothing fits: the engine then reports the allocation.
  CHECK(nccl_plan(Profile::quick, 8, 1ull << 20).sizes == std::vector<std::size_t>{kMiB});
}

TEST_CASE("nccl math: blame for corrupted all-gather data") {
  using Matrix = std::vector<std::vector<std::uint64_t>>;
  const auto matrix = [](int n) { return Matrix(n, std::vector<std::uint64_t>(n, 0)); };
  SECTION("clean") {
    CHECK(blame_corruption(matrix(4)).senders.empty());
  }
  SECTION("a sender, seen everywhere including its own buffer") {
    Matrix m = matrix(4);
    for (auto& row : m) row[1] = 2;
    const auto b = blame_corruption(m);
    CHECK(b.senders == std::vector<int>{1});
    CHECK(b.receivers.empty());
    CHECK(b.links.empty());
    CHECK(b.own.empty());
  }
  SECTION("a receiver; its own copy may be fine") {
    Matrix m = matrix(4);
    for (int s = 0; s < 4; ++s) m[2][s] = s == 2 ? 0 : 1;
    const auto b = blame_corruption(m);
    CHECK(b.receivers == std::vector<int>{2});
    CHECK(b.senders.empty());
    CHECK(b.links.empty());
  }
  SECTION("a sender and a receiver at once") {
    Matrix m = matrix(4);
    for (auto& row : m) row[0] = 1;
    for (int s = 0; s < 4; ++s) m[3][s] = 1;
    const auto b = blame_corruption(m);
    CHECK(b.senders == std::vector<int>{0});
    CHECK(b.receivers == std::vector<int>{3});
    CHECK(b.links.empty());
  }
  SECTION("one path") {
    Matrix m = matrix(4);
    m[2][0] = 5;
    const auto b = blame_corruption(m);
    CHECK(b.links == std::vector<std::pair<int, int>>{{0, 2}});
    CHECK(b.senders.empty());
  }
  SECTION("two GPUs: a bad sender corrupts its own copy too; a bad path does not") {
    Matrix sender = matrix(2);
    sender[0][0] = 1;
    sender[1][0] = 1;
    CHECK(blame_corruption(sender).senders == std::vector<int>{0});
    Matrix path = matrix(2);
    path[1][0] = 1;
    const auto b = blame_corruption(path);
    CHECK(b.senders.empty());
    CHECK(b.receivers.empty());
    CHECK(b.links == std::vector<std::pair<int, int>>{{0, 1}});
  }
  SECTION("everything everywhere is the node") {
    Matrix m = matrix(3);
    for (auto& row : m) std::fill(row.begin(), row.end(), 1);
    CHECK(blame_corruption(m).everywhere);
  }
  SECTION("a GPU's own copy alone") {
    Matrix m = matrix(3);
    m[1][1] = 1;
    CHECK(blame_corruption(m).own == std::vector<int>{1});
  }
}

TEST_CASE("nccl math: bus bandwidth classes") {
  CHECK(classify_busbw(300, 360, 0.6, 0.7) == BusbwClass::ok);
  CHECK(classify_busbw(250, 360, 0.6, 0.7) == BusbwClass::marginal);
  CHECK(classify_busbw(200, 360, 0.6, 0.7) == BusbwClass::low);
  CHECK(classify_busbw(1, 0, 0.6, 0.7) == BusbwClass::ok);  // no figure
  CHECK(classify_busbw(1, 360, 0, 0) == BusbwClass::ok);    // judging turned off
}

TEST_CASE("nccl thresholds: SKU figures, and warn must not be below fail") {
  const SkuSpec* h100 = find_sku("h100-sxm5-80gb");
  REQUIRE(h100 != nullptr);
  const Thresholds t = preflight::test::builtin_thresholds(h100, "test");
  CHECK(t.get("nccl.allgather_busbw_gbps") == 360);
  CHECK(t.get("nccl.allreduce_busbw_gbps") == 360);
  CHECK(preflight::test::builtin_thresholds(find_sku("h100-pcie-80gb"), "test")
            .get("nccl.allgather_busbw_gbps") == 0);
  Thresholds bad = preflight::test::builtin_thresholds(h100, "test");
  CHECK_THROWS_WITH(bad.apply_overrides(R"({"nccl": {"warn_fraction": 0.5}})", "site.json"),
                    Catch::Contains("nccl.warn_fraction"));
}

TEST_CASE("nccl engine: without a usable libnccl it says why, and run() reports, never throws") {
  // Host-only build: "built without CUDA support"; CUDA build: the dlopen or dlsym problem. No
  // case here reaches a GPU.
  const auto check = [](const char* library, const char* expected) {
    test::ScopedEnv env("PREFLIGHT_NCCL_LIBRARY", library);
    const auto engine = make_nccl_collective_engine();
    const std::string why = engine->unavailable_reason();
    INFO(why);
    const bool without_cuda =
        why == "built without CUDA support" || why.find("built without NCCL") != std::string::npos;
    CHECK((without_cuda || why.find(expected) != std::string::npos));
    std::string error;
    CHECK(engine->unique_id(error).empty());
    CHECK_FALSE(error.empty());
    CollectiveJob job;
    job.unique_id.assign(128, 0);
    job.nranks = 2;
    job.cuda_ordinals = {0, 1};
    job.sizes = {4096};
    job.deadline = SteadyClock::now() + 5s;
    CollectiveResult r;
    CHECK_NOTHROW(r = engine->run(job));
    CHECK_FALSE(r.initialized);
    CHECK_FALSE(r.error.empty());
    CHECK(r.corrupt_from.size() == 2);
    // Jobs the engine refuses whatever the library: NCCL takes one rank per GPU.
    job.cuda_ordinals = {0, 0};
    r = engine->run(job);
    CHECK((without_cuda || r.error.find("invalid job") != std::string::npos));
  };
  check("/nonexistent/libnccl.so.2", "/nonexistent/libnccl.so.2");
  check("libm.so.6", "has no ncclGetUniqueId");
}
