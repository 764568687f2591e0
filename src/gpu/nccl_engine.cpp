// The NCCL collective engine (include/preflight/engine/collective_engine.hpp): non-blocking
// communicators for every local GPU, created inside one ncclGroupStart/End and polled with
// ncclCommGetAsyncError against the deadline; collectives on one stream per GPU, timed with
// events and polled with cudaEventQuery (never a synchronize: a synchronize on a hung GPU never
// returns); every received element verified on the device per source slot. At the deadline
// every communicator is aborted (ncclCommAbort) and GPU memory that may still be in use is
// leaked, never freed (freeing would wait for the hung work). The steps are in
// nccl_session.cpp; libnccl.so.2 is loaded with dlopen (nccl_library.cpp).
#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/cuda_check.hpp"
#include "gpu/nccl_library.hpp"
#include "gpu/nccl_session.hpp"
#include "preflight/engine/collective_engine.hpp"

namespace preflight {
namespace {

using namespace nccl_detail;

class NcclCollectiveEngine final : public CollectiveEngine {
 public:
  std::string library_problem() override { return library().error(); }

  std::string unavailable_reason() override {
    const NcclLibrary& lib = library();
    if (!lib.ok()) return lib.error();
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    cudaGetLastError();
    if (status != cudaSuccess) return std::string("CUDA: ") + cudaGetErrorString(status);
    if (count == 0) return "CUDA: no GPU visible";
    return {};
  }

  std::vector<char> unique_id(std::string& error) override {
    const NcclLibrary& lib = library();
    if (!lib.ok()) {
      error = lib.error();
      return {};
    }
    ncclUniqueId id;
    const ncclResult_t status = lib.api().get_unique_id(&id);
    if (status != ncclSuccess) {
      error = lib.describe("ncclGetUniqueId", status, nullptr);
      return {};
    }
    return std::vector<char>(id.internal, id.internal + NCCL_UNIQUE_ID_BYTES);
  }

  CollectiveResult run(const CollectiveJob& job) override;

 private:
  // Loaded on first use, once: the check and the fleet may ask from threads of their own.
  const NcclLibrary& library() {
    std::call_once(once_, [this] { library_ = std::make_unique<NcclLibrary>(); });
    return *library_;
  }

  std::once_flag once_;
  std::unique_ptr<NcclLibrary> library_;
};

CollectiveResult NcclCollectiveEngine::run(const CollectiveJob& job) {
  CollectiveResult out;
  out.corrupt_from.assign(
      job.cuda_ordinals.size(),
      std::vector<std::uint64_t>(static_cast<std::size_t>(std::max(job.nranks, 0)), 0));
  out.error = invalid_collective_job(job);
  if (!out.error.empty()) return out;
  const NcclLibrary& lib = library();
  if (!lib.ok()) {
    out.error = lib.error();
    return out;
  }
  CollectiveSession session(lib, job, out);
  bool abandoned = false;
  try {
    session.setup();
    session.init();
    out.initialized = true;
    if (job.hang) {
      // The drill: nothing is queued, so after the abort the memory is freed as usual.
      session.hold_until_deadline();
      out.timed_out = true;
      session.abort_comms();
      return out;
    }
    for (std::size_t bytes : job.sizes) session.measure(bytes);
    out.verified = true;
    session.finalize();
  } catch (const TimedOut&) {
    out.timed_out = true;
    session.abort_comms();
    session.abandon();  // the GPU may never finish: leak, never free
    abandoned = true;
  } catch (const Cancelled&) {
    out.error = "cancelled";
    session.abort_comms();
    session.abandon();  // work is queued, and the caller is not waiting for it
    abandoned = true;
  } catch (const NcclFailure& failure) {
    out.error = failure.text;
  } catch (const CudaError& error) {
    out.error = error.summary();
  } catch (const std::exception& error) {
    out.error = error.what();
  } catch (...) {
    out.error = "unknown error";
  }
  if (!abandoned && !out.error.empty()) {
    session.abort_comms();  // a communicator after an error cannot be finalized reliably
    session.dispose_after_error();
  }
  return out;
}

}  // namespace

std::unique_ptr<CollectiveEngine> make_nccl_collective_engine() {
  return std::make_unique<NcclCollectiveEngine>();
}

}  // namespace preflight
