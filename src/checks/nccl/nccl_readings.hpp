#pragma once
// What the nccl check measured, as it records it in the verdict (CheckResult::readings) and as
// `preflight judge` and the corpus (tests/data/nodes/) hand it back: the GPUs of the
// communicator, and per collective the figures of every size and the verification's outcome.
// judge_nccl() (nccl_math.hpp) judges the bus bandwidth from them; corrupted data, failures and
// hangs are observations, made from them by nccl_observations() (nccl_math.hpp) in the run and
// in `preflight judge`. docs/checks/nccl.md, "Readings".
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/engine/collective_engine.hpp"

namespace preflight {

struct NcclSizeReading {
  std::size_t bytes = 0;  // all_gather: bytes per GPU; all_reduce: buffer bytes
  double seconds = 0;     // per iteration, the slowest GPU's; JSON "time_us"
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

struct NcclCollectiveReading {
  CollectiveOp op = CollectiveOp::all_gather;
  bool initialized = false;  // the communicators came up
  bool timed_out = false;
  std::string error;                              // what failed; empty when nothing did
  std::vector<NcclSizeReading> sizes;             // those measured, in the order run
  std::optional<std::uint64_t> corrupt_elements;  // elements that arrived wrong, all sizes
  // corrupt_from[r][s]: elements from the GPU of rank s that arrived wrong at the GPU of rank r,
  // all sizes (all-reduce: on the diagonal, as a sum cannot name its source): who is to blame.
  // Recorded only where some arrived wrong, ranks x ranks; a verdict of an older version has the
  // total alone.
  std::vector<std::vector<std::uint64_t>> corrupt_from;
  std::optional<bool> verified;  // every received element was checked
};

struct NcclReadings {
  std::vector<std::string> gpus;  // the communicator's ranks in order, "gpu0"
  // The sizes the plan asked for: a collective that measured fewer (it timed out or failed on
  // the way) is not judged on bandwidth. Empty: every collective counts as complete.
  std::vector<std::size_t> sizes_planned;
  int iterations = 0;                              // timed iterations per size; 0 when unknown
  std::vector<NcclCollectiveReading> collectives;  // in the order run
};

// "allgather" / "allreduce": the keys of the metrics and of the thresholds
// (nccl.allgather_busbw_gbps).
std::string nccl_op_key(CollectiveOp op);

void to_json(nlohmann::ordered_json& j, const NcclReadings& readings);
// Throws InvalidInput naming the field ("collectives.allgather.sizes[1].busbw_gbps: ...",
// "collectives.allgather.corrupt_from: expected 8 rows, one per GPU").
void from_json(const nlohmann::ordered_json& j, NcclReadings& readings);

}  // namespace preflight
