// The events check as an operator meets it: a saved log judged with --kernel-log on a node
// without GPUs, and the live log (through its test seam) across runs with a state directory,
// where an event fails every run until the node reboots or it is acknowledged.
#include <catch2/catch.hpp>

#include <ctime>
#include <fstream>

#include "support/subprocess.hpp"

namespace preflight::test {
namespace {

using nlohmann::json;

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

// The events check's findings as CODE@entity, and the verdict.
struct Outcome {
  int exit_code = -1;
  std::string verdict;
  std::string action;
  std::vector<std::string> findings;
};

Outcome run_events(const TempDir& dir, std::vector<std::string> args, const EnvVars& env = {}) {
  const std::string path = dir.file("verdict.json");
  args.insert(args.begin(), {"run", "--checks", "events", "--expect-gpus", "0", "--json", path});
  RunOptions options = no_gpu_options();
  for (const auto& e : env) options.env.push_back(e);
  const RunResult r = run_preflight(args, options);
  INFO(describe(r));
  REQUIRE(r.exited());
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  const json v = json::parse(read_file(path));
  Outcome out;
  out.exit_code = r.exit_code;
  out.verdict = v.at("verdict");
  out.action = v.value("action", "");
  for (const json& c : v.at("checks")) {
    if (c.at("name") != "events") continue;
    for (const json& f : c.at("findings")) {
      out.findings.push_back(f.at("code").get<std::string>() + "@" +
                             f.at("entity").get<std::string>());
      if (f.at("code") == "XID_REBOOT") CHECK(f.at("action") == "reboot");
    }
  }
  return out;
}

// A /dev/kmsg record logged `ago_s` seconds before now, by this machine's clock since boot.
std::string record(std::uint64_t seq, double ago_s, const std::string& text) {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const double now_us = ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
  const double at = now_us > ago_s * 1e6 ? now_us - ago_s * 1e6 : 0;
  return "6," + std::to_string(seq) + "," + std::to_string(static_cast<std::uint64_t>(at)) + ",-;" +
         text + "\n";
}

const std::string kXid79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.";
const std::string kQuiet = "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  580.65.06";

}  // namespace

TEST_CASE("events: a saved log with Xid 79 on a bus id no GPU has fails, naming the bus id",
          "[events]") {
  TempDir dir;
  const std::string log =
      write(dir, "dmesg.txt", "[ 100.5] " + kQuiet + "\n[ 200.1] " + kXid79 + "\n");
  const Outcome o = run_events(dir, {"--kernel-log", log});
  CHECK(o.exit_code == 1);
  CHECK(o.verdict == "fail");
  CHECK(o.action == "reboot");
  CHECK(o.findings == std::vector<std::string>{"XID_REBOOT@pci:0000:3b:00"});
}

TEST_CASE(
    "events: a saved log with Xid 48 or an EDAC uncorrected error fails; a healthy one passes",
    "[events]") {
  TempDir dir;
  Outcome o = run_events(
      dir, {"--kernel-log",
            write(dir, "j.txt",
                  "Nov 28 12:00:00 n1 kernel: NVRM: Xid (0000:86:00): 48, An uncorrectable double "
                  "bit error (DBE) has been detected on GPU in the framebuffer at partition 1, "
                  "subpartition 0.\n")});
  CHECK(o.verdict == "fail");
  CHECK(o.findings == std::vector<std::string>{"XID_RESET_GPU@pci:0000:86:00"});
  o = run_events(
      dir, {"--kernel-log", write(dir, "e.txt", "EDAC MC1: 1 UE memory read error on DIMM_B1\n")});
  CHECK(o.verdict == "fail");
  CHECK(o.findings == std::vector<std::string>{"HOST_EDAC_UNCORRECTED@node"});
  o = run_events(dir, {"--kernel-log", write(dir, "h.txt", kQuiet + "\n")});
  CHECK(o.exit_code == 0);
  CHECK(o.findings.empty());
}

TEST_CASE("events: --kernel-log that is not a readable regular file is exit 2, one line",
          "[events]") {
  TempDir dir;
  const RunResult r = preflight({"run", "--expect-gpus", "0", "--kernel-log", dir.path()});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("preflight: --kernel-log:"));
  CHECK(r.err.find('\n') == r.err.size() - 1);
}

TEST_CASE("events: from the live log, an event fails every run until acknowledged or rebooted",
          "[events]") {
  TempDir dir;
  const std::string state = dir.file("state");
  REQUIRE(system(("mkdir -p " + state).c_str()) == 0);
  const std::string boot = write(dir, "boot_id", "aaaaaaaa-0000-4000-8000-000000000001\n");
  std::string log = record(1, 300, kQuiet) + record(2, 120, kXid79);
  const std::string kmsg = write(dir, "kmsg", log);
  const EnvVars env = {{"PREFLIGHT_KMSG_PATH", kmsg}, {"PREFLIGHT_BOOT_ID_PATH", boot}};
  const std::vector<std::string> args = {"--state-dir", state};

  // Unhealthy runs keep no cursor: the same event is one finding in each.
  for (int i = 0; i < 2; ++i) {
    const Outcome o = run_events(dir, args, env);
    CHECK(o.exit_code == 1);
    CHECK(o.findings == std::vector<std::string>{"XID_REBOOT@pci:0000:3b:00"});
  }
  // Quiet records logged since do not make it pass.
  log += record(3, 10, kQuiet);
  write(dir, "kmsg", log);
  CHECK(run_events(dir, args, env).exit_code == 1);

  // Acknowledged: it stops counting, and the healthy run keeps the cursor.
  RunOptions ack;
  ack.env = env;
  const RunResult a = run_preflight({"acknowledge", "--state-dir", state}, ack);
  INFO(describe(a));
  REQUIRE(a.exit_code == 0);
  CHECK_THAT(a.out, Catch::Contains("through record 3"));
  Outcome o = run_events(dir, args, env);
  CHECK(o.exit_code == 0);
  CHECK(o.findings.empty());
  CHECK(read_file(state + "/kernel-log-cursor") == "aaaaaaaa-0000-4000-8000-000000000001 3\n");

  // A new Xid after the cursor counts, once per run until dealt with.
  log += record(4, 1, kXid79);
  write(dir, "kmsg", log);
  CHECK(run_events(dir, args, env).exit_code == 1);
  CHECK(run_events(dir, args, env).exit_code == 1);

  // The node rebooted: a new boot's log, without the Xid, passes.
  write(dir, "boot_id", "bbbbbbbb-0000-4000-8000-000000000002\n");
  write(dir, "kmsg", record(1, 30, kQuiet));
  o = run_events(dir, args, env);
  CHECK(o.exit_code == 0);
  CHECK(o.findings.empty());
  CHECK(read_file(state + "/kernel-log-cursor") == "bbbbbbbb-0000-4000-8000-000000000002 1\n");
}

TEST_CASE("events: without a state directory, only the window counts", "[events]") {
  TempDir dir;
  const std::string boot = write(dir, "boot_id", "cccccccc-0000-4000-8000-000000000003\n");
  // An Xid two minutes ago; a window of 36 s (events.window_hours 0.01) leaves it out, the
  // default 24 h takes it in. (A machine up for less than two minutes logs it at boot: inside.)
  const std::string kmsg = write(dir, "kmsg", record(1, 120, kXid79) + record(2, 1, kQuiet));
  const EnvVars env = {{"PREFLIGHT_KMSG_PATH", kmsg}, {"PREFLIGHT_BOOT_ID_PATH", boot}};
  const std::string narrow = write(dir, "t.json", R"({"events": {"window_hours": 0.01}})");
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  if (ts.tv_sec > 180) CHECK(run_events(dir, {"--thresholds", narrow}, env).exit_code == 0);
  CHECK(run_events(dir, {}, env).exit_code == 1);
}

}  // namespace preflight::test
