#pragma once
// The nccl check's arithmetic, kept apart from the check so tests drive it directly: sizes and
// iterations by profile, who is to blame for corrupted data, and the bus-bandwidth judgement.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checks/nccl/nccl_readings.hpp"
#include "preflight/check.hpp"
#include "preflight/faults.hpp"

namespace preflight {

// The nccl check's fault kinds: nccl-corrupt@gpu=I, nccl-slow:FACTOR@gpu=I.
std::vector<FaultKindSpec> nccl_fault_kinds();

struct NcclPlan {
  // Bytes per rank for all_gather, buffer bytes for all_reduce; ascending. The last one is
  // judged against the SKU.
  std::vector<std::size_t> sizes;
  int iterations = 0;  // timed iterations per size
};

// quick: 1 MiB and 256 MiB, 10 iterations; standard: 1, 16, 256 MiB and 1 GiB, 20 iterations;
// burnin: the same sizes, 200 iterations. Sizes whose all_gather buffers (send plus nranks
// receive slots) would take more than half of the smallest GPU's memory are left out, the
// smallest size never (smallest_memory_bytes 0: unknown, nothing left out).
NcclPlan nccl_plan(Profile profile, int nranks, std::uint64_t smallest_memory_bytes);

// Who is to blame for corrupted all_gather data. matrix[r][s]: elements from source rank s that
// arrived wrong at receiving rank r (n x n).
struct CorruptionBlame {
  bool everywhere = false;  // every source arrived corrupt at every receiver: the node
  // A source whose contribution arrived corrupt at every other receiver (at least two, or one
  // when the source's own copy was corrupt as well: with two GPUs that tells a bad sender from a
  // bad link).
  std::vector<int> senders;
  // A receiver (of three or more ranks) that got every other source's data corrupt.
  std::vector<int> receivers;
  // A rank whose own contribution arrived wrong in its own receive buffer, nothing else
  // explaining it: the copy within that GPU.
  std::vector<int> own;
  // (source, receiver) pairs with corruption that none of the above explains: the path between
  // the two.
  std::vector<std::pair<int, int>> links;
};
CorruptionBlame blame_corruption(const std::vector<std::vector<std::uint64_t>>& matrix);

enum class BusbwClass { ok, marginal, low };
// Against expected x fail_fraction (low) and expected x warn_fraction (marginal); expected <= 0
// judges nothing, nor does a fraction of 0.
BusbwClass classify_busbw(double busbw_gbps, double expected_gbps, double fail_fraction,
                          double warn_fraction);

// The check's judgement of its readings, a pure function of them and the thresholds: for each
// collective that measured every planned size, the busbw of its largest size against
// nccl.<op>_busbw_gbps x nccl.fail_fraction (NCCL_BUSBW_LOW) and x nccl.warn_fraction
// (NCCL_BUSBW_MARGINAL), on node. Corruption, failures and hangs are not judged here: the
// check reports them as observations.
std::vector<Finding> judge_nccl(const NcclReadings& readings, const Thresholds& thresholds);

// What one collective's readings prove whatever the thresholds, in the order run() reports
// them: NCCL_TIMEOUT, NCCL_ERROR or NCCL_INIT_FAILED (on node) for a collective that timed out
// or failed, then NCCL_DATA_MISMATCH for data that arrived wrong, on whom corrupt_from blames
// (blame_corruption: a sender, a receiver, a GPU's own copy, the pair, or the node; an
// all-reduce names the receivers with wrong sums). Without corrupt_from (a verdict of an older
// version) corrupted data is on node. `gpus`: the communicator's ranks (NcclReadings::gpus).
// `seconds`: the time the collective was given, which the timeout's message quotes (readings
// do not record it).
std::vector<Finding> nccl_observations(const NcclCollectiveReading& collective,
                                       const std::vector<std::string>& gpus,
                                       std::optional<double> seconds = std::nullopt);

std::string nccl_op_name(CollectiveOp op);   // "all-gather", as messages say it
std::string format_size(std::size_t bytes);  // "256 MiB", "1000 bytes"

}  // namespace preflight
