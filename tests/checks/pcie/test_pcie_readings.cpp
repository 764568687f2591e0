// The pcie check's readings and judgement without a GPU: the PCIe tree read from a sysfs tree
// built in a temporary folder, readings written by hand for nodes whose figures are published
// (DGX A100: GPUs in pairs behind Gen4 switch uplinks; DGX H100: a switch per GPU), faults on
// them, the JSON round trip, and the check end to end on a fake engine and a fake sysfs.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "checks/common/bandwidth_math.hpp"
#include "checks/pcie/pcie_check.hpp"
#include "checks/pcie/pcie_readings.hpp"
#include "checks/pcie/pcie_topology.hpp"
#include "preflight/errors.hpp"
#include "run/runner.hpp"
#include "support/builtin_thresholds.hpp"
#include "support/check_results.hpp"
#include "support/fake_backend.hpp"
#include "support/fake_bandwidth_engine.hpp"

using namespace preflight;
using preflight::test::codes;
using preflight::test::sku;
namespace fs = std::filesystem;

namespace {

// A SKU's thresholds with the bidirectional fractions proposed in docs/checks/pcie.md
// (0.4 / 0.45 of twice the link): the published A100 figure, 0.52 of twice its link, warns under
// 0.5 / 0.6 ("bidirectional copies have fractions of their own" holds both).
Thresholds proposed(const char* id) {
  Thresholds t = sku(id);
  t.apply_overrides(R"({"pcie": {"bidir_fail_fraction": 0.4, "bidir_warn_fraction": 0.45}})",
                    "proposed");
  return t;
}

Thresholds a100() {
  return proposed("a100-sxm4-80gb");
}

const Finding* find(const std::vector<Finding>& findings, const std::string& code,
                    const std::string& entity) {
  for (const auto& f : findings) {
    if (f.code == code && f.entity == entity) return &f;
  }
  return nullptr;
}

PcieStats stats(double median) {
  return {median, median * 0.99, 3};
}

// One GPU's readings: its link as NVML reports it (idle: current generation 1), the one-GPU
// figures and the all-at-once ones.
PcieGpuReadings gpu(int index, int gen, double h2d, double d2h, double bidir, double all_h2d,
                    double all_d2h) {
  PcieGpuReadings g;
  g.index = index;
  g.bus_id = "00000000:" + std::to_string(10 + index) + ":00.0";
  g.link = {1, gen, gen, 16, 16};
  g.alone = {stats(h2d), stats(d2h), stats(bidir)};
  g.all_at_once = {stats(all_h2d), stats(all_d2h), std::nullopt};
  return g;
}

PcieUplinkReadings uplink(const std::string& id, int gen, std::vector<std::string> gpus) {
  PcieUplinkReadings u;
  u.id = id;
  u.gen_current = gen;
  u.width_current = 16;
  u.gen_max = gen;
  u.width_max = 16;
  u.gpus = std::move(gpus);
  return u;
}

// DGX A100: four PCIe switches, each with two GPUs (and two NICs) behind one Gen4 x16 uplink to
// its CPU (nvidia-smi topo -m: PXB between the two GPUs of a switch, nvbandwidth issue #53).
// One GPU alone: ~24.8 GB/s host-to-device (nvbandwidth issues #11, #53). Every GPU at once:
// the two GPUs of a switch split its uplink, ~12.3 GB/s each. Bidirectional, both directions
// summed: ~32.5 GB/s (docs/checks/pcie.md, "Bidirectional").
PcieReadings dgx_a100() {
  PcieReadings r;
  r.topology = "sysfs";
  for (int i = 0; i < 8; ++i) r.gpus.push_back(gpu(i, 4, 24.8, 25.4, 32.5, 12.3, 12.6));
  const char* ports[] = {"0000:00:01.1", "0000:40:01.1", "0000:80:01.1", "0000:c0:01.1"};
  for (int s = 0; s < 4; ++s) {
    r.uplinks.push_back(
        uplink(ports[s], 4, {"gpu" + std::to_string(2 * s), "gpu" + std::to_string(2 * s + 1)}));
  }
  return r;
}

// DGX H100: a PCIe switch per GPU, each with its own Gen5 x16 uplink. ~53-55 GB/s alone and
// ~50 with every GPU copying (nvbandwidth on 8 x H800: 55.3 h2d alone, 55.2 host_to_all, 45.0
// all_to_host); bidirectional, summed, ~80 GB/s.
PcieReadings dgx_h100() {
  PcieReadings r;
  r.topology = "sysfs";
  for (int i = 0; i < 8; ++i) {
    r.gpus.push_back(gpu(i, 5, 53.0, 53.5, 80.0, 50.0, 45.0));
    char pcie_link_files[16];
    std::snprintf(pcie_link_files, sizeof pcie_link_files, "0000:%02x:01.0", 0x10 * i);
    r.uplinks.push_back(uplink(pcie_link_files, 5, {"gpu" + std::to_string(i)}));
  }
  return r;
}

// A sysfs tree in a temporary folder, laid out as the kernel does: devices under
// devices/pci<domain>:<bus>/<root port>/.../<device>, and bus/pci/devices/<bdf> a relative link
// to each.
class FakePcieSysfs {
 public:
  FakePcieSysfs() {
    char name[] = "/tmp/preflight-sysfs-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    root_ = name;
    fs::create_directories(root_ + "/bus/pci/devices");
  }
  ~FakePcieSysfs() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }
  const std::string& root() const { return root_; }

  // The device chain.back() with its parents chain[0..] (already added), below host bridge
  // `host` ("pci0000:00"), holding these attribute files.
  void add(const std::string& host, const std::vector<std::string>& chain,
           const std::map<std::string, std::string>& files) {
    std::string rel = "devices/" + host;
    for (const auto& part : chain) rel += "/" + part;
    fs::create_directories(root_ + "/" + rel);
    for (const auto& [name, text] : files) std::ofstream(root_ + "/" + rel + "/" + name) << text;
    fs::create_directory_symlink("../../../" + rel, root_ + "/bus/pci/devices/" + chain.back());
  }

 private:
  std::string root_;
};

std::map<std::string, std::string> pcie_link_files(const char* speed_now, const char* width_now,
                                                   const char* speed_max, const char* width_max,
                                                   const char* vendor = "0x10de",
                                                   const char* numa = "-1") {
  return {{"vendor", std::string(vendor) + "\n"},
          {"numa_node", std::string(numa) + "\n"},
          {"current_link_speed", std::string(speed_now) + "\n"},
          {"current_link_width", std::string(width_now) + "\n"},
          {"max_link_speed", std::string(speed_max) + "\n"},
          {"max_link_width", std::string(width_max) + "\n"}};
}

constexpr const char* kIntel = "0x8086";
constexpr const char* kBroadcom = "0x1000";
constexpr const char* kMellanox = "0x15b3";

// Two GPUs and a NIC behind one switch whose Gen5 uplink sits in a Gen4 root port; a GPU
// directly on a root port; a GPU on a root bus with no bridge (a virtual machine).
void build_tree(FakePcieSysfs& sys) {
  const char* gen4 = "16.0 GT/s PCIe";
  const char* gen5 = "32.0 GT/s PCIe";
  sys.add("pci0000:00", {"0000:00:01.1"}, pcie_link_files(gen4, "16", gen4, "16", kIntel));
  sys.add("pci0000:00", {"0000:00:01.1", "0000:01:00.0"},
          pcie_link_files(gen4, "16", gen5, "16", kBroadcom));
  for (const char* down : {"0000:02:00.0", "0000:02:10.0", "0000:02:18.0"}) {
    sys.add("pci0000:00", {"0000:00:01.1", "0000:01:00.0", down},
            pcie_link_files(gen4, "16", gen5, "16", kBroadcom));
  }
  sys.add("pci0000:00", {"0000:00:01.1", "0000:01:00.0", "0000:02:00.0", "0000:03:00.0"},
          pcie_link_files("2.5 GT/s PCIe", "16", gen4, "16", "0x10de", "0"));
  sys.add("pci0000:00", {"0000:00:01.1", "0000:01:00.0", "0000:02:10.0", "0000:04:00.0"},
          pcie_link_files("2.5 GT/s PCIe", "16", gen4, "16", "0x10de", "0"));
  sys.add("pci0000:00", {"0000:00:01.1", "0000:01:00.0", "0000:02:18.0", "0000:05:00.0"},
          pcie_link_files(gen4, "16", gen4, "16", kMellanox, "0"));
  sys.add("pci0000:80", {"0000:80:01.0"}, pcie_link_files(gen5, "16", gen5, "16", kIntel));
  sys.add("pci0000:80", {"0000:80:01.0", "0000:81:00.0"},
          pcie_link_files(gen5, "16", gen5, "16", "0x10de", "1"));
  sys.add("pci0000:c0", {"0000:c0:00.0"}, pcie_link_files(gen5, "16", gen5, "16", "0x10de", "1"));
}

}  // namespace

TEST_CASE("pcie topology: NVML bus ids and sysfs link speeds") {
  CHECK(pci_sysfs_name("00000000:1B:00.0") == "0000:1b:00.0");
  CHECK(pci_sysfs_name("0000:1b:00.0") == "0000:1b:00.0");
  CHECK(pci_sysfs_name("00010000:01:00.0") == "10000:01:00.0");  // a VMD domain
  CHECK(pci_sysfs_name("00000000:10:00.0") == "0000:10:00.0");
  CHECK(pci_sysfs_name("GPU-1234") == "");
  CHECK(pci_sysfs_name("") == "");
  const std::pair<const char*, std::optional<int>> speeds[] = {
      {"2.5 GT/s PCIe", 1},     {"5.0 GT/s PCIe", 2},      {"8.0 GT/s PCIe", 3},
      {"16.0 GT/s PCIe", 4},    {"32.0 GT/s PCIe", 5},     {"64.0 GT/s PCIe", 6},
      {"32.0 GT/s", 5},         {"Unknown", std::nullopt}, {"", std::nullopt},
      {"12 GT/s", std::nullopt}};
  for (const auto& [text, gen] : speeds) {
    INFO(text);
    CHECK(pcie_gen_from_sysfs_speed(text) == gen);
  }
}

TEST_CASE("pcie topology: GPUs grouped by the uplink above their root port, from a sysfs tree") {
  FakePcieSysfs sys;
  build_tree(sys);
  const auto topology = read_pcie_topology(sys.root(), {{0, "00000000:03:00.0"},
                                                        {1, "00000000:04:00.0"},
                                                        {2, "00000000:81:00.0"},
                                                        {3, "00000000:C0:00.0"},
                                                        {4, "00000000:05:00.0"},
                                                        {5, "00000000:99:00.0"}});
  // The NIC (gpu4's made-up id names it) and the id sysfs lacks are not GPUs found.
  REQUIRE(topology.gpus.size() == 4);
  const PcieGpuLocation& gpu0 = topology.gpus[0].second;
  CHECK(topology.gpus[0].first == 0);
  CHECK(gpu0.bdf == "0000:03:00.0");
  CHECK(gpu0.numa_node == 0);
  CHECK(gpu0.root_port == "0000:00:01.1");
  CHECK(gpu0.bridges == std::vector<std::string>{"0000:00:01.1", "0000:01:00.0", "0000:02:00.0"});
  CHECK(gpu0.path_gen_max == 4);  // Gen5 switch ports, but a Gen4 GPU and root port
  CHECK(gpu0.path_width_max == 16);
  CHECK(topology.gpus[2].second.path_gen_max == 5);
  CHECK(topology.gpus[3].second.root_port.empty());  // on the root bus
  CHECK(topology.gpus[3].second.bridges.empty());
  CHECK(topology.gpus[3].second.numa_node == 1);

  REQUIRE(topology.uplinks.size() == 3);
  const PcieUplink& shared = topology.uplinks[0];
  CHECK(shared.id == "0000:00:01.1");
  CHECK(shared.device == "0000:01:00.0");
  CHECK(shared.gpus == std::vector<int>{0, 1});
  CHECK(shared.link.gen_current == 4);
  CHECK(shared.link.width_current == 16);
  CHECK(shared.link.gen_max == 4);  // a Gen5 switch in a Gen4 root port
  CHECK(shared.link.width_max == 16);
  const PcieUplink& own = topology.uplinks[1];
  CHECK(own.id == "0000:80:01.0");
  CHECK(own.device == "0000:81:00.0");  // directly on the root port: its own link
  CHECK(own.gpus == std::vector<int>{2});
  CHECK(own.link.gen_max == 5);
  const PcieUplink& vm = topology.uplinks[2];
  CHECK(vm.id == "0000:c0:00.0");
  CHECK(vm.gpus == std::vector<int>{3});
}

TEST_CASE("pcie topology: no sysfs entry means unknown, never a guess") {
  CHECK(read_pcie_topology("/nonexistent-sysfs", {{0, "00000000:03:00.0"}}).gpus.empty());
  CHECK_FALSE(locate_pcie_gpu("/nonexistent-sysfs", "0000:03:00.0").has_value());
  FakePcieSysfs sys;
  build_tree(sys);
  CHECK_FALSE(locate_pcie_gpu(sys.root(), "0000:05:00.0").has_value());  // a NIC
  CHECK_FALSE(locate_pcie_gpu(sys.root(), "").has_value());
}

TEST_CASE("pcie judge: DGX A100, GPUs sharing Gen4 switch uplinks in pairs, passes") {
  const Thresholds t = a100();
  const PcieReadings r = dgx_a100();
  const auto findings = judge_pcie(r, t);
  for (const auto& f : findings) INFO(f.code << " " << f.entity << ": " << f.message);
  CHECK(findings.empty());
  // The old rule held every GPU to 0.6 of its own Gen4 x16 link while all copied: 18.9 GB/s,
  // so each GPU's 12.3 GB/s gave PCIE_SHARED_BANDWIDTH_LOW on all 8 GPUs of a healthy node.
  // Without the topology (readings "unknown") the judgement falls back to exactly that rule.
  const double old_limit = 0.6 * pcie_link_gbps(4, 16);
  CHECK(old_limit == Approx(18.9).margin(0.01));
  CHECK(12.3 < old_limit);
  PcieReadings unknown = r;
  unknown.topology = "unknown";
  unknown.uplinks.clear();
  const auto old = judge_pcie(unknown, t);
  CHECK(old.size() == 16);  // 8 GPUs x host-to-device and device-to-host
  for (const auto& f : old) CHECK(f.code == "PCIE_SHARED_BANDWIDTH_LOW");
  CHECK_THAT(old.at(0).message, Catch::Contains("PCIe topology not read"));
}

TEST_CASE("pcie judge: DGX H100, a switch and uplink per GPU, passes") {
  const auto findings = judge_pcie(dgx_h100(), sku("h100-sxm5-80gb"));
  for (const auto& f : findings) INFO(f.code << " " << f.entity << ": " << f.message);
  CHECK(findings.empty());
}

TEST_CASE("pcie judge: one GPU trained at Gen4 on a Gen5 SKU fails on that GPU alone") {
  PcieReadings r = dgx_h100();
  r.gpus[3] = gpu(3, 4, 26.0, 26.2, 40.0, 25.5, 24.0);
  r.gpus[3].link.gen_max_gpu = 5;  // the GPU can do Gen5; GPU and slot together only Gen4
  const auto findings = judge_pcie(r, sku("h100-sxm5-80gb"));
  CHECK(codes(findings) ==
        std::set<std::string>{"PCIE_BANDWIDTH_LOW@gpu3", "PCIE_SHARED_BANDWIDTH_LOW@gpu3"});
  const Finding* low = find(findings, "PCIE_BANDWIDTH_LOW", "gpu3");
  REQUIRE(low != nullptr);
  CHECK_THAT(low->message, Catch::Contains("Gen5 x16 running Gen4 x16"));
  CHECK(*low->threshold == Approx(0.6 * pcie_link_gbps(5, 16)));
  CHECK(low->judged == false);  // add_judged marks them, not the judgement
}

TEST_CASE("pcie judge: H100s behind Gen4 switches are held to what the path carries") {
  // A cloud 8 x H100 SXM node whose Broadcom PEX88096 (Gen4) switches each hold two GPUs and
  // two NICs (NCCL's topology log, NVIDIA/nccl#1519): each GPU trains Gen4 to its switch port.
  // One GPU alone gets an A100-like ~24.8 GB/s, about half with its switch partner copying.
  PcieReadings r = dgx_a100();
  for (auto& g : r.gpus) {
    g.link.gen_max_gpu = 5;
    g.path_gen_max = 4;
    g.path_width_max = 16;
  }
  CHECK(judge_pcie(r, proposed("h100-sxm5-80gb")).empty());
  // The same figures where the path carries Gen5: the Gen4 links are faults.
  for (auto& g : r.gpus) g.path_gen_max = 5;
  const auto findings = judge_pcie(r, proposed("h100-sxm5-80gb"));
  const Finding* low = find(findings, "PCIE_BANDWIDTH_LOW", "gpu0");
  REQUIRE(low != nullptr);
  CHECK_THAT(low->message, Catch::Contains("Gen5 x16 running Gen4 x16"));
  // One GPU trained below its Gen4 slot is still named.
  for (auto& g : r.gpus) g.path_gen_max = 4;
  r.gpus[6].link.gen_max_link = 3;
  r.gpus[6].alone.h2d = stats(12.0);
  const auto gen3 = judge_pcie(r, proposed("h100-sxm5-80gb"));
  REQUIRE(codes(gen3) == std::set<std::string>{"PCIE_BANDWIDTH_LOW@gpu6"});
  CHECK_THAT(gen3[0].message, Catch::Contains("Gen4 x16 running Gen3 x16"));
  CHECK(*gen3[0].threshold == Approx(0.6 * pcie_link_gbps(4, 16)));
}

TEST_CASE("pcie judge: a shared uplink carrying far less than its rate fails, naming it") {
  PcieReadings r = dgx_a100();
  for (int i : {2, 3}) r.gpus[static_cast<std::size_t>(i)].all_at_once.h2d = stats(4.0);
  const auto findings = judge_pcie(r, a100());
  CHECK(codes(findings) == std::set<std::string>{"PCIE_SHARED_BANDWIDTH_LOW@gpu2",
                                                 "PCIE_SHARED_BANDWIDTH_LOW@gpu3",
                                                 "PCIE_UPLINK_BANDWIDTH_LOW@0000:40:01.1"});
  const Finding* gpu2 = find(findings, "PCIE_SHARED_BANDWIDTH_LOW", "gpu2");
  REQUIRE(gpu2 != nullptr);
  CHECK(gpu2->message ==
        "host-to-device 4.0 GB/s (median of 3, min 4.0 GB/s) while all 8 GPUs copy; gpu2 shares "
        "uplink 0000:40:01.1 (Gen4 x16, 31.5 GB/s raw) with gpu3: fair share 15.8 GB/s");
  CHECK(*gpu2->threshold == Approx(0.6 * pcie_link_gbps(4, 16) / 2));
  const Finding* up = find(findings, "PCIE_UPLINK_BANDWIDTH_LOW", "0000:40:01.1");
  REQUIRE(up != nullptr);
  CHECK_THAT(up->message, Catch::Contains("8.0 GB/s in total through uplink 0000:40:01.1"));
  CHECK_THAT(up->message, Catch::Contains("gpu2 and gpu3"));
  CHECK(*up->value == Approx(8.0));
  CHECK(*up->threshold == Approx(0.6 * pcie_link_gbps(4, 16)));
}

TEST_CASE("pcie judge: an uplink whose rate was not read is taken as fast as its GPUs' links") {
  PcieReadings r = dgx_a100();
  for (auto& u : r.uplinks) u.gen_current = u.width_current = u.gen_max = u.width_max = {};
  CHECK(judge_pcie(r, a100()).empty());
  r.gpus[0].all_at_once.d2h = stats(8.0);  // below 0.6 x 15.8; the pair's total still carries
  const auto findings = judge_pcie(r, a100());
  REQUIRE(codes(findings) == std::set<std::string>{"PCIE_SHARED_BANDWIDTH_LOW@gpu0"});
  CHECK_THAT(findings[0].message, Catch::Contains("rate not read, taken as Gen4 x16"));
}

TEST_CASE("pcie judge: bidirectional copies have fractions of their own") {
  // The published A100 figures (docs/checks/pcie.md, "Bidirectional") come to ~32.5 GB/s
  // summed on a Gen4 x16 link: 0.52 of twice its raw rate.
  PcieReadings r = dgx_a100();
  Thresholds t = sku("a100-sxm4-80gb");
  t.apply_overrides(R"({"pcie": {"bidir_fail_fraction": 0.5, "bidir_warn_fraction": 0.6}})",
                    "test");
  CHECK(codes(judge_pcie(r, t)).count("PCIE_BANDWIDTH_MARGINAL@gpu0") == 1);
  t.apply_overrides(R"({"pcie": {"bidir_fail_fraction": 0.4, "bidir_warn_fraction": 0.45}})",
                    "test");
  CHECK(judge_pcie(r, t).empty());
  // Not the one-direction fractions: 0.9 of the link fails both directions, not the sum.
  t.apply_overrides(R"({"pcie": {"fail_fraction": 0.9, "warn_fraction": 0.95}})", "test");
  CHECK(codes(judge_pcie(r, t)).count("PCIE_BANDWIDTH_LOW@gpu0") == 1);
  for (const auto& f : judge_pcie(r, t)) CHECK_THAT(f.message, !Catch::StartsWith("bidirectional"));
  r.gpus[0].alone.bidir = stats(20.0);
  const auto findings = judge_pcie(r, t);
  const Finding* bidir = nullptr;
  for (const auto& f : findings) {
    if (f.message.rfind("bidirectional", 0) == 0) bidir = &f;
  }
  REQUIRE(bidir != nullptr);
  CHECK(bidir->code == "PCIE_BANDWIDTH_LOW");
  CHECK(*bidir->threshold == Approx(0.4 * 2 * pcie_link_gbps(4, 16)));
}

TEST_CASE("pcie readings: JSON round trip judges the same") {
  PcieReadings r = dgx_a100();
  r.gpus[5].all_at_once.h2d = stats(3.0);
  r.gpus[5].numa_node = 1;
  r.gpus[5].root_port = "0000:80:01.1";
  r.gpus[5].bridges = {"0000:80:01.1", "0000:81:00.0", "0000:82:08.0"};
  r.gpus[5].path_gen_max = 4;
  r.gpus[5].path_width_max = 16;
  r.gpus[6].alone.bidir.reset();
  const Thresholds t = sku("a100-sxm4-80gb");
  const nlohmann::ordered_json j = r;
  const PcieReadings back = nlohmann::ordered_json::parse(j.dump()).get<PcieReadings>();
  const auto a = judge_pcie(r, t);
  const auto b = judge_pcie(back, t);
  REQUIRE(a.size() == b.size());
  CHECK_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].code == b[i].code);
    CHECK(a[i].entity == b[i].entity);
    CHECK(a[i].message == b[i].message);
    CHECK(a[i].value == b[i].value);
    CHECK(a[i].threshold == b[i].threshold);
  }
  CHECK(nlohmann::ordered_json(back) == j);
  CHECK(j["gpus"][5]["bridges"][2] == "0000:82:08.0");
  CHECK(j["gpus"][5]["path"]["gen_max"] == 4);
  CHECK_FALSE(j["gpus"][4].contains("path"));
  CHECK_FALSE(j["gpus"][6]["alone"].contains("bidir"));
  // PcieCheck::judge is the same judgement on the JSON.
  const auto via_check = PcieCheck("/nonexistent").judge(j, t);
  REQUIRE(via_check.has_value());
  CHECK(codes(*via_check) == codes(a));
}

TEST_CASE("pcie readings: written by hand, minimal fields") {
  const auto j = nlohmann::ordered_json::parse(R"({
    "topology": "sysfs",
    "gpus": [
      {"index": 0, "link": {"gen_max_link": 4, "width_current": 16},
       "alone": {"h2d": {"median_gbps": 24.8}}, "all_at_once": {"h2d": {"median_gbps": 12.3}}},
      {"index": 1, "link": {"gen_max_link": 4, "width_current": 16},
       "alone": {"h2d": {"median_gbps": 24.7}}, "all_at_once": {"h2d": {"median_gbps": 12.4}}}
    ],
    "uplinks": [{"id": "0000:00:01.1", "gen_max": 4, "width_max": 16, "gpus": ["gpu0", "gpu1"]}]
  })");
  const auto r = j.get<PcieReadings>();
  REQUIRE(r.gpus.size() == 2);
  CHECK(r.gpus[0].alone.h2d->min_gbps == 24.8);
  CHECK(r.gpus[0].alone.h2d->count == 1);
  CHECK_FALSE(r.gpus[0].alone.d2h.has_value());
  CHECK(judge_pcie(r, a100()).empty());
  // Judged as a Gen5 SKU, 24.8 GB/s alone is low on both GPUs.
  CHECK(codes(judge_pcie(r, sku("h100-sxm5-80gb"))) ==
        std::set<std::string>{"PCIE_BANDWIDTH_LOW@gpu0", "PCIE_BANDWIDTH_LOW@gpu1"});
}

TEST_CASE("pcie readings: bad input names the field") {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"gpus": [{"index": 0, "alone": {"h2d": {"median": 3}}}]})",
       "gpus[0].alone.h2d.median: unknown key"},
      {R"({"gpus": [{"index": 0, "alone": {"h2d": {"median_gbps": "fast"}}}]})",
       "gpus[0].alone.h2d.median_gbps: expected a number of GB/s, 0 or more"},
      {R"({"gpus": [{"index": 0, "all_at_once": {"bidir": {"median_gbps": 1}}}]})",
       "gpus[0].all_at_once.bidir: unknown key"},
      {R"({"gpus": [{"bus_id": "x"}]})", "gpus[0].index: expected the GPU's index, 0 or more"},
      {R"({"gpus": [{"index": 0}, {"index": 0}]})", "gpus[1].index: GPU 0 appears twice"},
      {R"({"gpus": [{"index": 0, "link": {"gen_max_link": 4.5}}]})",
       "gpus[0].link.gen_max_link: expected a whole number"},
      {R"({"gpus": [{"index": 0}], "uplinks": [{"id": "a", "gpus": ["gpu1"]}]})",
       "uplinks[0].gpus[0]: gpu1 is not among the readings' gpus"},
      {R"({"gpus": [{"index": 0}], "uplinks": [{"id": "a", "gpus": ["gpu0"]},
                                               {"id": "b", "gpus": ["gpu0"]}]})",
       "uplinks[1].gpus[0]: gpu0 is already behind uplink a"},
      {R"({"uplinks": [{"gpus": []}]})", "uplinks[0].id: expected the root port's PCI address"},
      {R"({"topology": "guessed"})", "topology: expected \"sysfs\", \"partial\" or \"unknown\""},
      {R"([1, 2])", "readings: expected an object"}};
  for (const auto& [text, message] : cases) {
    INFO(text);
    CHECK_THROWS_WITH(nlohmann::ordered_json::parse(text).get<PcieReadings>(), message);
    CHECK_THROWS_AS(nlohmann::ordered_json::parse(text).get<PcieReadings>(), InvalidInput);
  }
}

namespace {

// The pcie check alone, on a sysfs tree of our own, through the runner.
CheckResult run_pcie(const NodeReading& node, test::FakeBandwidthEngine& engine,
                     const std::string& sysfs_root) {
  CheckRegistry registry;
  registry.add(std::make_unique<PcieCheck>(sysfs_root));
  const auto plan = plan_checks(registry, Profile::quick, {"pcie"});
  FaultPlan faults(std::vector<InjectedFault>{});
  test::FakeBackend backend(node);
  backend.bandwidth = &engine;
  RunState state(Verdict{}, plan, false);
  RunSettings settings;
  settings.threshold_specs = preflight::test::builtin_threshold_specs();
  settings.profile = Profile::quick;
  settings.deadline = SteadyClock::now() + std::chrono::seconds(60);
  Runner runner(backend.engines(), faults);
  const auto out = runner.run(state, plan, settings);
  REQUIRE(out.invalid.empty());
  REQUIRE(out.verdict.checks.size() == 1);
  return out.verdict.checks[0];
}

// healthy_node's GPUs (bus ids 0000:10:00.0 ...) in pairs behind Gen4 switch uplinks.
void a100_pairs_tree(FakePcieSysfs& sys, int gpus) {
  const char* gen4 = "16.0 GT/s PCIe";
  for (int pair = 0; pair < gpus / 2; ++pair) {
    char host[16], root[16], up[16];
    std::snprintf(host, sizeof host, "pci0000:%02x", 0x40 * pair);
    std::snprintf(root, sizeof root, "0000:%02x:01.1", 0x40 * pair);
    std::snprintf(up, sizeof up, "0000:%02x:00.0", 0x40 * pair + 1);
    sys.add(host, {root}, pcie_link_files(gen4, "16", gen4, "16", kIntel));
    sys.add(host, {root, up}, pcie_link_files(gen4, "16", gen4, "16", kBroadcom));
    for (int k = 0; k < 2; ++k) {
      char down[16];
      std::snprintf(down, sizeof down, "0000:%02x:%02x.0", 0x40 * pair + 2, 8 * k);
      const std::string gpu = "0000:" + std::to_string(10 + 2 * pair + k) + ":00.0";
      sys.add(host, {root, up, down}, pcie_link_files(gen4, "16", gen4, "16", kBroadcom));
      sys.add(host, {root, up, down, gpu}, pcie_link_files(gen4, "16", gen4, "16", "0x10de", "0"));
    }
  }
}

NodeReading a100_node(int gpus) {
  NodeReading node = test::healthy_node(gpus);
  for (auto& g : node.gpus) {
    g = test::healthy_gpu(g.index, 0x20B2, "NVIDIA A100-SXM4-80GB");
    g.pcie_gen_max_link = 4;
    g.pcie_gen_max_gpu = 4;
  }
  return node;
}

}  // namespace

TEST_CASE("pcie check: shared uplinks read from sysfs, judged per uplink, readings re-judge") {
  FakePcieSysfs sys;
  a100_pairs_tree(sys, 4);
  test::FakeBandwidthEngine engine;
  engine.pcie_gbps = 24.8;
  engine.shared_host_factor = 0.5;  // two GPUs per uplink split it
  SECTION("with the topology: a healthy node passes") {
    const CheckResult r = run_pcie(a100_node(4), engine, sys.root());
    for (const auto& f : r.findings) INFO(f.code << " " << f.entity << ": " << f.message);
    CHECK(r.findings.empty());
    CHECK(r.status == Status::pass);
    REQUIRE(r.readings.is_object());
    CHECK(r.readings["topology"] == "sysfs");
    REQUIRE(r.readings["uplinks"].size() == 2);
    CHECK(r.readings["uplinks"][0]["id"] == "0000:00:01.1");
    CHECK(r.readings["uplinks"][0]["gpus"] == nlohmann::ordered_json({"gpu0", "gpu1"}));
    CHECK(r.readings["gpus"][1]["root_port"] == "0000:00:01.1");
    CHECK(r.readings["gpus"][1]["numa_node"] == 0);
    CHECK(r.readings["gpus"][1]["all_at_once"]["h2d"]["median_gbps"] == Approx(12.4));
  }
  SECTION("without it (made-up bus ids, a container): each GPU held to its own link") {
    const CheckResult r = run_pcie(a100_node(4), engine, "/nonexistent-sysfs");
    CHECK(r.readings["topology"] == "unknown");
    CHECK(r.readings["uplinks"].empty());
    CHECK(codes(r.findings).size() == 4);
    CHECK(codes(r.findings).count("PCIE_SHARED_BANDWIDTH_LOW@gpu3") == 1);
    CHECK_THAT(r.summary, Catch::Contains("PCIe topology unknown"));
  }
  SECTION("an uplink that carries a quarter: the run's judged findings are the re-judged ones") {
    engine.shared_host_factor = 0.125;
    const CheckResult r = run_pcie(a100_node(4), engine, sys.root());
    CHECK(codes(r.findings).count("PCIE_UPLINK_BANDWIDTH_LOW@0000:40:01.1") == 1);
    const auto again = PcieCheck().judge(r.readings, sku("a100-sxm4-80gb"));
    REQUIRE(again.has_value());
    std::vector<Finding> judged;
    for (const auto& f : r.findings) {
      if (f.judged) judged.push_back(f);
    }
    REQUIRE(judged.size() == again->size());
    for (std::size_t i = 0; i < judged.size(); ++i) {
      CHECK(judged[i].code == (*again)[i].code);
      CHECK(judged[i].entity == (*again)[i].entity);
      CHECK(judged[i].message == (*again)[i].message);
    }
  }
}
