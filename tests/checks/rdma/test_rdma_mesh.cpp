// The loopback mesh of the rdma check (rdma_math.hpp, RdmaMesh; rdma_plan.hpp): every compute NIC
// into host memory on every NUMA node and into every GPU, planned whole in the standard and
// burnin profiles and rotated by shifts in quick; the EFA operations a transfer uses; the host's
// NUMA node list.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "checks/common/counters.hpp"
#include "checks/rdma/rdma_math.hpp"
#include "checks/rdma/rdma_plan.hpp"
#include "preflight/check.hpp"
#include "support/fake_rdma_engine.hpp"

using namespace preflight;

namespace {

// n ConnectX-7 at 400 Gb/s, NIC i near GPU i and on socket i / (n / 2), as on a DGX H100.
std::vector<RdmaDevice> mesh_nics(int n) {
  std::vector<RdmaDevice> devices;
  for (int i = 0; i < n; ++i) {
    RdmaDevice d = test::healthy_nic(i, i);
    d.numa_node = n >= 2 ? i / (n / 2) : 0;
    devices.push_back(d);
  }
  return devices;
}

RdmaMesh two_sockets_four_gpus() {
  RdmaMesh mesh;
  mesh.numa_nodes = {0, 1};
  mesh.gpus = {0, 1, 2, 3};
  return mesh;
}

WorkRequest mesh_request(Profile profile, const CheckOptions& options,
                         std::optional<double> seconds = std::nullopt, std::uint64_t rotation = 0) {
  WorkRequest r;
  r.profile = profile;
  r.options = &options;
  r.seconds = seconds;
  r.rotation = rotation;
  return r;
}

// (NIC, memory) of every mesh cell: "numa1", "gpu3".
std::set<std::pair<std::string, std::string>> mesh_cells(const std::vector<PlannedTransfer>& plan) {
  std::set<std::pair<std::string, std::string>> cells;
  for (const PlannedTransfer& t : plan) {
    if (t.memory == RdmaMemory::gpu) {
      cells.insert({t.from_device, "gpu" + std::to_string(t.gpu_index)});
    } else if (t.host_numa_node >= 0) {
      cells.insert({t.from_device, "numa" + std::to_string(t.host_numa_node)});
    }
  }
  return cells;
}

}  // namespace

TEST_CASE("rdma mesh: 4 NICs x (2 NUMA nodes, 4 GPUs): every cell planned once, named by path") {
  const auto devices = mesh_nics(4);
  const auto plan = plan_transfers(devices, two_sockets_four_gpus());
  REQUIRE(plan.size() == 4 * 2 + 12 + 4 * 4);
  std::map<std::string, int> seen;
  for (const PlannedTransfer& t : plan) {
    ++seen[t.entity];
    CHECK(t.op == RdmaOp::write);
    CHECK(t.expected_gbps == 400);  // the port's rate, as a loopback's
    if (t.kind == "pair") continue;
    CHECK(t.from_device == t.to_device);
    CHECK(t.from_port == t.to_port);
  }
  for (const auto& [entity, count] : seen) {
    INFO(entity);
    CHECK(count == 1);
  }
  CHECK(mesh_cells(plan).size() == 4 * (2 + 4));
  for (int nic = 0; nic < 4; ++nic) {
    const std::string name = "mlx5_" + std::to_string(nic);
    for (int node : {0, 1}) CHECK(seen.count(name + "-numa" + std::to_string(node)) == 1);
    for (int gpu = 0; gpu < 4; ++gpu) CHECK(seen.count(name + "-gpu" + std::to_string(gpu)) == 1);
  }
  // Host cells bind their buffers; GPU cells name the GPU.
  CHECK(plan[0].entity == "mlx5_0-numa0");  // its own socket first
  CHECK(plan[0].host_numa_node == 0);
  CHECK(plan[1].entity == "mlx5_0-numa1");
  CHECK(plan[4].entity == "mlx5_2-numa1");  // mlx5_2 is on socket 1
  CHECK(plan[4].kind == "loopback");
  CHECK(plan[8].kind == "pair");
  CHECK(plan[20].entity == "mlx5_0-gpu0");  // its nearest GPU first
  CHECK(plan[20].gpu_index == 0);
  CHECK(plan[20].memory == RdmaMemory::gpu);
  CHECK(plan[20].kind == "gpudirect");
  CHECK(plan[24].entity == "mlx5_1-gpu1");
}

TEST_CASE("rdma mesh: a shift gives every NIC one cell; the shifts cover every cell once") {
  const auto devices = mesh_nics(4);
  const RdmaMesh mesh = two_sockets_four_gpus();
  std::multiset<std::pair<std::string, std::string>> covered;
  for (int k = 0; k < 4; ++k) {
    RdmaCoverage c;
    c.pairs.emplace();
    c.numa_shifts = std::vector<int>{};
    if (k < 2) c.numa_shifts->push_back(k);
    c.gpu_shifts = std::vector<int>{k};
    const auto plan = plan_transfers(devices, mesh, c);
    std::map<std::string, int> per_nic;
    for (const auto& cell : mesh_cells(plan)) {
      covered.insert(cell);
      ++per_nic[cell.first];
    }
    for (const auto& [nic, count] : per_nic) CHECK(count == (k < 2 ? 2 : 1));
    CHECK(per_nic.size() == 4);
  }
  CHECK(covered.size() == 4 * 6);
  CHECK(std::set<std::pair<std::string, std::string>>(covered.begin(), covered.end()).size() ==
        covered.size());
  // Shifts out of range are left out, not wrapped.
  RdmaCoverage wild;
  wild.pairs.emplace();
  wild.numa_shifts = std::vector<int>{-1, 2};
  wild.gpu_shifts = std::vector<int>{4, 99};
  CHECK(plan_transfers(devices, mesh, wild).empty());
}

TEST_CASE("rdma mesh: a host of one NUMA node keeps one loopback per NIC, unbound") {
  const auto devices = mesh_nics(2);
  for (const std::vector<int>& nodes : {std::vector<int>{}, std::vector<int>{0}}) {
    RdmaMesh mesh;
    mesh.numa_nodes = nodes;
    mesh.gpus = {0};
    CHECK(mesh.host_cells() == 1);
    const auto plan = plan_transfers(devices, mesh);
    REQUIRE(plan.size() == 2 + 2 + 2);
    CHECK(plan[0].entity == "mlx5_0");  // today's loopback: the figure keeps its name
    CHECK(plan[0].host_numa_node == -1);
    CHECK(plan[1].entity == "mlx5_1");
    CHECK(plan[4].entity == "mlx5_0-gpu0");
  }
}

TEST_CASE("rdma mesh: EFA devices read where they cannot write; with neither, no transfer") {
  auto devices = mesh_nics(3);
  RdmaMesh mesh = two_sockets_four_gpus();
  devices[1].rdma_write = false;  // p4d's EFA: RDMA read only
  devices[2].rdma_write = devices[2].rdma_read = false;
  const auto plan = plan_transfers(devices, mesh);
  CHECK(rdma_pair_endpoints(devices) == std::vector<std::string>{"mlx5_0", "mlx5_1"});
  CHECK(rdma_extra_loopbacks(devices) == 0);
  for (const PlannedTransfer& t : plan) {
    INFO(t.entity);
    CHECK(t.from_device != "mlx5_2");
    CHECK(t.to_device != "mlx5_2");
    // A pair uses what both ends offer: mlx5_1 takes no write.
    const bool reads = t.from_device == "mlx5_1" || t.to_device == "mlx5_1";
    CHECK(t.op == (reads ? RdmaOp::read : RdmaOp::write));
  }
  CHECK(plan.size() == 2 * 2 + 2 + 2 * 4);
  // The model counts only the NICs that move bytes.
  const CheckOptions none;
  RdmaWorkShape shape;
  shape.nics = static_cast<int>(rdma_pair_endpoints(devices).size());
  shape.numa_cells = mesh.host_cells();
  shape.gpu_cells = mesh.gpu_cells();
  const RdmaWork work = plan_rdma(mesh_request(Profile::standard, none), shape, {});
  CHECK(static_cast<int>(plan_transfers(devices, mesh, work.coverage()).size()) ==
        2 * 2 + 2 + 2 * 4);
  // A node whose every NIC has neither: nothing planned, nothing to fail.
  devices[0].rdma_write = devices[0].rdma_read = false;
  devices[1].rdma_read = false;
  CHECK(plan_transfers(devices, mesh).empty());
  CHECK(rdma_pair_endpoints(devices).empty());
}

TEST_CASE("rdma mesh: the standard and burnin profiles cover every cell every run") {
  const CheckOptions none;
  const auto devices = mesh_nics(4);
  const RdmaMesh mesh = two_sockets_four_gpus();
  RdmaWorkShape shape;
  shape.nics = 4;
  shape.numa_cells = 2;
  shape.gpu_cells = 4;
  for (Profile profile : {Profile::standard, Profile::burnin}) {
    for (std::uint64_t r : {0, 1, 5}) {
      const RdmaWork work = plan_rdma(mesh_request(profile, none, std::nullopt, r), shape,
                                      rdma_pair_endpoints(devices));
      CHECK(work.plan.rotation_steps == 1);
      CHECK(work.plan.covered.empty());
      CHECK_FALSE(work.plan.reduced);
      const auto plan = plan_transfers(devices, mesh, work.coverage());
      CHECK(mesh_cells(plan).size() == 4 * 6);
      CHECK(plan.size() == 4 * 6 + 12);
      const double transfer_s = profile == Profile::standard ? rdma_model::kStandardTransfer_s
                                                             : rdma_model::kBurninTransfer_s;
      CHECK(work.plan.expected_s ==
            Approx(rdma_model::kListing_s + 36 * (rdma_model::kTransferSetup_s + transfer_s) +
                   kCounterReadSeconds));
    }
  }
}

TEST_CASE("rdma mesh: quick covers every cell and pair over consecutive runs, each within budget") {
  const CheckOptions none;
  for (int nics : {1, 2, 4, 8}) {
    for (std::optional<double> seconds : {std::optional<double>{}, std::optional<double>{4.0}}) {
      const auto devices = mesh_nics(nics);
      const RdmaMesh mesh = two_sockets_four_gpus();
      RdmaWorkShape shape;
      shape.nics = nics;
      shape.numa_cells = 2;
      shape.gpu_cells = 4;
      const auto endpoints = rdma_pair_endpoints(devices);
      const RdmaWork first =
          plan_rdma(mesh_request(Profile::quick, none, seconds), shape, endpoints);
      const double budget = seconds.value_or(rdma_model::kQuickTarget_s + kCounterReadSeconds);
      std::set<std::pair<std::string, std::string>> cells;
      std::set<std::string> pairs;
      for (int r = 0; r < first.plan.rotation_steps; ++r) {
        INFO(nics << " NICs, " << seconds.value_or(0) << " s, run " << r);
        const RdmaWork work = plan_rdma(
            mesh_request(Profile::quick, none, seconds, static_cast<std::uint64_t>(r) + 40), shape,
            endpoints);
        CHECK(work.plan.rotation_steps == first.plan.rotation_steps);
        // What the run does fits its budget (at its floor where even that does not fit).
        CHECK(work.plan.expected_s <= std::max(budget, work.plan.floor_s) + 1e-9);
        const auto plan = plan_transfers(devices, mesh, work.coverage());
        for (const auto& cell : mesh_cells(plan)) cells.insert(cell);
        std::set<std::string> run_pairs;
        for (const PlannedTransfer& t : plan) {
          if (t.kind == "pair") run_pairs.insert(t.entity);
        }
        pairs.insert(run_pairs.begin(), run_pairs.end());
        // Every NIC writes into host memory and into a GPU every run.
        CHECK(mesh_cells(plan).size() >= static_cast<std::size_t>(2 * nics));
        // The plan names the pairs this run covers as the check's findings do (its cells by the
        // model's places: the check names them by the node's when it runs).
        for (const std::string& e : work.plan.covered) {
          if (e.find("-mlx5_") != std::string::npos) CHECK(run_pairs.count(e) == 1);
        }
      }
      INFO(nics << " NICs, " << seconds.value_or(0) << " s");
      CHECK(cells.size() == static_cast<std::size_t>(nics * 6));
      CHECK(pairs.size() == static_cast<std::size_t>(nics * (nics - 1)));
    }
  }
}

TEST_CASE("rdma mesh: the host's NUMA node list as the kernel writes it") {
  CHECK(parse_numa_node_list("0\n") == std::vector<int>{0});
  CHECK(parse_numa_node_list("0-1\n") == std::vector<int>{0, 1});
  CHECK(parse_numa_node_list("0,2-3") == std::vector<int>{0, 2, 3});
  CHECK(parse_numa_node_list("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  for (const char* bad : {"", "\n", "x", "0-", "-1", "1-0", "0,,1", "0,", "1,0", "0-1,1", "0 1",
                          "4096", "0-4096", "99999999999999999999"}) {
    INFO('"' << bad << '"');
    CHECK(parse_numa_node_list(bad).empty());
  }
}
