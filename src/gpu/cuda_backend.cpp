// The real GPU backend: NVML (loaded with dlopen) for identity, health readings and telemetry,
// the CUDA runtime (linked statically) for the device list as CUDA numbers it and for the
// probe, cuBLAS for the gemm check's products (gemm_engine.cpp), the copies and memory pattern
// test of the bandwidth checks (bandwidth_engine.cpp), and NCCL collectives (nccl_engine.cpp).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gpu/cublas_gemm_engine.hpp"
#include "gpu/cuda_bandwidth_engine.hpp"
#include "gpu/cuda_check.hpp"
#include "gpu/cuda_driver.hpp"
#include "gpu/device_scope.hpp"
#include "gpu/nccl_version.hpp"
#include "gpu/nvml_events.hpp"
#include "gpu/nvml_library.hpp"
#include "gpu/pci_address.hpp"
#include "gpu/runtime_libraries.hpp"
#include "kernels/probe_kernel.hpp"
#include "preflight/engine/engines.hpp"

namespace preflight {
namespace {

constexpr std::size_t kProbeWords = (std::size_t{1} << 20) / sizeof(std::uint32_t);  // 1 MiB
constexpr auto kProbePollInterval = std::chrono::milliseconds(1);

std::string cuda_pci_bus_id(int ordinal, std::vector<std::string>& errors) {
  char text[32] = {};
  const cudaError_t status = cudaDeviceGetPCIBusId(text, static_cast<int>(sizeof(text)), ordinal);
  if (status != cudaSuccess) {
    errors.push_back(std::string("cudaDeviceGetPCIBusId: ") + cudaGetErrorString(status));
    cudaGetLastError();
    return {};
  }
  return text;
}

// A GPU that only CUDA sees: listed when NVML is unavailable, or when NVML does not list it.
GpuReading cuda_only_gpu(int index, int ordinal) {
  GpuReading gpu;
  gpu.index = index;
  gpu.cuda_ordinal = ordinal;
  gpu.pci_bus_id = cuda_pci_bus_id(ordinal, gpu.read_errors);
  cudaDeviceProp properties{};
  const cudaError_t status = cudaGetDeviceProperties(&properties, ordinal);
  if (status == cudaSuccess) {
    gpu.name = properties.name;
    gpu.memory_total_bytes = properties.totalGlobalMem;
  } else {
    gpu.read_errors.push_back(std::string("cudaGetDeviceProperties: ") +
                              cudaGetErrorString(status));
    cudaGetLastError();
  }
  return gpu;
}

void read_identity(const NvmlLibrary& nvml, unsigned index, GpuReading& gpu) {
  gpu.index = static_cast<int>(index);
  const auto device = nvml.device(index, gpu.read_errors);
  if (!device) return;
  gpu.name = nvml.name(*device, gpu.read_errors).value_or("");
  gpu.uuid = nvml.uuid(*device, gpu.read_errors).value_or("");
  gpu.serial = nvml.serial(*device, gpu.read_errors).value_or("");
  if (const auto pci = nvml.pci_info(*device, gpu.read_errors)) {
    gpu.pci_bus_id = pci->bus_id;
    gpu.pci_device_id = pci->device_id;
  }
  gpu.memory_total_bytes = nvml.memory_total_bytes(*device, gpu.read_errors).value_or(0);
}

void read_gpu_health(const NvmlLibrary& nvml, GpuReading& gpu) {
  if (gpu.index < 0) return;  // not an NVML GPU
  auto& errors = gpu.read_errors;
  // discover() already recorded a failure to get the handle; do not list it twice.
  std::vector<std::string> handle_errors;
  const auto device = nvml.device(static_cast<unsigned>(gpu.index), handle_errors);
  for (auto& error : handle_errors) {
    if (std::find(errors.begin(), errors.end(), error) == errors.end()) {
      errors.push_back(std::move(error));
    }
  }
  if (!device) return;
  using Ecc = NvmlLibrary::EccCounter;
  using Pcie = NvmlLibrary::PcieQuery;
  gpu.mig_enabled = nvml.mig_enabled(*device, errors);
  gpu.ecc_enabled = nvml.ecc_enabled(*device, errors);
  gpu.persistence_enabled = nvml.persistence_enabled(*device, errors);
  gpu.ecc_uncorrected_volatile = nvml.ecc_errors(*device, Ecc::kUncorrectedVolatile, errors);
  gpu.ecc_uncorrected_aggregate = nvml.ecc_errors(*device, Ecc::kUncorrectedAggregate, errors);
  gpu.ecc_corrected_volatile = nvml.ecc_errors(*device, Ecc::kCorrectedVolatile, errors);
  gpu.ecc_corrected_aggregate = nvml.ecc_errors(*device, Ecc::kCorrectedAggregate, errors);
  gpu.retired_pages_pending = nvml.retired_pages_pending(*device, errors);
  if (const auto remap = nvml.row_remap(*device, errors)) {
    gpu.row_remap_pending = remap->pending;
    gpu.row_remap_failed = remap->failed;
    gpu.remapped_rows_corrected = remap->corrected_rows;
    gpu.remapped_rows_uncorrected = remap->uncorrected_rows;
  }
  gpu.clock_event_reasons = nvml.clock_event_reasons(*device, errors);
  gpu.temperature_c = nvml.temperature_c(*device, errors);
  gpu.pcie_gen_current = nvml.pcie(*device, Pcie::kGenCurrent, errors);
  gpu.pcie_gen_max_link = nvml.pcie(*device, Pcie::kGenMaxLink, errors);
  gpu.pcie_gen_max_gpu = nvml.pcie(*device, Pcie::kGenMaxGpu, errors);
  gpu.pcie_width_current = nvml.pcie(*device, Pcie::kWidthCurrent, errors);
  gpu.pcie_width_max = nvml.pcie(*device, Pcie::kWidthMax, errors);
  if (const auto links = nvml.nvlink(*device, errors)) {
    gpu.nvlink_active = links->active;
    gpu.nvlink_supported = links->supported;
    // Peer bus ids stay in NVML's spelling, as pci_bus_id does (read_identity): the bandwidth
    // checks find a pair's links by comparing the two verbatim.
    if (auto topology = nvml.nvlink_topology(*device, links->active_links, errors)) {
      gpu.nvlink_peer_bus_ids = std::move(topology->peer_bus_ids);
      gpu.nvlink_switch_links = topology->switch_links;
    }
  }
  if (const auto processes = nvml.foreign_processes(*device, getpid(), errors)) {
    gpu.foreign_processes = processes->count;
    gpu.foreign_memory_mib = processes->memory_mib;
  }
  gpu.recovery_action = nvml.recovery_action(*device, errors);
}

// Gives each GPU the CUDA ordinal with the same PCI address. CUDA numbers devices fastest
// first by default, so its ordinals need not follow NVML's indices.
void map_cuda_ordinals(int cuda_count, std::vector<GpuReading>& gpus) {
  for (int ordinal = 0; ordinal < cuda_count; ++ordinal) {
    std::vector<std::string> errors;
    const auto bus_id = normalize_pci_bus_id(cuda_pci_bus_id(ordinal, errors));
    bool matched = false;
    for (GpuReading& gpu : gpus) {
      if (bus_id && normalize_pci_bus_id(gpu.pci_bus_id) == bus_id) {
        // MIG instances share their GPU's address: the GPU keeps the first ordinal.
        if (gpu.cuda_ordinal < 0) gpu.cuda_ordinal = ordinal;
        matched = true;
        break;
      }
    }
    if (!matched) {
      GpuReading gpu = cuda_only_gpu(-1, ordinal);
      gpu.read_errors.push_back("NVML does not list this GPU");
      gpus.push_back(std::move(gpu));
    }
  }
}

std::string format_seconds(SteadyClock::duration duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", std::chrono::duration<double>(duration).count());
  return text;
}

class CudaNvmlBackend final : public NodeBackend {
 public:
  NodeReading discover() override;
  void read_health(NodeReading& node) override;
  void probe(GpuReading& gpu, SteadyClock::time_point deadline) override;
  std::optional<GpuTelemetry> telemetry(const GpuReading& gpu) override;
  std::optional<GpuErrorCounters> error_counters(const GpuReading& gpu) override;
  std::shared_ptr<GpuEventSource> open_events(const NodeReading& node) override {
    const NvmlLibrary& library = nvml();
    if (!library.ok() || !node.nvml_loaded) return nullptr;
    return open_nvml_events(library, node);
  }

 private:
  // Loaded once and kept: NVML device handles stay valid only while it is initialized. Once,
  // because telemetry() is called from several threads.
  const NvmlLibrary& nvml() {
    std::call_once(nvml_once_, [this] {
      nvml_ = std::make_unique<NvmlLibrary>(NvmlLibrary::library_name_from_env());
    });
    return *nvml_;
  }

  std::once_flag nvml_once_;
  std::unique_ptr<NvmlLibrary> nvml_;
};

NodeReading CudaNvmlBackend::discover() {
  NodeReading node;
  const NvmlLibrary& library = nvml();
  node.nvml_loaded = library.ok();
  node.nvml_error = library.error();
  if (library.ok()) {
    std::vector<std::string> errors;
    node.driver_version = library.driver_version(errors).value_or("");
    if (const auto count = library.device_count(errors)) {
      for (unsigned index = 0; index < *count; ++index) {
        read_identity(library, index, node.gpus.emplace_back());
      }
    } else {
      node.nvml_loaded = false;  // without a device count NVML cannot tell anything
    }
    for (const std::string& error : errors) {
      node.nvml_error += (node.nvml_error.empty() ? "" : "; ") + error;
    }
  }

  // None of these calls creates a CUDA context: read_health() must still see only the
  // processes other than this one.
  const CudaBuildRequirement needs = cuda_build_requirement();
  node.cuda_driver_required = needs.driver_cuda_version;
  node.cuda_driver_branch_required = needs.driver_branch;
  cudaRuntimeGetVersion(&node.cuda_runtime_version);
  // The driver's own answer first: with a driver too old for this build, the runtime would only
  // say "insufficient", and nothing of it is called then.
  const CudaDriverProbe driver = probe_cuda_driver();
  int cuda_count = 0;
  if (driver.version > 0 && driver.version < needs.driver_cuda_version) {
    node.cuda_driver_version = driver.version;
    node.cuda_error = "the driver supports CUDA " + format_cuda_version(driver.version) +
                      ", this build needs CUDA " + format_cuda_version(needs.driver_cuda_version);
  } else {
    cudaDriverGetVersion(&node.cuda_driver_version);
    const cudaError_t status = cudaGetDeviceCount(&cuda_count);
    if (status != cudaSuccess) {
      node.cuda_error = cudaGetErrorString(status);
      cuda_count = 0;
    }
    cudaGetLastError();  // a failed call leaves its error behind for the next caller
  }
  node.cuda_device_count = cuda_count;
  if (node.nvml_loaded) {
    map_cuda_ordinals(cuda_count, node.gpus);
  } else {
    for (int ordinal = 0; ordinal < cuda_count; ++ordinal) {
      node.gpus.push_back(cuda_only_gpu(ordinal, ordinal));
    }
  }

  node.libraries = runtime_library_readings();
  for (const RuntimeLibraryReading& lib : node.libraries) {
    if (lib.name == "NCCL") node.nccl_version = lib.version;
  }
  return node;
}

void CudaNvmlBackend::read_health(NodeReading& node) {
  const NvmlLibrary& library = nvml();
  if (!library.ok() || !node.nvml_loaded) return;
  for (GpuReading& gpu : node.gpus) read_gpu_health(library, gpu);
}

// NVML is thread-safe, and the library is only read here.
std::optional<GpuTelemetry> CudaNvmlBackend::telemetry(const GpuReading& gpu) {
  const NvmlLibrary& library = nvml();
  if (!library.ok() || gpu.index < 0) return std::nullopt;
  // A sample has no place for errors: a failed reading is left unset, and the check judges the
  // gaps. Read errors are reported by read_health().
  std::vector<std::string> errors;
  const auto device = library.device(static_cast<unsigned>(gpu.index), errors);
  if (!device) return std::nullopt;
  GpuTelemetry sample;
  sample.sm_clock_mhz = library.sm_clock_mhz(*device, errors);
  sample.temperature_c = library.temperature_c(*device, errors);
  sample.power_w = library.power_w(*device, errors);
  sample.clock_event_reasons = library.clock_event_reasons(*device, errors);
  return sample;
}

std::optional<GpuErrorCounters> CudaNvmlBackend::error_counters(const GpuReading& gpu) {
  const NvmlLibrary& library = nvml();
  if (!library.ok() || gpu.index < 0) return std::nullopt;
  GpuErrorCounters c;
  const auto device = library.device(static_cast<unsigned>(gpu.index), c.problems);
  if (!device) return c;
  using Ecc = NvmlLibrary::EccCounter;
  c.ecc_corrected_volatile = library.ecc_errors(*device, Ecc::kCorrectedVolatile, c.problems);
  c.ecc_uncorrected_volatile = library.ecc_errors(*device, Ecc::kUncorrectedVolatile, c.problems);
  c.pcie_replay = library.pcie_replays(*device, c.problems);
  const NvmlLibrary::NvLinkErrors links = library.nvlink_errors(*device, c.problems);
  c.nvlink_replay = links.by_counter[0];
  c.nvlink_recovery = links.by_counter[1];
  c.nvlink_crc_flit = links.by_counter[2];
  c.nvlink_crc_data = links.by_counter[3];
  return c;
}

// The probe proper; throws CudaError. Returns the error text, empty when the GPU answered
// correctly.
std::string run_probe(GpuReading& gpu, SteadyClock::time_point deadline,
                      const std::string& timeout_error) {
  // First, so the resources below are freed with this GPU current.
  const DeviceScope device(gpu.cuda_ordinal);
  CudaStream stream;
  CudaEvent done;
  DeviceBuffer<std::uint32_t> device_words(kProbeWords);
  PinnedHostBuffer<std::uint32_t> host_words(kProbeWords);
  // Once work is queued, freeing memory or destroying the stream waits for it; on a hung GPU
  // that is forever, so on any failure from here on the resources are leaked instead.
  const auto abandon = [&] {
    host_words.release();
    device_words.release();
    done.release();
    stream.release();
  };
  // A seed that differs between runs and GPUs, and host words that are all wrong until the
  // copy lands, so neither stale memory nor a copy that never happened can pass.
  const auto seed = static_cast<std::uint32_t>(SteadyClock::now().time_since_epoch().count()) ^
                    (0x9E3779B9u * static_cast<std::uint32_t>(gpu.cuda_ordinal + 1));
  for (std::size_t i = 0; i < kProbeWords; ++i) host_words[i] = ~probe_pattern_word(i, seed);

  const auto launched = SteadyClock::now();
  try {
    PREFLIGHT_CUDA_CHECK(launch_probe_pattern(device_words.get(), kProbeWords, seed, stream.get()));
    PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(host_words.get(), device_words.get(),
                                         device_words.size_bytes(), cudaMemcpyDeviceToHost,
                                         stream.get()));
    PREFLIGHT_CUDA_CHECK(cudaEventRecord(done.get(), stream.get()));
    // Polled, never synchronized: a synchronize on a hung GPU never returns.
    for (;;) {
      const cudaError_t status = cudaEventQuery(done.get());
      if (status == cudaSuccess) break;
      if (status != cudaErrorNotReady) {
        throw CudaError(__FILE__, __LINE__, "cudaEventQuery(done.get())", status);
      }
      if (SteadyClock::now() >= deadline) {
        abandon();
        return timeout_error;
      }
      std::this_thread::sleep_for(kProbePollInterval);
    }
  } catch (const CudaError&) {
    abandon();
    throw;
  }
  gpu.probe_ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - launched).count();

  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kProbeWords; ++i) {
    if (host_words[i] != probe_pattern_word(i, seed)) ++wrong;
  }
  if (wrong != 0) {
    return std::to_string(wrong) + " of " + std::to_string(kProbeWords) +
           " words wrong after copy-back";
  }
  return {};
}

void CudaNvmlBackend::probe(GpuReading& gpu, SteadyClock::time_point deadline) {
  gpu.responsive = false;
  gpu.probe_error.clear();
  gpu.probe_ms = 0.0;
  gpu.probe_timed_out = false;
  if (gpu.cuda_ordinal < 0) {
    gpu.probe_error = "CUDA does not see this GPU";
    return;
  }
  const auto start = SteadyClock::now();
  const std::string timeout_error =
      "did not complete within " +
      format_seconds(std::max(deadline - start, SteadyClock::duration::zero())) + " s";
  if (start >= deadline) {
    gpu.probe_error = timeout_error;
    gpu.probe_timed_out = true;
    return;
  }
  try {
    gpu.probe_error = run_probe(gpu, deadline, timeout_error);
    gpu.responsive = gpu.probe_error.empty();
    gpu.probe_timed_out = gpu.probe_error == timeout_error;
  } catch (const CudaError& error) {
    gpu.probe_error = error.summary();
    cudaGetLastError();  // clear a non-sticky error so later calls do not report it again
  } catch (const std::exception& error) {
    gpu.probe_error = error.what();
  }
}

}  // namespace

std::unique_ptr<NodeBackend> make_system_node_backend() {
  return std::make_unique<CudaNvmlBackend>();
}

// Stateless: shared by the gemm check's per-GPU threads.
std::unique_ptr<GemmEngine> make_system_gemm_engine() {
  return std::make_unique<CudaGemmEngine>();
}

std::unique_ptr<BandwidthEngine> make_system_bandwidth_engine() {
  return std::make_unique<CudaBandwidthEngine>();
}

// Loads libnccl.so.2 on first use, not here: discovery must not pay for it.
std::unique_ptr<CollectiveEngine> make_system_collective_engine() {
  return make_nccl_collective_engine();
}

}  // namespace preflight
