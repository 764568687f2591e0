#pragma once
// A NodeBackend that returns readings made up by the test, so checks and the runner run end to
// end without a GPU.
#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "preflight/engine/engines.hpp"

namespace preflight::test {

// One healthy GPU of the given model with every reading present and nominal.
inline GpuReading healthy_gpu(int index, std::uint16_t device_id = 0x2330,
                              std::string name = "NVIDIA H100 80GB HBM3") {
  GpuReading g;
  g.index = index;
  g.cuda_ordinal = index;
  g.name = std::move(name);
  g.uuid = "GPU-0000000" + std::to_string(index);
  g.pci_bus_id = "00000000:" + std::to_string(10 + index) + ":00.0";
  g.serial = "165000000000" + std::to_string(index);
  g.pci_device_id = device_id;
  g.memory_total_bytes = 80ull << 30;
  g.mig_enabled = false;
  g.ecc_enabled = true;
  g.persistence_enabled = true;
  g.ecc_uncorrected_volatile = 0;
  g.ecc_uncorrected_aggregate = 0;
  g.ecc_corrected_volatile = 0;
  g.retired_pages_pending = false;
  g.row_remap_pending = false;
  g.row_remap_failed = false;
  g.clock_event_reasons = clock_event::kGpuIdle;
  g.temperature_c = 35;
  g.pcie_gen_current = 1;  // idle GPUs down-train; not judged
  g.pcie_gen_max_link = 5;
  g.pcie_gen_max_gpu = 5;
  g.pcie_width_current = 16;
  g.pcie_width_max = 16;
  g.nvlink_active = 18;
  g.nvlink_supported = 18;
  g.foreign_processes = 0;
  g.foreign_memory_mib = 0;
  return g;
}

inline NodeReading healthy_node(int gpus) {
  NodeReading n;
  n.nvml_loaded = true;
  n.driver_version = "580.65.06";
  n.cuda_driver_version = 13000;
  n.cuda_runtime_version = 13000;
  n.cuda_device_count = gpus;
  n.nccl_version = "2.28.3";
  for (int i = 0; i < gpus; ++i) n.gpus.push_back(healthy_gpu(i));
  return n;
}

// A 4-GPU board without NVSwitch: every pair joined by 6 direct NVLinks (the nvlink check holds
// each pair to its direct links).
inline NodeReading direct_mesh_node() {
  NodeReading node = healthy_node(4);
  for (auto& g : node.gpus) {
    g.nvlink_switch_links = 0;
    g.nvlink_peer_bus_ids.clear();
    for (const auto& peer : node.gpus) {
      if (peer.index == g.index) continue;
      for (int link = 0; link < 6; ++link) g.nvlink_peer_bus_ids.push_back(peer.pci_bus_id);
    }
  }
  return node;
}

inline NodeReading no_gpu_node() {
  NodeReading n;
  n.nvml_error = "libnvidia-ml.so.1: cannot open shared object file: No such file or directory";
  n.cuda_error = "CUDA driver version is insufficient for CUDA runtime version";
  n.cuda_runtime_version = 13000;
  return n;
}

// The driver's event stream as a test scripts it: the events the Nth drain returns (counting from
// 1); every other drain returns none.
class FakeEventSource final : public GpuEventSource {
 public:
  std::map<int, std::vector<GpuEvent>> on_drain;
  std::vector<GpuEvent> drain(std::chrono::milliseconds) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = on_drain.find(++drains_);
    return it == on_drain.end() ? std::vector<GpuEvent>{} : it->second;
  }
  int drains() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return drains_;
  }

 private:
  mutable std::mutex mutex_;
  int drains_ = 0;
};

class FakeBackend final : public NodeBackend {
 public:
  explicit FakeBackend(NodeReading node) : node_(std::move(node)) {}
  // discover() blocks forever, like a driver that does not answer.
  bool hang_discovery = false;
  std::atomic<int> discoveries{0};  // discover() calls begun: a test can wait for one to start
  std::atomic<int> probes{0};
  int hang_probe_gpu = -1;  // probe() of this GPU index blocks until release_probes()
  // The engines engines() hands the runner with this backend; null: their checks skip.
  RdmaEngine* rdma = nullptr;
  BandwidthEngine* bandwidth = nullptr;
  GemmEngine* gemm = nullptr;
  CollectiveEngine* collective = nullptr;
  std::optional<GpuTelemetry> telemetry_sample;  // what telemetry() returns for every GPU
  std::atomic<int> telemetry_calls{0};
  // What error_counters() returns for a GPU: none listed reads as a backend without NVML. Each
  // call first adds the GPU's counter_steps to every counter that is set there, as a GPU whose
  // errors climb while it is loaded.
  std::map<int, GpuErrorCounters> error_counter_samples;
  std::map<int, GpuErrorCounters> counter_steps;
  // What open_events() returns; null: a driver without an event stream.
  std::shared_ptr<FakeEventSource> events;

  NodeReading discover() override {
    ++discoveries;
    if (hang_discovery) {
      std::mutex m;
      std::condition_variable cv;
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [] { return false; });
    }
    NodeReading identity = node_;
    return identity;
  }
  void read_health(NodeReading& node) override {
    for (auto& g : node.gpus) {
      for (const auto& src : node_.gpus) {
        if (src.index == g.index) g = src;
      }
    }
  }
  void probe(GpuReading& gpu, SteadyClock::time_point) override {
    ++probes;
    if (gpu.index == hang_probe_gpu) {
      // Like a driver call that never returns. The gate outlives this backend: the blocked
      // thread holds it, and touches nothing else once released.
      const auto gate = probe_gate_;
      std::unique_lock<std::mutex> lock(gate->mutex);
      gate->cv.wait(lock, [&] { return gate->open; });
      return;
    }
    gpu.responsive = true;
    gpu.probe_ms = 1.5;
  }
  std::optional<GpuTelemetry> telemetry(const GpuReading&) override {
    ++telemetry_calls;
    return telemetry_sample;
  }
  std::shared_ptr<GpuEventSource> open_events(const NodeReading&) override { return events; }
  std::optional<GpuErrorCounters> error_counters(const GpuReading& gpu) override {
    std::lock_guard<std::mutex> lock(counters_mutex_);
    const auto it = error_counter_samples.find(gpu.index);
    if (it == error_counter_samples.end()) return std::nullopt;
    const auto step = counter_steps.find(gpu.index);
    if (step != counter_steps.end()) {
      GpuErrorCounters& c = it->second;
      const GpuErrorCounters& s = step->second;
      for (auto [value, by] : {std::pair{&c.ecc_corrected_volatile, &s.ecc_corrected_volatile},
                               std::pair{&c.ecc_uncorrected_volatile, &s.ecc_uncorrected_volatile},
                               std::pair{&c.pcie_replay, &s.pcie_replay},
                               std::pair{&c.nvlink_replay, &s.nvlink_replay},
                               std::pair{&c.nvlink_recovery, &s.nvlink_recovery},
                               std::pair{&c.nvlink_crc_flit, &s.nvlink_crc_flit},
                               std::pair{&c.nvlink_crc_data, &s.nvlink_crc_data}}) {
        if (*value && *by) **value += **by;
      }
    }
    return it->second;
  }
  // This backend and the engines set above, as the app assembles the real ones.
  Engines engines() { return {this, gemm, bandwidth, collective, rdma}; }
  void release_probes() {
    {
      std::lock_guard<std::mutex> lock(probe_gate_->mutex);
      probe_gate_->open = true;
    }
    probe_gate_->cv.notify_all();
  }
  ~FakeBackend() override { release_probes(); }

 private:
  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool open = false;
  };
  std::shared_ptr<Gate> probe_gate_ = std::make_shared<Gate>();
  NodeReading node_;
  std::mutex counters_mutex_;
};

}  // namespace preflight::test
