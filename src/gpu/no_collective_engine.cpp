// The collective engine of a build that cannot run NCCL: without CUDA (-DPREFLIGHT_WITH_CUDA=OFF)
// or without nccl.h at build time. The nccl check skips with the reason, and the fleet's NCCL
// transport reports it.
#include <memory>
#include <string>
#include <vector>

#include "preflight/engine/collective_engine.hpp"

namespace preflight {
namespace {

#ifdef PREFLIGHT_CUDA_WITHOUT_NCCL
constexpr const char* kReason = "built without NCCL (nccl.h was not found at build time)";
#else
constexpr const char* kReason = "built without CUDA support";
#endif

class NoCollectiveEngine final : public CollectiveEngine {
 public:
  std::string unavailable_reason() override { return kReason; }
  std::vector<char> unique_id(std::string& error) override {
    error = kReason;
    return {};
  }
  CollectiveResult run(const CollectiveJob& job) override {
    CollectiveResult out;
    out.corrupt_from.assign(job.cuda_ordinals.size(),
                            std::vector<std::uint64_t>(job.nranks > 0 ? job.nranks : 0, 0));
    out.error = kReason;
    return out;
  }
};

}  // namespace

std::unique_ptr<CollectiveEngine> make_nccl_collective_engine() {
  return std::make_unique<NoCollectiveEngine>();
}

}  // namespace preflight
