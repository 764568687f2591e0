// The events check: the kernel-log reader and recogniser, which records count (cursor, boot,
// window), the judgement of its readings, and the check run on logs of the tests' own.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "checks/events/events_check.hpp"
#include "checks/events/kernel_events.hpp"
#include "checks/events/kernel_log.hpp"
#include "preflight/errors.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/fake_backend.hpp"

using namespace preflight;
using namespace std::chrono_literals;

namespace {

std::string message_of(std::string_view line) {
  const auto r = parse_log_line(line);
  return r ? std::string(r->text) : "<none>";
}

std::vector<Finding> judged(const EventsReadings& r) {
  return judge_events(r, test::builtin_thresholds(nullptr, "test"));
}

EventGroup group(EventKind kind, std::string device, std::uint64_t count = 1, int xid = 0) {
  EventGroup g;
  g.kind = kind;
  g.device = std::move(device);
  g.count = count;
  g.xid = xid;
  return g;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/preflight-events-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    const std::string p = (path / name).string();
    std::ofstream(p) << text;
    return p;
  }
};

}  // namespace

TEST_CASE("events: a message is found in every saved format") {
  const std::string xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.";
  CHECK(message_of("6,1204,5123456,-;" + xid) == xid);
  CHECK(message_of("[ 5123.456789] " + xid) == xid);
  CHECK(message_of("[Sat Nov 28 12:00:00 2026] " + xid) == xid);
  CHECK(message_of("Nov 28 12:00:00 node17 kernel: " + xid) == xid);
  CHECK(message_of("2026-11-28T12:00:00.123456+00:00 node17 kernel: [ 5.1] " + xid) == xid);
  CHECK(message_of("kern  :warn  : [ 5123.456789] " + xid) == xid);
  CHECK(message_of("<4>[ 5123.456789] " + xid) == xid);
  CHECK(message_of(xid) == xid);
  CHECK(message_of(" SUBSYSTEM=pci") == "<none>");
  CHECK(message_of("   ") == "<none>");
  const auto kmsg = parse_log_line("4,77,1500000,-;text");
  REQUIRE(kmsg);
  CHECK(*kmsg->seq == 77);
  CHECK(*kmsg->usec == 1500000);
  const auto dmesg = parse_log_line("[   12.5] text");
  REQUIRE(dmesg);
  CHECK(*dmesg->usec == 12500000);
  CHECK_FALSE(dmesg->seq);
}

TEST_CASE("events: Xid lines in both of the driver's formats, and fallen off the bus") {
  auto e = recognise_event("NVRM: Xid (PCI:0000:3B:00): 79, pid=1234, GPU has fallen off the bus.");
  REQUIRE(e);
  CHECK(e->kind == EventKind::xid);
  CHECK(e->xid == 79);
  CHECK(e->device == "0000:3b:00");
  e = recognise_event("NVRM: Xid (0000:86:00): 48, An uncorrectable double bit error (DBE) ...");
  REQUIRE(e);
  CHECK(e->xid == 48);
  CHECK(e->device == "0000:86:00");
  e = recognise_event("NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.");
  REQUIRE(e);
  CHECK(e->xid == 79);
  CHECK(e->device == "0000:1b:00");
  CHECK_FALSE(recognise_event("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.65.06"));
  CHECK_FALSE(recognise_event(
      "NVRM: gpuClearFbhubPoisonIntrForBug2924523_GA100: FBHUB Interrupt detected. Clearing it."));
}

TEST_CASE("events: machine checks, EDAC, AER and network ports") {
  auto e = recognise_event("mce: [Hardware Error]: Machine check events logged");
  REQUIRE(e);
  CHECK(e->kind == EventKind::mce_corrected);
  e = recognise_event("mce: Uncorrected hardware memory error in user-access at 3b4c8f000");
  REQUIRE(e);
  CHECK(e->kind == EventKind::mce_uncorrected);
  e = recognise_event("EDAC MC0: 3 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
  REQUIRE(e);
  CHECK(e->kind == EventKind::edac_corrected);
  CHECK(e->count == 3);
  e = recognise_event("EDAC MC1: 1 UE memory read error on CPU_SrcID#1_MC#0_Chan#0_DIMM#0");
  REQUIRE(e);
  CHECK(e->kind == EventKind::edac_uncorrected);
  CHECK_FALSE(recognise_event("EDAC sbridge MC0: HANDLING MCE MEMORY ERROR"));
  e = recognise_event(
      "nvidia 0000:3B:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver "
      "ID)");
  REQUIRE(e);
  CHECK(e->kind == EventKind::aer_corrected);
  CHECK(e->device == "0000:3b:00.0");
  e = recognise_event(
      "pcieport 0000:00:03.1: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction "
      "Layer, (Requester ID)");
  REQUIRE(e);
  CHECK(e->kind == EventKind::aer_fatal);
  CHECK(e->device == "0000:00:03.1");
  e = recognise_event("pcieport 0000:00:03.1: PCIe Bus Error: severity=Uncorrected (Non-Fatal), x");
  REQUIRE(e);
  CHECK(e->kind == EventKind::aer_nonfatal);
  e = recognise_event("mlx5_core 0000:0c:00.0 ens1np0: Link down");
  REQUIRE(e);
  CHECK(e->kind == EventKind::link_down);
  CHECK(e->device == "0000:0c:00.0");
  CHECK_FALSE(recognise_event("pcieport 0000:00:01.0: pciehp: Slot(1): Link Down"));
  CHECK_FALSE(recognise_event("IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready"));
}

TEST_CASE("events: PCI addresses are compared in one form") {
  CHECK(normalize_pci_address("00000000:3B:00.0") == "0000:3b:00.0");
  CHECK(normalize_pci_address("00000000:3B:00.0", false) == "0000:3b:00");
  CHECK(normalize_pci_address("0000:3b:00") == "0000:3b:00");
  CHECK(normalize_pci_address("3b:00.0").empty());
  CHECK(normalize_pci_address("gpu0").empty());
}

TEST_CASE("events: the cursor, the boot and the window decide which records count") {
  std::string counted;
  const KernelLogCursor cursor{"abc-1", 100};
  auto rule = live_counting_rule(cursor, "abc-1", 24, 1'000'000'000, counted);
  CHECK(counted == "cursor");
  CHECK(rule.mode == CountingRule::Mode::after_seq);
  CHECK(rule.seq == 100);
  rule = live_counting_rule(cursor, "def-2", 24, 1'000'000'000, counted);
  CHECK(counted == "boot");
  CHECK(rule.mode == CountingRule::Mode::all);
  rule = live_counting_rule(std::nullopt, "def-2", 1, 7'200'000'000, counted);
  CHECK(counted == "window");
  CHECK(rule.usec == 3'600'000'000);
  rule = live_counting_rule(std::nullopt, "def-2", 24, 60'000'000, counted);
  CHECK(rule.usec == 0);  // booted less than a window ago: all of it

  CHECK(parse_cursor("abc-1 100\n")->seq == 100);
  CHECK_FALSE(parse_cursor("abc-1"));
  CHECK_FALSE(parse_cursor("abc-1 -5"));
  CHECK_FALSE(parse_cursor("not/hex 5"));
  CHECK(cursor_text(cursor) == "abc-1 100\n");
}

TEST_CASE("events: the collector groups a flood and counts a port's down only after it was up") {
  CountingRule rule;
  rule.mode = CountingRule::Mode::after_seq;
  rule.seq = 10;
  EventCollector c(rule);
  const auto add = [&](std::uint64_t seq, std::string_view text) {
    LogRecord r;
    r.seq = seq;
    r.usec = seq * 1'000'000;
    r.text = text;
    c.add(r);
  };
  add(5, "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.");  // before
  add(6, "mlx5_core 0000:0c:00.0 ens1np0: Link down");                           // bring-up at boot
  add(7, "mlx5_core 0000:0c:00.0 ens1np0: Link up");
  for (std::uint64_t s = 11; s < 111; ++s) {
    add(s, "NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception");
  }
  add(120, "mlx5_core 0000:0c:00.0 ens1np0: Link down");
  add(121, "mlx5_core 0000:0c:00.0 ens1np0: Link up");
  EventsReadings r;
  c.finish(r);
  REQUIRE(r.events.size() == 2);
  CHECK(r.events[0].xid == 13);
  CHECK(r.events[0].count == 100);
  CHECK(*r.events[0].first_seq == 11);
  CHECK(*r.events[0].last_seq == 110);
  CHECK(r.events[1].kind == EventKind::link_down);
  CHECK(r.counted_records == 102);
  CHECK(*r.last_seq == 121);
  CHECK(r.missed == 0);
}

TEST_CASE("events: an Xid on a bus id no GPU has still fails, named by its address") {
  EventsReadings r;
  r.source = "file";
  r.gpus = {{"gpu0", "0000:1b:00.0"}, {"gpu3", "0000:3b:00.0"}};
  r.events = {group(EventKind::xid, "0000:3b:00", 1, 79),
              group(EventKind::xid, "0000:99:00", 2, 48),
              group(EventKind::xid, "0000:1b:00", 4, 13)};
  const auto f = judged(r);
  REQUIRE(f.size() == 3);
  CHECK(f[0].entity == "gpu3");
  CHECK(f[0].severity == Severity::fail);
  CHECK(f[0].action != Action::none);
  CHECK_THAT(f[0].message, Catch::StartsWith("Xid 79"));
  CHECK(f[1].entity == "pci:0000:99:00");
  CHECK(f[1].severity == Severity::fail);
  CHECK(f[2].code == "XID_APPLICATION");
  CHECK(f[2].severity == Severity::info);
  CHECK(f[2].entity == "gpu0");
}

TEST_CASE("events: uncorrected host errors fail, corrected ones warn at their limits") {
  EventsReadings r;
  r.source = "file";
  r.events = {group(EventKind::edac_uncorrected, "", 1), group(EventKind::mce_uncorrected, "", 1)};
  auto f = judged(r);
  REQUIRE(f.size() == 2);
  CHECK(f[0].code == "HOST_EDAC_UNCORRECTED");
  CHECK(f[0].entity == "node");
  CHECK(f[1].code == "HOST_MCE_UNCORRECTED");
  r.events = {group(EventKind::edac_corrected, "", 9),
              group(EventKind::aer_corrected, "0000:3b:00.0", 9),
              group(EventKind::aer_corrected, "0000:3c:00.0", 9)};
  CHECK(judged(r).empty());
  r.events[0].count = 10;
  r.events[1].count = 10;
  f = judged(r);
  REQUIRE(f.size() == 2);
  CHECK(f[0].code == "HOST_EDAC_CORRECTED");
  CHECK(f[0].severity == Severity::warn);
  CHECK(f[1].code == "PCIE_AER_CORRECTED");
  CHECK(f[1].entity == "pci:0000:3b:00.0");
}

TEST_CASE("events: readings round-trip, and bad ones are InvalidInput naming the field") {
  EventsReadings r;
  r.source = "live";
  r.counted = "cursor";
  r.cursor_seq = 5;
  r.records = 10;
  r.nics = {{"mlx5_0", "0000:0c:00.0"}};
  r.events = {group(EventKind::link_down, "0000:0c:00.0", 2)};
  const nlohmann::ordered_json j = r;
  const EventsReadings back = j.get<EventsReadings>();
  CHECK(nlohmann::ordered_json(back) == j);
  CHECK(judged(back)[0].entity == "mlx5_0");
  nlohmann::ordered_json bad = j;
  bad["events"][0]["kind"] = "meteor";
  CHECK_THROWS_WITH(bad.get<EventsReadings>(), Catch::Contains("events[0].kind"));
  bad = j;
  bad["events"][0]["count"] = 0;
  CHECK_THROWS_AS(bad.get<EventsReadings>(), InvalidInput);
  bad = j;
  bad["source"] = "tea leaves";
  CHECK_THROWS_AS(bad.get<EventsReadings>(), InvalidInput);
}

TEST_CASE("events: the check judges the live log from its cursor, or a saved log whole") {
  TempDir dir;
  const std::string boot = dir.file("boot_id", "1f2e3d4c-0000-4000-8000-000000000001\n");
  // Records logged a minute ago by this machine's clock, inside the default window.
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const std::uint64_t now_us = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000;
  const std::string at = std::to_string(now_us > 60'000'000 ? now_us - 60'000'000 : 0);
  const std::string kmsg = dir.file(
      "kmsg", "6,1," + at + ",-;NVRM: loading NVIDIA UNIX x86_64 Kernel Module\n" + "4,2," + at +
                  ",-;NVRM: Xid (PCI:0000:3b:00): 79, pid=9, GPU has fallen off the bus.\n");
  KernelLogPaths paths;
  paths.kmsg = kmsg;
  paths.boot_id = boot;
  paths.sysfs = dir.path.string();
  const EventsCheck check(paths);
  NodeReading node = test::healthy_node(4);
  node.gpus[2].pci_bus_id = "00000000:3B:00.0";
  FaultPlan faults;
  CheckOptions options;
  const Thresholds thresholds = test::builtin_thresholds(nullptr, "test");
  CheckContext ctx;
  ctx.thresholds = &thresholds;
  ctx.faults = &faults;
  ctx.node = &node;
  ctx.options = &options;
  ctx.cancel = std::make_shared<std::atomic<bool>>(false);
  ctx.deadline = SteadyClock::now() + 10s;
  ctx.state_dir = dir.path.string();

  SECTION("no cursor: the window; the cursor to keep is the last record") {
    const CheckResult r = check.run(ctx);
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].entity == "gpu2");
    CHECK(r.findings[0].severity == Severity::fail);
    CHECK(r.findings[0].judged);
    REQUIRE(r.state_if_healthy.size() == 1);
    CHECK(r.state_if_healthy[0].content == "1f2e3d4c-0000-4000-8000-000000000001 2\n");
    CHECK(r.readings["counted"] == "window");
  }
  SECTION("a cursor of this boot before the Xid: it counts; after it: it does not") {
    dir.file(kCursorFile, "1f2e3d4c-0000-4000-8000-000000000001 1\n");
    CHECK(check.run(ctx).findings.size() == 1);
    dir.file(kCursorFile, cursor_text(kernel_log_end(paths)));
    const CheckResult r = check.run(ctx);
    CHECK(r.findings.empty());
    CHECK(r.readings["counted"] == "cursor");
  }
  SECTION("a cursor of an earlier boot: this boot's log counts whole") {
    dir.file(kCursorFile, "0000-9 500\n");
    const CheckResult r = check.run(ctx);
    CHECK(r.findings.size() == 1);
    CHECK(r.readings["counted"] == "boot");
  }
  SECTION(
      "EDAC's counts in sysfs: an uncorrected error fails, corrected ones by their daily rate") {
    std::filesystem::create_directories(dir.path / "devices/system/edac/mc/mc0");
    std::filesystem::create_directories(dir.path / "devices/system/edac/mc/mc1");
    dir.file("devices/system/edac/mc/mc0/ce_count", "3\n");
    dir.file("devices/system/edac/mc/mc0/ue_count", "0\n");
    dir.file("devices/system/edac/mc/mc1/ce_count", "0\n");
    dir.file("devices/system/edac/mc/mc1/ue_count", "2\n");
    dir.file(kCursorFile, cursor_text(kernel_log_end(paths)));  // the log's own Xid acknowledged
    CheckResult r = check.run(ctx);
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].code == "HOST_EDAC_UNCORRECTED");
    CHECK_THAT(r.findings[0].message, Catch::Contains("mc1: 2 uncorrected"));
    REQUIRE(r.readings["edac"].size() == 2);
    EventsReadings counts = r.readings.get<EventsReadings>();
    counts.edac[1].uncorrected = 0;
    counts.uptime_s = 86400.0 / 2;  // half a day: judged as one day, 3 < 10
    CHECK(judge_events(counts, thresholds).empty());
    counts.edac[0].corrected = 25;
    counts.uptime_s = 2 * 86400.0;  // 12.5 a day
    const auto f = judge_events(counts, thresholds);
    REQUIRE(f.size() == 1);
    CHECK(f[0].code == "HOST_EDAC_CORRECTED");
    CHECK(f[0].severity == Severity::warn);
  }
  SECTION("an unreadable live log is a note, never a failure") {
    paths.kmsg = (dir.path / "missing").string();
    const CheckResult r = EventsCheck(paths).run(ctx);
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].code == "KERNEL_LOG_UNREADABLE");
    CHECK(r.findings[0].severity == Severity::info);
    CHECK(r.state_if_healthy.empty());
  }
  SECTION("--kernel-log: judged whole, keeps no cursor") {
    options.set(kKernelLogFlag,
                dir.file("saved.txt", "[ 1.0] EDAC MC1: 1 UE memory read error on DIMM#0\n"));
    check.validate_options(options);
    const CheckResult r = check.run(ctx);
    REQUIRE(r.findings.size() == 1);
    CHECK(r.findings[0].code == "HOST_EDAC_UNCORRECTED");
    CHECK(r.state_if_healthy.empty());
    CHECK(check.judge(r.readings, thresholds)->size() == 1);
  }
  SECTION("--kernel-log of a directory, a FIFO or nothing is bad input naming the flag") {
    options.set(kKernelLogFlag, dir.path.string());
    CHECK_THROWS_WITH(check.validate_options(options), Catch::StartsWith("--kernel-log:"));
    const std::string fifo = (dir.path / "fifo").string();
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    options.set(kKernelLogFlag, fifo);
    CHECK_THROWS_AS(check.validate_options(options), InvalidInput);
    options.set(kKernelLogFlag, "");
    CHECK_THROWS_AS(check.validate_options(options), InvalidInput);
  }
}
