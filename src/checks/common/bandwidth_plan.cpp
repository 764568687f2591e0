// The bandwidth checks' time models (bandwidth_plan.hpp). Model = fixed setup seconds +
// per-measurement seconds x count + bytes / bandwidth, with the bandwidths from the SKU's
// thresholds. Every constant says where it comes from; "assumed" ones are to be measured by the
// GPU acceptance kit (docs/benchmarks.md) and corrected here.
#include "checks/common/bandwidth_plan.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>

#include "checks/common/bandwidth_math.hpp"
#include "checks/common/entities.hpp"
#include "model/byte_units.hpp"

namespace preflight {

namespace {

// --- Seconds that are not copies.
// A check's start: its thread, the first allocations, the NVML health reading (pcie, nvlink).
constexpr double kCheckSetup_s = 0.1;  // assumed
// NVML's PCIe link and NVLink queries of one GPU (read_health: pcie and nvlink).
constexpr double kHealthReadPerGpu_s = 0.02;  // assumed
// One copy measurement apart from its copies and host buffers: its thread, stream and events,
// peer access enabled, the latch, the device buffers allocated and filled, the verification
// kernel, and the frees (cudaFree waits for the device).
constexpr double kMeasurementSetup_s = 0.05;  // assumed
// A pinned host buffer: pinned (cudaHostAlloc), its pattern written or checked word by word on
// the CPU, unpinned: about 35 ms per 64 MiB.
constexpr double kHostBufferGBps = 2.0;  // assumed
constexpr int kWarmupCopies = 1;         // CopyMeasurement::warmups
// One peer access query (cudaDeviceCanAccessPeer, on a thread of its own).
constexpr double kPeerQuery_s = 0.002;  // assumed
// cudaMalloc / cudaFree of device memory (copy buffers, the pattern region): mapping its pages.
constexpr double kDeviceMapGBps = 400.0;  // assumed: ~0.2 s for most of an 80 GB GPU

// --- Bandwidths.
// Host copies reach this share of the link's raw rate: 55.1-55.4 GB/s of Gen5 x16's 63.0, and
// 24.8-26 of Gen4's 31.5, in published nvbandwidth runs (docs/checks/bandwidth.md).
constexpr double kPcieCopyEfficiency = 0.85;
// The link when the SKU names none (generic thresholds): Gen4 x16, slower than every SKU of the
// table, so the model errs long.
constexpr int kFallbackPcieGen = 4;
constexpr int kFallbackPcieWidth = 16;
// Every GPU copying to or from host memory at once shares what host memory delivers.
constexpr double kHostMemoryGBps = 200.0;  // assumed: a two-socket DDR5 host
// Peer copies reach this share of nvlink.expected_gbps (~380 of 450 GB/s on H100 SXM). Without
// NVLink (expected 0) they go over PCIe, at the PCIe rate above.
constexpr double kNvlinkCopyEfficiency = 0.85;  // assumed, as for PCIe
// Device-local copies: BabelStream Copy reaches 2.90 TB/s of H100 SXM's 3350 GB/s (0.87,
// docs/checks/bandwidth.md); a copy's bytes are read and written, so it copies half of that.
constexpr double kHbmCopyEfficiency = 0.87;
// The pattern kernels write the region, then read and compare it.
constexpr double kPatternEfficiency = 0.8;  // assumed
// hbm.peak_gbps unknown (generic): the slowest SKU of the table (A100 40GB, 1555 GB/s).
constexpr double kFallbackHbmGBps = 1555.0;
// The pattern test's stream, events and chunk report; and per pass the host's wait for the
// mismatch counter.
constexpr double kPatternSetup_s = 0.02;          // assumed
constexpr double kPatternPassOverhead_s = 0.002;  // assumed

// --- Work.
// nvlink's quick budget on 8 x H100 (issue 16's table): the quick profile covers as many
// shifts as fit, every pair on 2 to 4 GPUs.
constexpr double kQuickNvlinkTarget_s = 4.0;
// The floors: the least that still gives a median and a verdict.
constexpr MeasurementShape kCopyFloor{64 * kMiB, 4, 2};      // pcie, nvlink
constexpr MeasurementShape kHbmCopyFloor{512 * kMiB, 8, 2};  // hbm
constexpr std::uint64_t kPatternFloorBytes = kGiB;
// Burn-in's pattern passes as modelled; it repeats more while its time lasts.
constexpr int kBurninPatternPasses = 2;
// Burn-in stresses the memory as long as it stresses the tensor cores: the gemm check's burn-in
// product seconds (gemm_options.cpp, 600 s, the hbm check's budget before the time model). As
// many passes as fit are its whole work, so the planner gives it that time.
constexpr double kBurninStress_s = 600.0;
constexpr int kMostPasses = 100000;
// Left out of the GPU's memory before the pattern test's share is taken: this process's CUDA
// context and the copy buffers.
constexpr std::uint64_t kContextReserve = std::uint64_t{3} << 29;  // 1.5 GiB
constexpr std::uint64_t kFallbackGpuMemory = 80 * kGiB;            // H100 80GB

double threshold(const WorkRequest& r, const char* key, double fallback) {
  const double v = r.thresholds != nullptr ? r.thresholds->get(key) : 0.0;
  return v > 0 ? v : fallback;
}

double pcie_copy_gbps(const WorkRequest& r) {
  const int gen = static_cast<int>(threshold(r, "inventory.expected_pcie_gen", kFallbackPcieGen));
  const int width =
      static_cast<int>(threshold(r, "inventory.expected_pcie_width", kFallbackPcieWidth));
  const double link = pcie_link_gbps(gen, width);
  return kPcieCopyEfficiency *
         (link > 0 ? link : pcie_link_gbps(kFallbackPcieGen, kFallbackPcieWidth));
}

double bytes_s(double bytes, double gbps) {
  return bytes / (gbps * 1e9);
}

// One measurement with this many pinned host and device buffers, every stream copying at
// `stream_gbps` (the streams copy at the same time).
double measurement_s(const MeasurementShape& s, int host_buffers, int device_buffers,
                     double stream_gbps) {
  const double bytes = static_cast<double>(s.bytes);
  const int copies = s.samples * s.copies_per_sample + kWarmupCopies;
  return kMeasurementSetup_s + host_buffers * bytes_s(bytes, kHostBufferGBps) +
         device_buffers * bytes_s(bytes, kDeviceMapGBps) + copies * bytes_s(bytes, stream_gbps);
}

// Every shape from `whole` down to `floor` (bytes, copies per sample, samples), most work first.
std::vector<MeasurementShape> shape_ladder(const MeasurementShape& whole,
                                           const MeasurementShape& floor) {
  std::vector<MeasurementShape> out;
  std::set<std::size_t> sizes = {whole.bytes, std::min(whole.bytes, floor.bytes)};
  std::set<int> copies = {whole.copies_per_sample,
                          std::min(whole.copies_per_sample, floor.copies_per_sample)};
  for (auto b = sizes.rbegin(); b != sizes.rend(); ++b) {
    for (auto c = copies.rbegin(); c != copies.rend(); ++c) {
      for (int s = whole.samples; s >= std::min(whole.samples, floor.samples); --s) {
        out.push_back({*b, *c, s});
      }
    }
  }
  return out;
}

// The shape of the ladder with the most modelled seconds within `seconds`; the ladder's least
// when none fits.
template <class Cost>
MeasurementShape fitting_shape(const std::vector<MeasurementShape>& ladder, double seconds,
                               Cost cost) {
  const MeasurementShape* best = nullptr;
  const MeasurementShape* least = &ladder.front();
  for (const auto& s : ladder) {
    const double c = cost(s);
    if (c < cost(*least)) least = &s;
    if (c <= seconds && (best == nullptr || c > cost(*best))) best = &s;
  }
  return best != nullptr ? *best : *least;
}

bool same(const MeasurementShape& a, const MeasurementShape& b) {
  return a.bytes == b.bytes && a.copies_per_sample == b.copies_per_sample && a.samples == b.samples;
}

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes / kMiB) + " MiB";
}

}  // namespace

MeasurementShape pcie_shape(Profile profile) {
  switch (profile) {
    case Profile::quick:
      return {64 * kMiB, 4, 3};
    case Profile::standard:
      return {256 * kMiB, 4, 5};
    case Profile::burnin:
      return {256 * kMiB, 8, 10};
  }
  return {64 * kMiB, 4, 3};
}

MeasurementShape nvlink_shape(Profile profile) {
  return pcie_shape(profile);
}

MeasurementShape hbm_copy_shape(Profile profile) {
  switch (profile) {
    case Profile::quick:
      return {512 * kMiB, 8, 3};
    case Profile::standard:
      return {1024 * kMiB, 8, 5};
    case Profile::burnin:
      return {1024 * kMiB, 16, 10};
  }
  return {512 * kMiB, 8, 3};
}

std::string shape_text(const MeasurementShape& s) {
  return mib(s.bytes) + " x " + std::to_string(s.copies_per_sample) + " copies x " +
         std::to_string(s.samples) + " samples";
}

// --- pcie -----------------------------------------------------------------------------------

PcieWork plan_pcie(const WorkRequest& request) {
  PcieWork work;
  const int n = std::max(request.shape.gpus, 0);
  const double link = pcie_copy_gbps(request);
  // Every GPU at once: each at its link's rate, or its share of host memory.
  const double shared = std::min(link, kHostMemoryGBps / std::max(n, 1));
  const auto cost = [&](const MeasurementShape& s) {
    if (n == 0) return 0.0;
    // Alone: h2d and d2h one host and one device buffer each, bidirectional two of each.
    const double alone = 2 * measurement_s(s, 1, 1, link) + measurement_s(s, 2, 2, link);
    const double all = n >= 2 ? 2 * measurement_s(s, n, n, shared) : 0.0;
    return kCheckSetup_s + kHealthReadPerGpu_s * n + n * alone + all;
  };
  const MeasurementShape whole = pcie_shape(request.profile);
  const auto ladder = shape_ladder(whole, kCopyFloor);
  work.shape = request.seconds ? fitting_shape(ladder, *request.seconds, cost) : whole;
  work.plan.expected_s = cost(work.shape);
  work.plan.floor_s = cost(ladder.back());
  work.plan.reduced = !same(work.shape, whole);
  work.plan.coverage = std::to_string(n) + (n == 1 ? " GPU" : " GPUs") +
                       " alone (h2d, d2h, bidir)" + (n >= 2 ? " and all at once" : "") + "; " +
                       shape_text(work.shape);
  return work;
}

// --- nvlink ---------------------------------------------------------------------------------

NvlinkWork plan_nvlink(const WorkRequest& request) {
  NvlinkWork work;
  const int n = std::max(request.shape.gpus, 0);
  const MeasurementShape whole = nvlink_shape(request.profile);
  work.shape = whole;
  work.rotation = rotate_pairs(n, n - 1, request.rotation);
  if (n < 2) {
    work.plan.coverage = "a single GPU: no pair to measure";
    return work;
  }
  const double nvlink = threshold(request, "nvlink.expected_gbps", 0.0);
  const double rate = nvlink > 0 ? kNvlinkCopyEfficiency * nvlink : pcie_copy_gbps(request);
  const double fixed = kCheckSetup_s + kHealthReadPerGpu_s * n + kPeerQuery_s * n * (n - 1);
  // A unidirectional measurement: a source and a destination; bidirectional: two of each.
  const auto step_s = [&](const PairRotation& r, const MeasurementShape& s) {
    return fixed + static_cast<double>(r.ordered_pairs().size()) * measurement_s(s, 0, 2, rate) +
           static_cast<double>(r.unordered_pairs().size()) * measurement_s(s, 0, 4, rate);
  };
  // The costliest step of a rotation: the shifts per step are chosen by it, so that every run
  // under the same seconds cuts the pairs the same way and `steps` runs cover them all.
  const auto worst_s = [&](int shifts, const MeasurementShape& s) {
    const int steps = rotate_pairs(n, shifts, 0).steps;
    double worst = 0;
    for (int k = 0; k < steps; ++k) {
      worst = std::max(worst, step_s(rotate_pairs(n, shifts, static_cast<std::uint64_t>(k)), s));
    }
    return worst;
  };
  // The profile's whole work: every shift, or in quick as many as fit its target.
  int whole_shifts = n - 1;
  if (request.profile == Profile::quick) {
    while (whole_shifts > 1 && worst_s(whole_shifts, whole) > kQuickNvlinkTarget_s) --whole_shifts;
  }
  const auto ladder = shape_ladder(whole, kCopyFloor);
  int shifts = whole_shifts;
  if (request.seconds) {
    // Fewer samples first: every pair measured a little less beats fewer pairs.
    shifts = 1;
    work.shape = ladder.back();
    for (int k = whole_shifts; k >= 1; --k) {
      if (worst_s(k, ladder.back()) > *request.seconds && k > 1) continue;
      shifts = k;
      work.shape = fitting_shape(ladder, *request.seconds,
                                 [&](const MeasurementShape& s) { return worst_s(k, s); });
      break;
    }
  }
  work.rotation = rotate_pairs(n, shifts, request.rotation);
  work.plan.expected_s = step_s(work.rotation, work.shape);
  work.plan.floor_s = worst_s(1, ladder.back());
  work.plan.reduced = shifts < whole_shifts || !same(work.shape, whole);
  work.plan.rotation_step = work.rotation.step;
  work.plan.rotation_steps = work.rotation.steps;
  const auto ordered = work.rotation.ordered_pairs();
  work.plan.coverage =
      std::to_string(ordered.size()) + " of " + std::to_string(n * (n - 1)) + " ordered pairs";
  if (!work.rotation.complete()) {
    work.plan.coverage += " (step " + std::to_string(work.rotation.step + 1) + " of " +
                          std::to_string(work.rotation.steps) + ")";
    std::set<std::string> covered;
    for (const auto& [a, b] : ordered) covered.insert(pair_entity(a, b));
    work.plan.covered.assign(covered.begin(), covered.end());
  }
  work.plan.coverage += "; " + shape_text(work.shape);
  return work;
}

// --- hbm ------------------------------------------------------------------------------------

std::uint64_t hbm_model_memory_bytes(const Thresholds* thresholds) {
  if (thresholds == nullptr) return kFallbackGpuMemory;
  // The table's ids end in the memory size: "h100-sxm5-80gb", "h200-sxm-141gb".
  const std::string& id = thresholds->sku_id();
  if (id.size() < 3 || id.compare(id.size() - 2, 2, "gb") != 0) return kFallbackGpuMemory;
  std::size_t start = id.size() - 2;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(id[start - 1])) != 0) --start;
  const std::string digits = id.substr(start, id.size() - 2 - start);
  if (digits.empty() || digits.size() > 4) return kFallbackGpuMemory;
  return std::stoull(digits) * kGiB;
}

std::uint64_t hbm_pattern_bytes(const HbmWork& work, std::uint64_t memory_total_bytes) {
  const std::uint64_t usable =
      memory_total_bytes > kContextReserve ? memory_total_bytes - kContextReserve : 0;
  return pattern_test_bytes(usable, work.fraction, work.cap_bytes);
}

HbmWork plan_hbm(const WorkRequest& request, std::uint64_t gpu_memory_bytes) {
  const int n = std::max(request.shape.gpus, 0);
  const std::uint64_t memory = gpu_memory_bytes > 0 ? gpu_memory_bytes : kFallbackGpuMemory;
  const double peak = threshold(request, "hbm.peak_gbps", kFallbackHbmGBps);
  const double copy_gbps = kHbmCopyEfficiency * peak / 2;
  HbmWork whole;
  whole.copy = hbm_copy_shape(request.profile);
  if (request.profile == Profile::quick) {
    whole.patterns = {MemoryPattern::address, MemoryPattern::inverse_address,
                      MemoryPattern::random};
    whole.fraction = 0.5;  // a slice: at most half of a small GPU's memory
    whole.cap_bytes =
        static_cast<std::uint64_t>(threshold(request, "hbm.quick_test_mib", 2048)) * kMiB;
  } else {
    whole.patterns = {MemoryPattern::zeros,           MemoryPattern::ones,
                      MemoryPattern::checkerboard,    MemoryPattern::address,
                      MemoryPattern::inverse_address, MemoryPattern::random};
    whole.fraction = threshold(request, "hbm.test_fraction", 0.9);
  }
  whole.passes = request.profile == Profile::burnin ? kBurninPatternPasses : 1;

  const auto cost = [&](const HbmWork& w) {
    if (n == 0) return 0.0;
    const double copy = measurement_s(w.copy, 0, 2, copy_gbps);
    const double region = static_cast<double>(hbm_pattern_bytes(w, memory));
    int kernels = 0;  // the checkerboard runs in both phases
    for (MemoryPattern p : w.patterns) kernels += p == MemoryPattern::checkerboard ? 2 : 1;
    const double pass =
        kernels * (kPatternPassOverhead_s + bytes_s(2 * region, kPatternEfficiency * peak));
    const double pattern =
        region > 0 ? kPatternSetup_s + bytes_s(region, kDeviceMapGBps) + w.passes * pass : 0.0;
    return kCheckSetup_s + n * (copy + pattern);
  };

  if (request.profile == Profile::burnin && n > 0) {
    HbmWork one = whole;
    one.passes = 1;
    HbmWork two = whole;
    two.passes = 2;
    const double per_pass = cost(two) - cost(one);
    if (per_pass > 0) {
      const double fit = std::floor((kBurninStress_s - cost(one)) / per_pass) + 1;
      whole.passes = static_cast<int>(
          std::clamp(fit, static_cast<double>(kBurninPatternPasses), double{kMostPasses}));
    }
  }

  // From the whole work down to the floor, each step less than the one before.
  std::vector<HbmWork> ladder;
  auto shapes = shape_ladder(whole.copy, kHbmCopyFloor);
  std::stable_sort(shapes.begin(), shapes.end(), [&](const auto& a, const auto& b) {
    return measurement_s(a, 0, 2, copy_gbps) > measurement_s(b, 0, 2, copy_gbps);
  });
  for (const auto& shape : shapes) {
    HbmWork w = whole;
    w.copy = shape;
    ladder.push_back(w);
  }
  HbmWork w = ladder.back();
  for (int passes = w.passes - 1; passes >= 1; --passes) {
    w.passes = passes;
    ladder.push_back(w);
  }
  // Address-in-address and its inverse write every bit both ways and catch address faults.
  const std::vector<MemoryPattern> both = {MemoryPattern::address, MemoryPattern::inverse_address};
  for (const auto& set :
       {std::vector<MemoryPattern>{MemoryPattern::address, MemoryPattern::inverse_address,
                                   MemoryPattern::random},
        both}) {
    if (set.size() >= w.patterns.size()) continue;
    w.patterns = set;
    ladder.push_back(w);
  }
  const std::uint64_t slice = hbm_pattern_bytes(w, memory);
  const std::uint64_t floor_slice = std::min(slice, kPatternFloorBytes);
  std::uint64_t cap = kPatternFloorBytes;
  while (cap * 2 < slice) cap *= 2;
  for (; cap >= floor_slice && cap < slice && cap > 0; cap /= 2) {
    w.cap_bytes = cap;
    ladder.push_back(w);
  }
  w.cap_bytes = floor_slice;
  w.patterns = {MemoryPattern::address};
  ladder.push_back(w);

  std::size_t chosen = 0;
  if (request.seconds) {
    while (chosen + 1 < ladder.size() && cost(ladder[chosen]) > *request.seconds) ++chosen;
  }
  HbmWork work = ladder[chosen];
  work.plan.expected_s = cost(work);
  work.plan.floor_s = cost(ladder.back());
  work.plan.reduced = chosen > 0;
  std::string patterns;
  for (MemoryPattern p : work.patterns) patterns += (patterns.empty() ? "" : ", ") + to_string(p);
  work.plan.coverage = "copies " + shape_text(work.copy) + "; patterns " + patterns + " over " +
                       mib(hbm_pattern_bytes(work, memory)) + " per GPU";
  if (work.passes > 1) work.plan.coverage += " x " + std::to_string(work.passes) + " passes";
  if (request.profile == Profile::burnin) work.plan.coverage += ", more while time lasts";
  return work;
}

// --- run() ----------------------------------------------------------------------------------

WorkRequest bandwidth_request(const CheckContext& ctx, int gpus) {
  WorkRequest r = ctx.work_request();
  r.shape.gpus = gpus;
  return r;
}

}  // namespace preflight
