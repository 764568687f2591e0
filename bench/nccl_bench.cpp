// preflight-bench-nccl: the NCCL collective engine on the GPUs named, as one process that drives
// them all (one rank per GPU, one communicator), outside the check. It exists because the nccl
// check skips a one-GPU node, where the engine can still run a one-rank communicator: the GPU
// tests use it to exercise the engine there, and on bigger nodes it prints the bus bandwidth per
// size for comparison with nccl-tests. It prints one JSON document on stdout:
//   {"bench": "nccl", "gpus": [...], "unavailable": "", "runs": [{"op", "initialized", "error",
//    "timed_out", "verified", "corrupt_elements", "corrupt_from", "sizes": [{"bytes",
//    "seconds", "algbw_gbps", "busbw_gbps"}]}], "clean": true}
// Exit codes: 0 every run initialized, finished and verified without a wrong element; 1
// otherwise (NCCL unavailable, an error, a timeout, corruption: injected or not); 2 bad usage.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "preflight/engine/collective_engine.hpp"

namespace {

using namespace preflight;

struct Options {
  std::vector<int> gpus = {0};
  std::string op = "both";
  std::vector<std::string> sizes = {"1M", "256M"};
  int iterations = 20;
  int timeout_s = 120;
  std::string inject = "none";
};

// "1M" -> 1048576; K, M and G are binary. 0 for anything else.
std::size_t parse_size(const std::string& text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || value == 0) return 0;
  const std::string unit(end);
  if (unit.empty()) return value;
  if (unit == "K") return value << 10;
  if (unit == "M") return value << 20;
  if (unit == "G") return value << 30;
  return 0;
}

nlohmann::json describe(CollectiveOp op, const CollectiveResult& r, std::uint64_t& corrupt) {
  corrupt = 0;
  for (const auto& row : r.corrupt_from) {
    for (std::uint64_t n : row) corrupt += n;
  }
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& s : r.sizes) {
    sizes.push_back({{"bytes", s.bytes},
                     {"seconds", s.seconds},
                     {"algbw_gbps", s.algbw_gbps},
                     {"busbw_gbps", s.busbw_gbps}});
  }
  return {{"op", std::string(to_string(op))},
          {"initialized", r.initialized},
          {"error", r.error},
          {"timed_out", r.timed_out},
          {"verified", r.verified},
          {"corrupt_elements", corrupt},
          {"corrupt_from", r.corrupt_from},
          {"sizes", sizes}};
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "preflight-bench-nccl: NCCL all_gather and all_reduce through preflight's collective "
      "engine on the GPUs named, one process, one rank per GPU; every element verified.\n"
      "Exit codes: 0 every run verified clean, 1 otherwise, 2 bad usage.",
      "preflight-bench-nccl"};
  app.add_option("--gpus", options.gpus, "CUDA device ordinals, comma-separated (default 0)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1023));
  app.add_option("--op", options.op, "all_gather, all_reduce or both (default both)")
      ->check(CLI::IsMember({"all_gather", "all_reduce", "both"}));
  app.add_option("--sizes", options.sizes,
                 "bytes per rank (all_gather) or buffer bytes (all_reduce), with K, M or G; "
                 "comma-separated (default 1M,256M)")
      ->delimiter(',');
  app.add_option("--iterations", options.iterations, "timed iterations per size (default 20)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--timeout", options.timeout_s, "seconds each collective may take (default 120)")
      ->check(CLI::Range(1, 3600));
  app.add_option("--inject", options.inject,
                 "drill: none, corrupt (rank 0's send buffer), slow:FACTOR, hang (default none)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "preflight-bench-nccl: %s\n", e.what());
    return 2;
  }
  std::vector<std::size_t> sizes;
  for (const std::string& text : options.sizes) {
    const std::size_t bytes = parse_size(text);
    if (bytes == 0) {
      std::fprintf(stderr, "preflight-bench-nccl: --sizes: '%s' is not a size\n", text.c_str());
      return 2;
    }
    sizes.push_back(bytes);
  }
  CollectiveJob base;
  if (options.inject == "corrupt") {
    base.corrupt_send = true;
  } else if (options.inject == "hang") {
    base.hang = true;
  } else if (options.inject.rfind("slow:", 0) == 0) {
    base.slow_factor = std::strtod(options.inject.c_str() + 5, nullptr);
    if (!(base.slow_factor > 0 && base.slow_factor < 1)) {
      std::fprintf(stderr, "preflight-bench-nccl: --inject slow:FACTOR needs 0 < FACTOR < 1\n");
      return 2;
    }
  } else if (options.inject != "none") {
    std::fprintf(stderr,
                 "preflight-bench-nccl: --inject: '%s' is not none, corrupt, slow:F "
                 "or hang\n",
                 options.inject.c_str());
    return 2;
  }

  const auto engine = make_nccl_collective_engine();
  nlohmann::json out = {{"bench", "nccl"}, {"gpus", options.gpus}, {"inject", options.inject}};
  const std::string why = engine->unavailable_reason();
  out["unavailable"] = why;
  nlohmann::json runs = nlohmann::json::array();
  bool clean = why.empty();
  std::vector<CollectiveOp> ops;
  if (options.op != "all_reduce") ops.push_back(CollectiveOp::all_gather);
  if (options.op != "all_gather") ops.push_back(CollectiveOp::all_reduce);
  for (std::size_t i = 0; i < ops.size() && why.empty(); ++i) {
    std::string error;
    CollectiveJob job = base;
    job.unique_id = engine->unique_id(error);
    if (!error.empty()) {
      runs.push_back({{"op", std::string(to_string(ops[i]))}, {"error", error}});
      clean = false;
      continue;
    }
    job.nranks = static_cast<int>(options.gpus.size());
    job.first_rank = 0;
    job.cuda_ordinals = options.gpus;
    job.op = ops[i];
    job.sizes = sizes;
    job.iterations = options.iterations;
    job.seed = 0xBE4C0000u + i;
    job.deadline = SteadyClock::now() + std::chrono::seconds(options.timeout_s);
    const CollectiveResult r = engine->run(job);
    std::uint64_t corrupt = 0;
    runs.push_back(describe(ops[i], r, corrupt));
    clean = clean && r.initialized && r.error.empty() && !r.timed_out && r.verified && corrupt == 0;
    for (const auto& s : r.sizes) {
      std::fprintf(stderr, "%-10s %12zu bytes  %10.3f ms  algbw %8.2f GB/s  busbw %8.2f GB/s\n",
                   std::string(to_string(ops[i])).c_str(), s.bytes, s.seconds * 1e3, s.algbw_gbps,
                   s.busbw_gbps);
    }
  }
  out["runs"] = runs;
  out["clean"] = clean;
  std::printf("%s\n", out.dump().c_str());
  return clean ? 0 : 1;
}
