#pragma once
// The figure declarations of the checks built into the binary, as the commands hand them to the
// reporters (CheckRegistry::figure_catalogue()).
#include "preflight/check.hpp"

namespace preflight::test {

inline FigureCatalogue builtin_figures() {
  CheckRegistry registry;
  register_builtin_checks(registry);
  return registry.figure_catalogue();
}

}  // namespace preflight::test
