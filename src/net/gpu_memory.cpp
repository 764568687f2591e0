// GPU buffers of a GPUDirect RDMA transfer: the NIC reads the source from and writes the
// destination into GPU memory directly.
//
// Registration prefers a dma-buf: the CUDA driver exports the buffer as a dma-buf file
// descriptor (cuMemGetHandleForAddressRange), which the kernel's RDMA stack can pin and map
// (ibv_reg_dmabuf_mr; Linux 5.12+, rdma-core 34+, open GPU kernel modules). Where that is not
// possible, plain ibv_reg_mr on the device pointer works when the nvidia-peermem module lets the
// RDMA stack resolve GPU addresses ("peer memory"). libcuda is not linked: the driver function
// comes from the runtime's cudaGetDriverEntryPoint.
#include <cerrno>
#include <cstring>
#include <new>

#include "net/transfer_memory.hpp"

#ifdef PREFLIGHT_NET_HAVE_CUDA
#include <cuda.h>  // types and constants only
#include <unistd.h>

#include <thread>

#include "gpu/cuda_check.hpp"
#include "gpu/device_scope.hpp"
#endif

namespace preflight {

#ifndef PREFLIGHT_NET_HAVE_CUDA

std::unique_ptr<TransferMemory> make_gpu_memory(int /*cuda_ordinal*/, std::size_t /*bytes*/,
                                                std::string& error) {
  error = "built without CUDA: GPUDirect not available";
  return nullptr;
}

#else

namespace {

// cuMemGetHandleForAddressRange wants the range aligned to the host's page size; 2 MiB (the
// GPU's large page) covers every host page size.
constexpr std::size_t kAlignment = std::size_t{2} << 20;

using GetHandleFn = CUresult (*)(void* handle, CUdeviceptr address, std::size_t size,
                                 CUmemRangeHandleType type, unsigned long long flags);
using ErrorNameFn = CUresult (*)(CUresult error, const char** name);

// A driver API function through the runtime (which loads libcuda itself); null where the driver
// lacks it.
void* driver_function(const char* name) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
  // The ABI of the symbol as of CUDA 12.0; cuMemGetHandleForAddressRange exists since 11.7.
  const cudaError_t status =
      cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found);
#else
  const cudaError_t status = cudaGetDriverEntryPoint(name, &function, cudaEnableDefault, &found);
#endif
  if (status != cudaSuccess || found != cudaDriverEntryPointSuccess) return nullptr;
  return function;
}

std::string cuda_text(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

// Polls `event` until it completes. Never a synchronize: that would not return on a hung GPU.
MemoryStep wait_event(cudaEvent_t event, NetClock::time_point deadline, const char* what) {
  for (;;) {
    const cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess) return {};
    if (status != cudaErrorNotReady) return {std::string(what) + ": " + cuda_text(status)};
    if (NetClock::now() >= deadline) return {"", true};
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

class GpuMemory final : public TransferMemory {
 public:
  GpuMemory(int device, std::size_t bytes)
      : device_(device),
        size_((bytes + kAlignment - 1) / kAlignment * kAlignment),
        // One alignment unit of slack, so an aligned range of size_ fits whatever cudaMalloc
        // returns.
        source_alloc_(size_ + kAlignment),
        destination_alloc_(size_ + kAlignment),
        pattern_(size_),
        readback_(size_) {
    source_ = align(source_alloc_.get());
    destination_ = align(destination_alloc_.get());
  }

  std::size_t size() const override { return size_; }

  MemoryStep prepare(std::uint64_t seed, NetClock::time_point deadline) override {
    fill_pattern(pattern_.get(), size_, seed);
    DeviceScope current;
    try {
      current.set(device_);
      PREFLIGHT_CUDA_CHECK(
          cudaMemcpyAsync(source_, pattern_.get(), size_, cudaMemcpyHostToDevice, stream_.get()));
      PREFLIGHT_CUDA_CHECK(cudaMemsetAsync(destination_, 0, size_, stream_.get()));
      PREFLIGHT_CUDA_CHECK(cudaEventRecord(event_.get(), stream_.get()));
    } catch (const CudaError& e) {
      return {e.summary()};
    }
    // Complete before the first write: the NIC's reads and writes are not ordered with the
    // stream.
    return wait_event(event_.get(), deadline, "filling the GPU buffers");
  }

  MemoryStep register_with(const VerbsLibrary& library, ibv_pd* source_pd, ibv_pd* destination_pd,
                           int access, VerbsMr& source_mr, VerbsMr& destination_mr) override {
    std::string dmabuf_problem;
    const auto get_handle =
        reinterpret_cast<GetHandleFn>(driver_function("cuMemGetHandleForAddressRange"));
    if (!library.has_dmabuf()) {
      dmabuf_problem = "libibverbs has no ibv_reg_dmabuf_mr";
    } else if (get_handle == nullptr) {
      dmabuf_problem = "the CUDA driver has no cuMemGetHandleForAddressRange";
    } else {
      source_mr = register_dmabuf(library, get_handle, source_pd, source_, access, "GPU source",
                                  dmabuf_problem);
      if (source_mr) {
        destination_mr = register_dmabuf(library, get_handle, destination_pd, destination_, access,
                                         "GPU destination", dmabuf_problem);
      }
      if (source_mr && destination_mr) {
        registration_ = "dma-buf";
        return {};
      }
      destination_mr.reset();
      source_mr.reset();
    }

    // Peer memory: the RDMA stack resolves the device pointers through nvidia-peermem.
    const auto dereg = library.api().dereg_mr;
    const std::string why = " (dma-buf: " + dmabuf_problem + "; peer memory needs nvidia-peermem)";
    errno = 0;
    source_mr = VerbsMr(library.reg_mr(source_pd, source_, size_, access), dereg, "ibv_dereg_mr");
    if (!source_mr) return {verbs_failure("ibv_reg_mr", "GPU source", errno) + why};
    errno = 0;
    destination_mr =
        VerbsMr(library.reg_mr(destination_pd, destination_, size_, access), dereg, "ibv_dereg_mr");
    if (!destination_mr) return {verbs_failure("ibv_reg_mr", "GPU destination", errno) + why};
    registration_ = "peer-memory";
    return {};
  }

  const std::string& registration() const override { return registration_; }
  // Both registrations use the device pointer as the iova.
  std::uint64_t source_address() const override {
    return reinterpret_cast<std::uintptr_t>(source_);
  }
  std::uint64_t destination_address() const override {
    return reinterpret_cast<std::uintptr_t>(destination_);
  }

  MemoryStep compare(std::size_t bytes, NetClock::time_point deadline,
                     std::uint64_t& bad_bytes) override {
    DeviceScope current;
    try {
      current.set(device_);
      PREFLIGHT_CUDA_CHECK(cudaMemcpyAsync(readback_.get(), destination_, bytes,
                                           cudaMemcpyDeviceToHost, stream_.get()));
      PREFLIGHT_CUDA_CHECK(cudaEventRecord(event_.get(), stream_.get()));
    } catch (const CudaError& e) {
      return {e.summary()};
    }
    MemoryStep step = wait_event(event_.get(), deadline, "reading the GPU destination back");
    if (step.ok()) bad_bytes = count_differences(readback_.get(), pattern_.get(), bytes);
    return step;
  }

  void abandon() override {
    source_alloc_.release();
    destination_alloc_.release();
    pattern_.release();
    readback_.release();
    stream_.release();
    event_.release();
  }

 private:
  static void* align(void* pointer) {
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    return reinterpret_cast<void*>((address + kAlignment - 1) / kAlignment * kAlignment);
  }

  // A memory region over a dma-buf of `buffer`; empty, with `problem` set, when either step
  // fails.
  VerbsMr register_dmabuf(const VerbsLibrary& library, GetHandleFn get_handle, ibv_pd* pd,
                          void* buffer, int access, const char* what, std::string& problem) {
    int fd = -1;
    const CUresult status = get_handle(&fd, reinterpret_cast<CUdeviceptr>(buffer), size_,
                                       CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (status != CUDA_SUCCESS) {
      problem = "cuMemGetHandleForAddressRange: " + driver_error_name(status);
      return {};
    }
    errno = 0;
    ibv_mr* mr = library.api().reg_dmabuf_mr(pd, 0, size_, reinterpret_cast<std::uintptr_t>(buffer),
                                             fd, access);
    const int code = errno;
    // The region holds its own reference to the dma-buf.
    close(fd);
    if (mr == nullptr) {
      problem = verbs_failure("ibv_reg_dmabuf_mr", what, code);
      return {};
    }
    return VerbsMr(mr, library.api().dereg_mr, "ibv_dereg_mr");
  }

  static std::string driver_error_name(CUresult status) {
    const auto error_name = reinterpret_cast<ErrorNameFn>(driver_function("cuGetErrorName"));
    const char* name = nullptr;
    if (error_name != nullptr && error_name(status, &name) == CUDA_SUCCESS && name != nullptr) {
      return name;
    }
    return "CUresult " + std::to_string(static_cast<int>(status));
  }

  int device_;
  std::size_t size_;
  DeviceBuffer<unsigned char> source_alloc_;
  DeviceBuffer<unsigned char> destination_alloc_;
  // The source's pattern stays here: the destination is compared with it.
  PinnedHostBuffer<unsigned char> pattern_;
  PinnedHostBuffer<unsigned char> readback_;
  CudaStream stream_;
  CudaEvent event_;
  void* source_ = nullptr;
  void* destination_ = nullptr;
  std::string registration_;
};

}  // namespace

std::unique_ptr<TransferMemory> make_gpu_memory(int cuda_ordinal, std::size_t bytes,
                                                std::string& error) {
  try {
    // Current while the allocations, stream and event below are made: they belong to this GPU.
    const DeviceScope device(cuda_ordinal);
    return std::make_unique<GpuMemory>(cuda_ordinal, bytes);
  } catch (const CudaError& e) {
    error = e.summary();
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  }
  return nullptr;
}

#endif  // PREFLIGHT_NET_HAVE_CUDA

}  // namespace preflight
