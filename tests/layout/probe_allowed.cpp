// Compiled with the model layer's view only (tests/layout/CMakeLists.txt): a header of its own
// layer is found.
#include "model/stats.hpp"

int layout_probe_allowed() {
  return 0;
}
