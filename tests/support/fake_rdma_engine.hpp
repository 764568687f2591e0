#pragma once
// An RdmaEngine with made-up devices and transfers, so the rdma check runs end to end without
// RDMA hardware: healthy NDR ports by default, and NICs that can be down, slow, without GID,
// on a starved PCIe link, failing to connect, without GPUDirect, corrupting or hung.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "preflight/engine/rdma_engine.hpp"
#include "support/gate.hpp"

namespace preflight::test {

inline RdmaDevice healthy_nic(int i, int nearest_gpu = -1) {
  RdmaDevice d;
  d.name = "mlx5_" + std::to_string(i);
  d.pci_bus_id = "0000:" + std::to_string(20 + i) + ":00.0";
  d.numa_node = i / 4;
  d.pcie_gen = 5;
  d.pcie_width = 16;
  d.pcie_max_gen = 5;
  d.pcie_max_width = 16;
  d.firmware = "28.39.1002";
  d.nearest_gpu = nearest_gpu;
  RdmaPort p;
  p.port_num = 1;
  p.state = "ACTIVE";
  p.phys_state = "LinkUp";
  p.active_speed = 128;  // NDR
  p.active_width = 2;    // 4x
  p.active_mtu = 4096;
  p.link_layer = "InfiniBand";
  p.usable_gid = true;
  p.gid_index = 0;
  d.ports = {p};
  return d;
}

class FakeRdmaEngine final : public RdmaEngine {
 public:
  RdmaInventory inv;
  double efficiency = 0.95;          // share of the port rate a healthy transfer reaches
  std::set<std::string> no_connect;  // devices whose queue pairs fail to connect
  std::set<std::string> no_gpudirect;
  std::set<std::string> corrupting;
  std::set<std::string> hanging;
  // What the engine was asked, in order. A copy taken under the lock: a transfer thread the
  // runner abandoned may still be adding to it.
  std::vector<RdmaTransferJob> jobs() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return jobs_;
  }
  // Takes the job's seconds of writes (or until cancelled), as the real engine does.
  bool takes_its_time = false;

  explicit FakeRdmaEngine(int nics = 4, bool with_gpus = false) {
    inv.library_loaded = true;
    for (int i = 0; i < nics; ++i) inv.devices.push_back(healthy_nic(i, with_gpus ? i : -1));
  }
  ~FakeRdmaEngine() override { release(); }
  void release() {
    {
      std::lock_guard<std::mutex> lock(gate_->mutex);
      gate_->open = true;
    }
    gate_->cv.notify_all();
  }

  RdmaInventory inventory() override { return inv; }

  RdmaTransferResult transfer(const RdmaTransferJob& job) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      jobs_.push_back(job);
    }
    if (takes_its_time) take_time(job.seconds, job.cancel);
    RdmaTransferResult r;
    const bool gpu = job.memory == RdmaMemory::gpu;
    r.registration = gpu ? "dma-buf" : "host";
    for (const std::string& name : {job.from_device, job.to_device}) {
      if (hanging.count(name) != 0) {
        const auto gate = gate_;
        std::unique_lock<std::mutex> lock(gate->mutex);
        gate->cv.wait(lock, [&] { return gate->open; });
        r.timed_out = true;
        return r;
      }
      if (no_connect.count(name) != 0) {
        r.error = "ibv_modify_qp(RTR): Connection timed out";
        return r;
      }
      if (gpu && no_gpudirect.count(name) != 0) {
        r.registration.clear();
        r.error = "ibv_reg_dmabuf_mr: Bad address; ibv_reg_mr (peer memory): Bad address";
        return r;
      }
    }
    r.connected = true;
    r.gbps = 400.0 * efficiency * job.slow_factor;
    r.bytes = static_cast<std::uint64_t>(r.gbps * 1e9 / 8 * job.seconds);
    r.verified = true;
    r.bad_bytes = corrupting.count(job.from_device) != 0 ? 7 : 0;
    return r;
  }

 private:
  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool open = false;
  };
  std::shared_ptr<Gate> gate_ = std::make_shared<Gate>();
  mutable std::mutex mutex_;
  std::vector<RdmaTransferJob> jobs_;
};

}  // namespace preflight::test
