// preflight-bench-bandwidth: how faithful the bandwidth checks' measurement is. On one GPU, for
// host-to-device, device-to-host and device-to-device copies (and peer copies with --peer), it
// runs the checks' method (BandwidthEngine::measure: latch, warm-up, NUMA-placed host buffers,
// verification) and the plainest method (BandwidthEngine::reference: one stream, an event
// before and after the copies) alternately, measured, reference, measured, reference, so that
// drift over the runs cancels out, and compares the medians of all their samples. The target
// (the fidelity the checks promise): every measured median within 3% of the reference median,
// and every destination verified clean. Exit codes: 0 target met, 1 otherwise (or the GPU
// failed), 2 bad usage.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "preflight/engine/bandwidth_engine.hpp"
#include "preflight/engine/engines.hpp"

namespace {

using namespace preflight;

constexpr double kTargetPercent = 3.0;
constexpr int kPasses = 2;  // (measured, reference) pairs
// Allocation, fills, warm-up, verification and the copies themselves.
constexpr auto kMeasureBudget = std::chrono::seconds(120);

struct Options {
  int gpu = 0;
  int mib = 256;
  int copies = 4;
  int samples = 5;
  int peer = -1;
};

struct Direction {
  const char* name;
  CopyDirection direction;
};

// The mean of the two middle values for an even count, as the checks' statistics do.
double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "preflight-bench-bandwidth: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "preflight-bench-bandwidth: the bandwidth checks' copy measurement against the plainest "
      "one (cudaMemcpyAsync between two events) on one GPU, for host-to-device, device-to-host, "
      "device-to-device and, with --peer, peer copies; alternately measured, reference, "
      "measured, reference.\n"
      "Exit codes: 0 every measured median within 3% of the reference median and every copy "
      "verified clean, 1 otherwise, 2 bad usage.",
      "preflight-bench-bandwidth"};
  app.add_option("--gpu", options.gpu, "CUDA device ordinal (default 0)")
      ->check(CLI::Range(0, 1023));
  app.add_option("--bytes", options.mib, "MiB per copy (default 256)")->check(CLI::Range(1, 65536));
  app.add_option("--copies", options.copies, "copies per sample (default 4)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--samples", options.samples, "samples per run, 2 runs per method (default 5)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--peer", options.peer, "also peer copies to this CUDA device ordinal")
      ->check(CLI::Range(0, 1023));
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "preflight-bench-bandwidth: %s\n", e.what());
    return 2;
  }
  if (options.peer == options.gpu) {
    std::fprintf(stderr, "preflight-bench-bandwidth: --peer must name another GPU than --gpu\n");
    return 2;
  }

  const auto owned = make_system_bandwidth_engine();
  BandwidthEngine* engine = owned.get();
  if (engine == nullptr) return fail("this binary has no copy engine (built without CUDA)");

  std::vector<Direction> directions = {{"host_to_device", CopyDirection::host_to_device},
                                       {"device_to_host", CopyDirection::device_to_host},
                                       {"device_to_device", CopyDirection::device_to_device}};
  if (options.peer >= 0) directions.push_back({"peer", CopyDirection::peer});
  const std::size_t bytes = static_cast<std::size_t>(options.mib) << 20;
  const std::string gpu = "gpu " + std::to_string(options.gpu) + ": ";

  nlohmann::json results = nlohmann::json::array();
  bool pass = true;
  bool header = false;
  for (const Direction& d : directions) {
    CopyStream stream;
    stream.direction = d.direction;
    stream.cuda_ordinal = options.gpu;
    stream.peer_ordinal = d.direction == CopyDirection::peer ? options.peer : -1;
    const std::string what = gpu + d.name + ": ";
    std::vector<double> measured;
    std::vector<double> reference;
    bool verified = true;
    std::uint64_t bad_words = 0;
    int numa_node = -1;
    for (int run = 0; run < kPasses; ++run) {
      CopyMeasurement m;
      m.streams = {stream};
      m.bytes = bytes;
      m.copies_per_sample = options.copies;
      m.samples = options.samples;
      m.deadline = SteadyClock::now() + kMeasureBudget;
      const MeasurementResult r = engine->measure(m);
      if (!r.error.empty()) return fail(what + "measure: " + r.error);
      if (r.timed_out) return fail(what + "measure: timed out");
      const StreamResult& s = r.streams.front();
      measured.insert(measured.end(), s.gbps.begin(), s.gbps.end());
      verified = verified && s.verified;
      bad_words += s.bad_words;
      numa_node = s.numa_node;

      const BandwidthEngine::Reference ref =
          engine->reference(stream, bytes, options.copies, options.samples);
      if (!ref.error.empty()) return fail(what + "reference: " + ref.error);
      reference.insert(reference.end(), ref.gbps.begin(), ref.gbps.end());
    }

    const double measured_gbps = median(measured);
    const double reference_gbps = median(reference);
    const double difference =
        reference_gbps > 0 ? 100.0 * (measured_gbps - reference_gbps) / reference_gbps : NAN;
    const bool close = std::fabs(difference) <= kTargetPercent;  // false for NaN
    const bool clean = verified && bad_words == 0;
    pass = pass && close && clean;
    if (!header) {
      std::printf(
          "preflight-bench-bandwidth: CUDA device %d, %d MiB per copy, %d copies per sample, "
          "%d x %d samples per method\n",
          options.gpu, options.mib, options.copies, kPasses, options.samples);
      std::printf("%-18s %14s %15s %9s  %s\n", "direction", "measured GB/s", "reference GB/s",
                  "diff", "verification");
      header = true;
    }
    std::string status = !verified ? "NOT VERIFIED"
                         : clean   ? "clean"
                                   : "NOT CLEAN: " + std::to_string(bad_words) + " bad words";
    if (d.direction == CopyDirection::host_to_device ||
        d.direction == CopyDirection::device_to_host) {
      status += numa_node >= 0 ? " (host buffer on NUMA node " + std::to_string(numa_node) + ")"
                               : " (host buffer's NUMA node unknown)";
    }
    std::printf("%-18s %14.2f %15.2f %+8.2f%%  %s%s\n", d.name, measured_gbps, reference_gbps,
                difference, status.c_str(), close ? "" : "  [outside 3%]");
    results.push_back({{"direction", d.name},
                       {"measured_gbps", measured_gbps},
                       {"reference_gbps", reference_gbps},
                       {"difference_percent", std::isfinite(difference) ? difference : 0.0},
                       {"within_target", close},
                       {"verified", verified},
                       {"bad_words", bad_words},
                       {"numa_node", numa_node}});
  }

  const nlohmann::json line = {
      {"bench", "bandwidth"},
      {"gpu", options.gpu},
      {"peer", options.peer},
      {"bytes", bytes},
      {"copies", options.copies},
      {"samples", options.samples},
      {"target_percent", kTargetPercent},
      {"directions", results},
      {"pass", pass},
  };
  std::printf("%s\n", line.dump().c_str());
  return pass ? 0 : 1;
}
