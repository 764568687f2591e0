// Compiled with the model layer's view only (tests/layout/CMakeLists.txt): the run layer sits
// above model, so this include must not compile.
#include "run/runner.hpp"

int layout_probe_wrong() {
  return 0;
}
