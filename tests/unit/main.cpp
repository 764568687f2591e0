// The runner of the unit, integration and mpi test programs. Run directly (not through ctest,
// whose tests/test_environment.cmake.in does the same), a test program still reads the quiet kernel
// log of the tests instead of the machine's own, and no sysfs: the events check must not judge
// this machine's kernel events or EDAC counts in a test.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char* argv[]) {
  setenv("PREFLIGHT_KMSG_PATH", PREFLIGHT_SOURCE_DIR "/tests/support/quiet-kernel-log.txt", 0);
  setenv("PREFLIGHT_SYSFS_ROOT", PREFLIGHT_SOURCE_DIR "/tests/support/no-sysfs", 0);
  return Catch::Session().run(argc, argv);
}
