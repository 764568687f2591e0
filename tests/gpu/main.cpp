// Main of the GPU tests. They need a visible GPU and driver; where preflight sees none, the
// process exits 77, which ctest (SKIP_RETURN_CODE 77) reports as skipped rather than passed.
// Listing the tests (catch_discover_tests at build time) works everywhere.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <cstring>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>

#include "support/subprocess.hpp"

namespace {

bool only_listing(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--list", 6) == 0) return true;
  }
  return false;
}

// 0: GPUs visible; 77: none; 1: could not tell (the binary misbehaved).
int gpu_presence() {
  using namespace preflight::test;
  RunOptions options;
  options.timeout_s = 120;
  RunResult r;
  try {
    r = run_preflight({"run", "--checks", "inventory", "--expect-gpus", "0", "--json", "-"},
                      options);
  } catch (const std::exception& e) {
    std::cerr << "cannot run " << preflight_binary() << ": " << e.what() << '\n';
    return 1;
  }
  try {
    const nlohmann::json v = nlohmann::json::parse(r.out);
    if (v.at("system").at("gpus").empty()) {
      std::cout << "no GPU visible: skipping GPU tests\n";
      return 77;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "GPU detection failed (" << r.describe() << "): " << e.what() << "\nstdout:\n"
              << r.out << "\nstderr:\n"
              << r.err << '\n';
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!only_listing(argc, argv)) {
    const int presence = gpu_presence();
    if (presence != 0) return presence;
  }
  return Catch::Session().run(argc, argv);
}
